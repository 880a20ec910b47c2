-- The rules apply to a task as it would be stored, after the kind's defaults are resolved: a
-- kind row that breaks them (written by hand, or by v0.1.0, which checked less) is refused
-- with the rule's SQLSTATE, the message naming the stored value; a task that gives its own
-- valid value does not read the bad one.
begin;
select plan(4);

-- as the owner would, past configure_kind's checks
insert into conductor.kinds (kind, queue, timeout, updated_at)
values ('rv.bad-timeout', null, '0 seconds', now()),
       ('rv.bad-queue', 'bad queue', null, now());

select throws_ok($$select conductor.enqueue('rv.bad-timeout')$$, 'QC106',
  'invalid timeout 00:00:00 for kind ''rv.bad-timeout'': it must be more than 0 and at most 30 days',
  'A kind''s stored timeout of 0 is refused when a task would take it.');
select lives_ok($$select conductor.enqueue('rv.bad-timeout', timeout => '1 minute')$$,
  'A task giving its own timeout does not take the kind''s.');
select throws_ok($$select conductor.enqueue('rv.bad-queue')$$, 'QC104',
  'invalid queue ''bad queue'': a queue name is 1-100 letters, digits and _ . : / -, starting with a letter or digit',
  'A kind''s stored queue that breaks the queue rule is refused with QC104.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "rv.ok"}, {"kind": "rv.bad-timeout"}]')$$, 'QC106',
  'invalid timeout 00:00:00 for kind ''rv.bad-timeout'': it must be more than 0 and at most 30 days',
  'enqueue_many resolves and checks each task the same way.');

select * from finish();
rollback;
