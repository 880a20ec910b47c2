-- A parent waiting for children_any is woken by the end of its first child, with the summary
-- of all children so far checkpointed; later ends change nothing.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('root', '{}', 'wake-any') as root \gset
select conductor_tests.claim_one('wake-any') as a \gset
select conductor.spawn(:a, 'c1', 'kid', '{}', 'wake-any-kids') as c1 \gset
select conductor.spawn(:a, 'c2', 'kid', '{}', 'wake-any-kids') as c2 \gset
select state from conductor.suspend(:a, 'race', 'children_any') \gset

select conductor.complete(conductor_tests.claim_one('wake-any-kids'), '"fast"') as x1 \gset
select is((select status::text from conductor.tasks where id = :root), 'queued', 'The first child''s end queues the parent.');
select is((select result from conductor.steps where task_id = :root and name = 'race'),
  format('[{"task_id": %s, "kind": "kid", "status": "succeeded", "result": "fast", "error": null},
           {"task_id": %s, "kind": "kid", "status": "queued", "result": null, "error": null}]', :c1, :c2)::jsonb,
  'The summary of both children at that moment is checkpointed.');
select conductor.complete(conductor_tests.claim_one('wake-any-kids'), '"slow"') as x2 \gset
select is((select result->1->>'status' from conductor.steps where task_id = :root and name = 'race'), 'queued',
  'The second child''s end leaves the parent and its checkpoint as they were.');

select * from finish();
rollback;
