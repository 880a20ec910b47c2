-- retry raises QC205 when another unfinished task now holds the task's dedupe_key; nothing changes.
begin;
select plan(4);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'retry-dd', dedupe_key => 'nightly') as old \gset
select conductor_tests.claim_one('retry-dd') as a \gset
select conductor.fail(:a, 'boom') as f \gset
select conductor.enqueue('k', '{}', 'retry-dd', dedupe_key => 'nightly') as holder \gset
select conductor_tests.task(:old) as old_before \gset

select throws_ok(format('select conductor.retry(%s)', :old), 'QC205',
  format('task %s cannot be retried: another task holds its dedupe_key ''nightly'' (unfinished, or finished in its dedupe_states for the period)', :old),
  'Retrying while a newer task holds the dedupe_key is refused with QC205.');
select is(conductor_tests.task(:old), :'old_before'::jsonb, 'The failed task is unchanged.');

select conductor.cancel(:holder) as n \gset
select is(conductor.retry(:old), :old::bigint, 'Once the holder finished, the retry goes through.');
select is((select status::text from conductor.tasks where id = :old), 'queued', 'The retried task is queued.');

select * from finish();
rollback;
