-- children(task_id) lists a task's children, oldest first, with their status, result, error and finish time.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('root', '{}', 'children-list') as root \gset
select conductor_tests.claim_one('children-list') as a \gset
select conductor.spawn(:a, 'c1', 'alpha', '{}', 'children-list-kids') as c1 \gset
select conductor.spawn(:a, 'c2', 'beta', '{}', 'children-list-kids') as c2 \gset
select conductor.spawn(:a, 'c3', 'gamma', '{}', 'children-list-kids') as c3 \gset
select conductor.spawn(:a, 'c4', 'delta', '{}', 'children-list-kids') as c4 \gset
set local conductor.fake_now = '2030-01-01 00:01:00+00';
select conductor.complete(conductor_tests.claim_one('children-list-kids'), '{"ok": 1}') as x1 \gset
select conductor.fail(conductor_tests.claim_one('children-list-kids'), 'broke') as x2 \gset
select conductor_tests.claim_one('children-list-kids') as running \gset
-- a grandchild is not a child of the root
select conductor.spawn(:running, 'g', 'grand', '{}', 'children-list-kids') as g \gset

select results_eq(format('select task_id, kind, status::text, result, error, finished_at from conductor.children(%s)', :root),
  format($$values (%s::bigint, 'alpha'::text, 'succeeded'::text, '{"ok": 1}'::jsonb, null::text, '2030-01-01 00:01:00+00'::timestamptz),
                  (%s, 'beta', 'failed', null, 'broke', '2030-01-01 00:01:00+00'),
                  (%s, 'gamma', 'running', null, null, null),
                  (%s, 'delta', 'queued', null, null, null)$$, :c1, :c2, :c3, :c4),
  'children() lists every child oldest first, with status, result, error and finish time so far.');
select results_eq(format('select task_id from conductor.children(%s)', :c3), format('values (%s::bigint)', :g),
  'A child''s own children are listed under it, not under the root.');
select is_empty(format('select * from conductor.children(%s)', :c1), 'A task without children has none.');

select * from finish();
rollback;
