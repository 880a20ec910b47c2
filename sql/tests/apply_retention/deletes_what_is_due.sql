-- apply_retention, called as conductor_worker, deletes exactly the runs that are due by the
-- settings' retention (succeeded 7 days, failed 30 days): whole runs (root and children, with
-- attempts, log lines and steps), aged from the run's last finished task; a root that failed,
-- was cancelled or is dead counts as failed. It answers one row per what, in a fixed order.
begin;
select plan(14);
\ir ../helpers.psql

create role t_worker;
grant conductor_worker to t_worker;

set local conductor.fake_now = '2030-01-01 00:00:00+00';
-- A: a succeeded root and its succeeded child, both finished on day 0; a step and log lines
select conductor.enqueue('root', '{}', 'ar-due') as a_root \gset
select conductor_tests.claim_one('ar-due') as a_root_att \gset
select conductor.enqueue('child', '{}', 'ar-due', parent_id => :a_root) as a_child \gset
select conductor.save_step(:a_root_att, 'one', '{"x": 1}') as s \gset
select conductor.save_log(:a_root_att, '[{"at": "2030-01-01T00:00:00Z", "level": "INFO", "logger": "t", "message": "hi"}]');
select conductor.complete(:a_root_att) as done \gset
select conductor.complete(conductor_tests.claim_one('ar-due')) as done \gset
-- C: a failed root, day 0
select conductor.enqueue('root', '{}', 'ar-due') as c_root \gset
select conductor.fail(conductor_tests.claim_one('ar-due'), 'boom') as failed \gset
-- D: a cancelled root, day 0
select conductor.enqueue('root', '{}', 'ar-due') as d_root \gset
select conductor.cancel(:d_root) as n \gset
-- E: a dead root (as the reaper leaves one), day 0
select conductor.enqueue('root', '{}', 'ar-due') as e_root \gset
update conductor.tasks set status = 'dead', finished_at = conductor.now() where id = :e_root;
-- F: a succeeded root on day 0 whose child finished on day 3
select conductor.enqueue('root', '{}', 'ar-due') as f_root \gset
select conductor_tests.claim_one('ar-due') as f_root_att \gset
select conductor.enqueue('child', '{}', 'ar-due', parent_id => :f_root) as f_child \gset
select conductor.complete(:f_root_att) as done \gset
set local conductor.fake_now = '2030-01-04 00:00:00+00';
select conductor.complete(conductor_tests.claim_one('ar-due')) as done \gset
-- B: a succeeded root on day 5
set local conductor.fake_now = '2030-01-06 00:00:00+00';
select conductor.enqueue('root', '{}', 'ar-due') as b_root \gset
select conductor.complete(conductor_tests.claim_one('ar-due')) as done \gset

set local conductor.fake_now = '2030-01-09 00:00:00+00';
set local role t_worker;
select results_eq($$select what, deleted from conductor.apply_retention()$$,
  $$values ('succeeded_runs', 1::bigint), ('failed_runs', 0::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'On day 8 one succeeded run is due (7 days), no failed one (30 days): three rows, in order.');
reset role;
select is_empty(format('select from conductor.tasks where id in (%s, %s)', :a_root, :a_child),
  'Run A went whole: its root and its child.');
select is_empty(format('select from conductor.attempts where task_id in (%s, %s)', :a_root, :a_child),
  'Their attempts went with them.');
select is_empty(format('select from conductor.attempt_logs where attempt_id = %s', :a_root_att),
  'And the attempt''s log lines.');
select is_empty(format('select from conductor.steps where task_id = %s', :a_root), 'And its steps.');
select is((select count(*)::int from conductor.tasks where queue = 'ar-due'), 6,
  'Everything else stays: B (5 days old), F (its child finished 5 days ago), C, D, E (failed).');

set local conductor.fake_now = '2030-01-11 00:00:01+00';
set local role t_worker;
select results_eq($$select what, deleted from conductor.apply_retention()$$,
  $$values ('succeeded_runs', 1::bigint), ('failed_runs', 0::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'Past day 10 run F is due: 7 days after its last task finished, not after its root did.');
reset role;
select is_empty(format('select from conductor.tasks where id in (%s, %s)', :f_root, :f_child), 'Run F went whole.');

set local conductor.fake_now = '2030-01-30 23:59:59+00';
set local role t_worker;
select results_eq($$select what, deleted from conductor.apply_retention()$$,
  $$values ('succeeded_runs', 1::bigint), ('failed_runs', 0::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'Just before day 30, B goes and no failed run yet.');
set local conductor.fake_now = '2030-01-31 00:00:01+00';
select results_eq($$select what, deleted from conductor.apply_retention()$$,
  $$values ('succeeded_runs', 0::bigint), ('failed_runs', 3::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'Past 30 days the failed, the cancelled and the dead run go, counted as failed runs.');
select results_eq($$select what, deleted from conductor.apply_retention()$$,
  $$values ('succeeded_runs', 0::bigint), ('failed_runs', 0::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'Then nothing is left to delete.');
reset role;
select is_empty($$select from conductor.tasks where queue = 'ar-due'$$, 'Every run went.');
select is_empty($$select from conductor.attempts a where not exists (select from conductor.tasks t where t.id = a.task_id)$$,
  'No attempt outlived its task.');
select is_empty($$select from conductor.steps s where not exists (select from conductor.tasks t where t.id = s.task_id)$$,
  'No step outlived its task.');

select * from finish();
rollback;
