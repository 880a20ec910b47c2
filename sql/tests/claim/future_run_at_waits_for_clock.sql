-- A task due later is not claimed until the clock reaches its run_at.
begin;
select plan(4);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('later', '{}', 'future-q', run_at => '2030-01-01 00:10:00+00') as id \gset

select is_empty($$select * from conductor.claim('w1', array['future-q'])$$,
  'A task due in ten minutes is not claimed now.');
set local conductor.fake_now = '2030-01-01 00:09:59.999999+00';
select is_empty($$select * from conductor.claim('w1', array['future-q'])$$,
  'Nor a microsecond before its run_at.');
set local conductor.fake_now = '2030-01-01 00:10:00+00';
select results_eq($$select task_id, run_at from conductor.claim('w1', array['future-q'])$$,
  format('values (%s::bigint, %L::timestamptz)', :id, '2030-01-01 00:10:00+00'),
  'At its run_at exactly it is claimed.');
select is((select started_at from conductor.tasks where id = :id), '2030-01-01 00:10:00+00'::timestamptz,
  'started_at is the clock''s time at the claim.');

select * from finish();
rollback;
