-- A task's timeout (how long one attempt may run) is more than 0 and at most 30 days; any
-- other is refused with QC106, the message naming the value and the kind, and nothing is
-- written. The limit is stored on the task.
begin;
select plan(6);

create temp table before_count as select count(*) as n from conductor.tasks;

select throws_ok($$select conductor.enqueue('to.kind', timeout => '0 seconds')$$, 'QC106',
  'invalid timeout 00:00:00 for kind ''to.kind'': it must be more than 0 and at most 30 days',
  'A timeout of 0 is refused with QC106, naming the value and the kind.');
select throws_ok($$select conductor.enqueue('to.kind', timeout => '-2 seconds')$$, 'QC106',
  'invalid timeout -00:00:02 for kind ''to.kind'': it must be more than 0 and at most 30 days',
  'A negative timeout is refused.');
select throws_ok($$select conductor.enqueue('to.kind', timeout => '31 days')$$, 'QC106',
  'invalid timeout 31 days for kind ''to.kind'': it must be more than 0 and at most 30 days',
  'A timeout over 30 days is refused.');
select throws_ok($$select conductor.enqueue('to.kind', timeout => '1000000 years')$$, 'QC106', NULL,
  'A timeout of a million years is refused.');
select is((select count(*) from conductor.tasks) - (select n from before_count), 0::bigint, 'Nothing was written.');

select conductor.enqueue('to.kind', timeout => '1 microsecond') as shortest \gset
select conductor.enqueue('to.kind', timeout => '30 days') as longest \gset
select is(array[(select timeout from conductor.tasks where id = :shortest),
                (select timeout from conductor.tasks where id = :longest)],
  array[interval '1 microsecond', interval '30 days'],
  'The bounds are accepted (1 microsecond, 30 days) and the timeout is stored on the task.');

select * from finish();
rollback;
