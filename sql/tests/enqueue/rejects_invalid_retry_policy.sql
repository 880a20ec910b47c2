-- enqueue raises QC106 for a retry policy that cannot work.
begin;
select plan(9);

create temp table before_count as select count(*) as n from conductor.tasks;

select throws_ok($$select conductor.enqueue('k', max_attempts => 0)$$, 'QC106', NULL,
  'max_attempts 0 is refused with QC106.');
select throws_like($$select conductor.enqueue('k', max_attempts => 0)$$,
  'invalid retry policy for kind ''k'': max_attempts 0 (>= 1)%',
  'The message names the kind and the bad max_attempts.');
select throws_ok($$select conductor.enqueue('k', max_recoveries => -1)$$, 'QC106', NULL,
  'A negative max_recoveries is refused with QC106.');
select throws_ok($$select conductor.enqueue('k', backoff_base => '-1 second')$$, 'QC106', NULL,
  'A negative backoff_base is refused with QC106.');
select throws_ok($$select conductor.enqueue('k', backoff_max => '-1 second')$$, 'QC106', NULL,
  'A negative backoff_max is refused with QC106.');
select throws_ok($$select conductor.enqueue('k', backoff_factor => 0.5)$$, 'QC106', NULL,
  'A backoff_factor below 1 is refused with QC106.');
select lives_ok($$select conductor.enqueue('k', max_recoveries => 0)$$,
  'max_recoveries 0 (dead at the first lost worker) is accepted.');
select lives_ok($$select conductor.enqueue('k', backoff_base => '0', backoff_factor => 1, backoff_max => '0')$$,
  'A zero backoff with factor 1 is accepted.');

select is((select count(*) from conductor.tasks) - (select n from before_count), 2::bigint,
  'Only the two valid policies were written.');

select * from finish();
rollback;
