-- A second spawn with the same step returns the same child and enqueues nothing, also on a replay.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('root', '{}', 'spawn-once') as root \gset
select conductor_tests.claim_one('spawn-once', 'w1', '1 second') as a \gset
select conductor.spawn(:a, 'child', 'kid', '{"n": 1}', 'spawn-once-kids') as first \gset

select is(conductor.spawn(:a, 'child', 'kid', '{"n": 1}', 'spawn-once-kids'), :first::bigint,
  'Spawning the same step again returns the first child''s id.');
select is((select count(*) from conductor.tasks where parent_id = :root), 1::bigint,
  'No second child is enqueued.');

-- the worker dies; the run is replayed by another worker
set local conductor.fake_now = '2030-01-01 00:00:10+00';
select conductor.reap() as r \gset
select conductor_tests.claim_one('spawn-once', 'w2') as a2 \gset
select is(conductor.spawn(:a2, 'child', 'kid', '{"n": 1}', 'spawn-once-kids'), :first::bigint,
  'A replay that spawns the same step gets the same child.');
select isnt(conductor.spawn(:a2, 'child#2', 'kid', '{"n": 2}', 'spawn-once-kids'), :first::bigint,
  'Another step name spawns another child.');
select is((select count(*) from conductor.tasks where parent_id = :root), 2::bigint,
  'The task has two children in all.');

select * from finish();
rollback;
