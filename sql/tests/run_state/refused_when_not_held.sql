-- set_run_state is fenced by its attempt as save_step is: an attempt that no longer holds its
-- task (it suspended, the task was cancelled, or no such attempt) is refused and stores
-- nothing; a value over max_result_bytes is QC107.
begin;
select plan(5);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'run-state-fence') as t \gset
select conductor_tests.claim_one('run-state-fence') as a \gset
select throws_ok(format($$select conductor.set_run_state(%s, to_jsonb(repeat('x', 2000000)))$$, :a), 'QC107', null,
  'A value over conductor.settings.max_result_bytes is refused with QC107.');
select conductor.suspend(:a, 'nap', 'sleep', duration => '1 hour') as w \gset
select throws_ok(format($$select conductor.set_run_state(%s, '1')$$, :a), 'QC201', null,
  'An attempt that suspended no longer holds its task: QC201.');
select conductor.enqueue('k', '{}', 'run-state-fence') as t2 \gset
select conductor_tests.claim_one('run-state-fence') as a2 \gset
select conductor.cancel(:t2) as c \gset
select throws_ok(format($$select conductor.set_run_state(%s, '1')$$, :a2), 'QC202', null,
  'An attempt of a cancelled task: QC202.');
select throws_ok($$select conductor.set_run_state(-1, '1')$$, 'QC203', null, 'No such attempt: QC203.');
select is((select count(*) from conductor.run_states where task_id in (:t, :t2)), 0::bigint, 'Nothing was stored.');

select * from finish();
rollback;
