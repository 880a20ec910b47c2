-- save_step is refused, storing nothing, when the caller no longer holds the task:
-- QC201 after its lease was reaped, QC202 after a cancel, QC203 for an unknown attempt.
begin;
select plan(7);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'save-refused-reap') as reaped \gset
select conductor_tests.claim_one('save-refused-reap', 'w1', '1 second') as a_reaped \gset
select conductor.enqueue('k', '{}', 'save-refused-cancel') as cancelled \gset
select conductor_tests.claim_one('save-refused-cancel') as a_cancelled \gset

set local conductor.fake_now = '2030-01-01 00:00:10+00';
select conductor.reap() as r \gset
select conductor.cancel(:cancelled) as c \gset

select throws_ok(format($$select conductor.save_step(%s, 'late', '1')$$, :a_reaped), 'QC201', NULL,
  'A worker whose lease was reaped is refused with QC201.');
select throws_ok(format($$select conductor.save_step(%s, 'late', '1')$$, :a_cancelled), 'QC202', NULL,
  'A worker whose task was cancelled is refused with QC202.');
select throws_ok($$select conductor.save_step(-1, 'late', '1')$$, 'QC203', NULL,
  'An attempt that does not exist is refused with QC203.');
select is_empty(format('select * from conductor.steps where task_id in (%s, %s)', :reaped, :cancelled),
  'The refused saves stored nothing.');

-- the task reclaimed by another worker: the old attempt stays refused, the new one may save
select conductor_tests.claim_one('save-refused-reap', 'w2') as a_new \gset
select throws_ok(format($$select conductor.save_step(%s, 'late', '1')$$, :a_reaped), 'QC201', NULL,
  'The old attempt stays refused with QC201 once another worker holds the task.');
select is(conductor.save_step(:a_new, 'late', '2'), '2'::jsonb, 'The new holder saves the step.');
select is((select result from conductor.steps where task_id = :reaped and name = 'late'), '2'::jsonb,
  'Only the new holder''s result is stored.');

select * from finish();
rollback;
