-- The task a fire enqueues is the schedule's: kind, payload, queue, priority, max_attempts,
-- dedupe_key and concurrency_key, due at once.
begin;
select plan(3);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.create_schedule('t', '0 * * * *', 'report.build', '{"scope": "all"}', 'reports',
  priority => 7, max_attempts => 4, dedupe_key => 'report-hourly', concurrency_key => 'reports') as c \gset
select conductor.create_schedule('plain', '0 * * * *', 'plain.kind') as c \gset

set local conductor.fake_now = '2030-01-01 01:00:30+00';
create temp table fired as select * from conductor.tick();

select is(
  (select jsonb_build_object('kind', kind, 'payload', payload, 'queue', queue, 'priority', priority,
     'max_attempts', max_attempts, 'dedupe_key', dedupe_key, 'concurrency_key', concurrency_key,
     'status', status, 'run_at', run_at)
     from conductor.tasks where id = (select task_id from fired where schedule_name = 't')),
  jsonb_build_object('kind', 'report.build', 'payload', '{"scope": "all"}'::jsonb, 'queue', 'reports',
    'priority', 7, 'max_attempts', 4, 'dedupe_key', 'report-hourly', 'concurrency_key', 'reports',
    'status', 'queued', 'run_at', '2030-01-01 01:00:30+00'::timestamptz),
  'The task carries every option of the schedule and is due at the time of the tick.');
select is(
  (select jsonb_build_object('kind', kind, 'payload', payload, 'queue', queue, 'priority', priority,
     'max_attempts', max_attempts)
     from conductor.tasks where id = (select task_id from fired where schedule_name = 'plain')),
  '{"kind": "plain.kind", "payload": {}, "queue": "default", "priority": 0, "max_attempts": 1}'::jsonb,
  'A schedule without options enqueues a task with the enqueue defaults.');
select results_eq($$select schedule_name from fired$$, $$values ('plain'::text), ('t')$$,
  'One tick fires every due schedule, in name order.');

select * from finish();
rollback;
