-- spawn enqueues a child of the held task (parent_id, root_id of the run) and checkpoints its id.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('root', '{}', 'spawn-create') as root \gset
select conductor_tests.claim_one('spawn-create') as a \gset
select conductor.spawn(:a, 'ship', 'ship', '{"order": 7}', 'spawn-create-kids', priority => 3) as child \gset

select is(
  (select jsonb_build_object('kind', kind, 'payload', payload, 'queue', queue, 'priority', priority,
     'status', status, 'parent_id', parent_id, 'root_id', root_id) from conductor.tasks where id = :child),
  jsonb_build_object('kind', 'ship', 'payload', '{"order": 7}'::jsonb, 'queue', 'spawn-create-kids', 'priority', 3,
     'status', 'queued', 'parent_id', :root, 'root_id', :root),
  'The child is queued with the given options, the spawning task as parent_id and its run as root_id.');
select is((select (result, attempt_id)::text from conductor.steps where task_id = :root and name = 'ship'),
  (jsonb_build_object('task_id', :child), :a)::text,
  'The spawn is checkpointed under its step as {"task_id": child} with the spawning attempt.');

-- the child spawns a grandchild: same run
select conductor_tests.claim_one('spawn-create-kids') as ca \gset
select conductor.spawn(:ca, 'pack', 'pack', queue => 'spawn-create-kids') as grandchild \gset
select is((select (parent_id, root_id)::text from conductor.tasks where id = :grandchild),
  format('(%s,%s)', :child, :root),
  'A grandchild has the child as parent_id and the root as root_id.');
select is((select root_id from conductor.tasks where id = :root), :root::bigint, 'The root is still its own root.');
select is((select count(*) from conductor.tasks where root_id = :root), 3::bigint, 'The run holds three tasks.');

select * from finish();
rollback;
