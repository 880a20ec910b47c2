-- retry raises QC204 for a queued, running or succeeded task, QC203 for an unknown one; nothing changes.
begin;
select plan(6);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'retry-no') as t_queued \gset
select conductor.enqueue('k', '{}', 'retry-run') as t_running \gset
select conductor.enqueue('k', '{}', 'retry-ok') as t_ok \gset
select conductor_tests.claim_one('retry-run') as a_run \gset
select conductor_tests.claim_one('retry-ok') as a_ok \gset
select conductor.complete(:a_ok) as d \gset
create temp table snap as select id, conductor_tests.task(id) as task from conductor.tasks where id in (:t_queued, :t_running, :t_ok);

select throws_ok(format('select conductor.retry(%s)', :t_queued), 'QC204',
  format('task %s is queued; only a failed, dead, timed_out, expired or cancelled task can be retried', :t_queued),
  'A queued task cannot be retried: QC204, the message naming its status.');
select throws_ok(format('select conductor.retry(%s)', :t_running), 'QC204',
  format('task %s is running; only a failed, dead, timed_out, expired or cancelled task can be retried', :t_running),
  'A running task cannot be retried: QC204.');
select throws_ok(format('select conductor.retry(%s)', :t_ok), 'QC204',
  format('task %s is succeeded; only a failed, dead, timed_out, expired or cancelled task can be retried', :t_ok),
  'A succeeded task cannot be retried: QC204.');
select throws_ok('select conductor.retry(-1)', 'QC203', 'task -1 does not exist',
  'An unknown task cannot be retried: QC203.');
select set_eq(format('select id, conductor_tests.task(id) from conductor.tasks where id in (%s, %s, %s)', :t_queued, :t_running, :t_ok),
  'select id, task from snap', 'The refused tasks are unchanged.');
select is((select attempt_id from conductor.tasks where id = :t_running), :a_run::bigint, 'The running task keeps its claim.');

select * from finish();
rollback;
