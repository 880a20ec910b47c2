-- A parent waiting for children_all is woken by the end of its last unfinished child, not
-- before, in the child's transaction, with the children summary checkpointed under its wait step.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('root', '{}', 'wake-all') as root \gset
select conductor_tests.claim_one('wake-all') as a \gset
select conductor.spawn(:a, 'c1', 'kid', '{}', 'wake-all-kids') as c1 \gset
select conductor.spawn(:a, 'c2', 'kid', '{}', 'wake-all-kids') as c2 \gset
select conductor.spawn(:a, 'c3', 'kid', '{}', 'wake-all-kids') as c3 \gset
select state from conductor.suspend(:a, 'join', 'children_all') \gset

set local conductor.fake_now = '2030-01-01 00:01:00+00';
select conductor.complete(conductor_tests.claim_one('wake-all-kids'), '"r1"') as x1 \gset
select conductor.fail(conductor_tests.claim_one('wake-all-kids'), 'e2') as x2 \gset
select is((select status::text from conductor.tasks where id = :root), 'waiting',
  'With one child unfinished, the parent still waits.');

set local conductor.fake_now = '2030-01-01 00:02:00+00';
select conductor.complete(conductor_tests.claim_one('wake-all-kids'), '"r3"') as x3 \gset
select is((select (status, run_at, wait_for, wait_until, wait_step)::text from conductor.tasks where id = :root),
  ('queued', '2030-01-01 00:02:00+00'::timestamptz, null::text, null::timestamptz, null::text)::text,
  'The last child''s end queues the parent, due now, its wait cleared.');
select is((select result from conductor.steps where task_id = :root and name = 'join'),
  format('[{"task_id": %s, "kind": "kid", "status": "succeeded", "result": "r1", "error": null},
           {"task_id": %s, "kind": "kid", "status": "failed", "result": null, "error": "e2"},
           {"task_id": %s, "kind": "kid", "status": "succeeded", "result": "r3", "error": null}]', :c1, :c2, :c3)::jsonb,
  'The children summary is checkpointed under the parent''s wait step.');
select conductor_tests.claim_one('wake-all') as a2 \gset
select results_eq(format($$select state, jsonb_array_length(result) from conductor.suspend(%s, 'join', 'children_all')$$, :a2),
  $$values ('ready'::text, 3)$$,
  'The replayed parent''s wait is ready with the checkpointed summary.');
select is((select count(*) from conductor.steps where task_id = :root and name = 'join'), 1::bigint,
  'The wait step is checkpointed once.');

select * from finish();
rollback;
