-- cancel of a run's root that waits for its children cancels the whole tree: the root (its wait
-- cleared, not woken), its children and grandchildren, queued, running or waiting.
begin;
select plan(4);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('root', '{}', 'cancel-tree') as root \gset
select conductor_tests.claim_one('cancel-tree') as a \gset
select conductor.spawn(:a, 'c1', 'kid', '{}', 'cancel-tree-kids') as c1 \gset
select conductor.spawn(:a, 'c2', 'kid', '{}', 'cancel-tree-kids') as c2 \gset
select conductor.spawn(:a, 'c3', 'kid', '{}', 'cancel-tree-kids') as c3 \gset
select state from conductor.suspend(:a, 'join', 'children_all') \gset
-- c1 runs and waits for a grandchild; c2 runs; c3 stays queued
select conductor_tests.claim_one('cancel-tree-kids') as a1 \gset
select conductor.spawn(:a1, 'g', 'grand', '{}', 'cancel-tree-grand') as g \gset
select state from conductor.suspend(:a1, 'join', 'children_all') \gset
select conductor_tests.claim_one('cancel-tree-kids') as a2 \gset

set local conductor.fake_now = '2030-01-01 00:01:00+00';
select is(conductor.cancel(:root), 5, 'Cancelling the root cancels five tasks.');
select results_eq(format($$select id, status::text, wait_for, wait_until, finished_at from conductor.tasks
                            where root_id = %s order by id$$, :root),
  format($$values (%s::bigint, 'cancelled'::text, null::text, null::timestamptz, '2030-01-01 00:01:00+00'::timestamptz),
                  (%s, 'cancelled', null, null, '2030-01-01 00:01:00+00'),
                  (%s, 'cancelled', null, null, '2030-01-01 00:01:00+00'),
                  (%s, 'cancelled', null, null, '2030-01-01 00:01:00+00'),
                  (%s, 'cancelled', null, null, '2030-01-01 00:01:00+00')$$, :root, :c1, :c2, :c3, :g),
  'The root, the children and the grandchild are cancelled, their waits cleared.');
select is_empty(format($$select * from conductor.steps where task_id in (%s, %s) and name = 'join'$$, :root, :c1),
  'The waiting tasks are not woken: no wait outcome is checkpointed.');
select is((select outcome from conductor.attempts where id = :a2), 'cancelled',
  'The running child''s attempt is closed as cancelled.');

select * from finish();
rollback;
