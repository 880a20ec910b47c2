-- apply_retention never deletes a run with an unfinished task, however old the rest: not
-- a root finished long ago whose child still runs or is queued, not a waiting root whose
-- children finished long ago, not a run retried; none of their tasks goes either.
begin;
select plan(7);
\ir ../helpers.psql

create role t_worker;
grant conductor_worker to t_worker;

set local conductor.fake_now = '2030-01-01 00:00:00+00';
-- G: the root succeeded on day 0, its child is still running
select conductor.enqueue('root', '{}', 'ar-unf') as g_root \gset
select conductor_tests.claim_one('ar-unf') as g_att \gset
select conductor.enqueue('child', '{}', 'ar-unf-child', parent_id => :g_root) as g_child \gset
select conductor.complete(:g_att) as done \gset
select conductor_tests.claim_one('ar-unf-child', lease => interval '1 hour') as g_child_att \gset
-- H: the root succeeded on day 0, its child waits in the queue for next year
select conductor.enqueue('root', '{}', 'ar-unf') as h_root \gset
select conductor_tests.claim_one('ar-unf') as h_att \gset
select conductor.enqueue('child', '{}', 'ar-unf-later', parent_id => :h_root,
                         run_at => '2031-01-01 00:00:00+00') as h_child \gset
select conductor.complete(:h_att) as done \gset
-- I: the root waits for an event; its child finished on day 0
select conductor.enqueue('root', '{}', 'ar-unf') as i_root \gset
select conductor_tests.claim_one('ar-unf') as i_att \gset
select conductor.enqueue('child', '{}', 'ar-unf', parent_id => :i_root) as i_child \gset
select state from conductor.suspend(:i_att, 'approval', 'event', 'ar-unf-never') \gset
select conductor.complete(conductor_tests.claim_one('ar-unf')) as done \gset
-- J: a failed root, retried (queued again)
select conductor.enqueue('root', '{}', 'ar-unf-retried') as j_root \gset
select conductor.fail(conductor_tests.claim_one('ar-unf-retried'), 'boom') as failed \gset
select conductor.retry(:j_root) as r \gset

select status::text as g_child_status from conductor.tasks where id = :g_child \gset
select is(:'g_child_status'::text, 'running', 'G''s child runs.');

set local conductor.fake_now = '2031-06-01 00:00:00+00';
set local role t_worker;
select results_eq($$select what, deleted from conductor.apply_retention()$$,
  $$values ('succeeded_runs', 0::bigint), ('failed_runs', 0::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'A year and a half later nothing is deleted.');
reset role;
select is((select count(*)::int from conductor.tasks where id in (:g_root, :g_child)), 2,
  'G stays whole: an old succeeded root with a running child.');
select is((select count(*)::int from conductor.tasks where id in (:h_root, :h_child)), 2,
  'H stays whole: an old succeeded root with a queued child.');
select is((select count(*)::int from conductor.tasks where id in (:i_root, :i_child)), 2,
  'I stays whole: a waiting root whose child finished long ago.');
select is((select count(*)::int from conductor.tasks where id = :j_root), 1, 'J, retried, stays.');
select is((select count(*)::int from conductor.attempts where task_id in (:g_root, :h_root, :i_child)), 3,
  'Their attempts stay too.');

select * from finish();
rollback;
