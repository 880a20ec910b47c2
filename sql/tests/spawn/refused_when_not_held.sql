-- spawn is refused when the caller does not hold the task (QC201, QC202, QC203) or names
-- no step (QC106), and then enqueues no child and checkpoints nothing.
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'spawn-refused') as t \gset
select conductor_tests.claim_one('spawn-refused', 'w1', '1 second') as a_reaped \gset
select conductor.enqueue('k', '{}', 'spawn-refused-cancel') as c \gset
select conductor_tests.claim_one('spawn-refused-cancel') as a_cancelled \gset
select conductor.enqueue('k', '{}', 'spawn-refused-held') as h \gset
select conductor_tests.claim_one('spawn-refused-held') as a_held \gset
set local conductor.fake_now = '2030-01-01 00:00:10+00';
select conductor.reap() as r \gset
select conductor.cancel(:c) as n \gset

select throws_ok(format($$select conductor.spawn(%s, 'kid', 'kid')$$, :a_reaped), 'QC201', NULL,
  'A worker whose lease was reaped cannot spawn (QC201).');
select throws_ok(format($$select conductor.spawn(%s, 'kid', 'kid')$$, :a_cancelled), 'QC202', NULL,
  'A worker whose task was cancelled cannot spawn (QC202).');
select throws_ok($$select conductor.spawn(-1, 'kid', 'kid')$$, 'QC203', NULL,
  'An unknown attempt cannot spawn (QC203).');
select throws_ok(format($$select conductor.spawn(%s, '', 'kid')$$, :a_held), 'QC106', NULL,
  'An empty step name is refused with QC106.');
select is_empty(format('select * from conductor.tasks where parent_id in (%s, %s, %s)', :t, :c, :h),
  'No child was enqueued.');
select is_empty(format('select * from conductor.steps where task_id in (%s, %s, %s)', :t, :c, :h),
  'Nothing was checkpointed.');

select * from finish();
rollback;
