-- claim hands out ready tasks by priority (higher first), then run_at (earlier first), then id.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('low_old',    '{}', 'order-q', priority => 0, run_at => '2029-12-31 23:50:00+00') as low_old \gset
select conductor.enqueue('high_new',   '{}', 'order-q', priority => 5, run_at => '2029-12-31 23:55:00+00') as high_new \gset
select conductor.enqueue('high_old',   '{}', 'order-q', priority => 5, run_at => '2029-12-31 23:50:00+00') as high_old \gset
select conductor.enqueue('low_old_2',  '{}', 'order-q', priority => 0, run_at => '2029-12-31 23:50:00+00') as low_old_2 \gset
select conductor.enqueue('negative',   '{}', 'order-q', priority => -1, run_at => '2029-12-31 00:00:00+00') as negative \gset

select results_eq(
  $$select task_id from conductor.claim('w1', array['order-q'], 2)$$,
  format('values (%s::bigint), (%s::bigint)', :high_old, :high_new),
  'The first claim takes the two priority-5 tasks, the earlier run_at first.');
select results_eq(
  $$select task_id from conductor.claim('w1', array['order-q'], 10)$$,
  format('values (%s::bigint), (%s::bigint), (%s::bigint)', :low_old, :low_old_2, :negative),
  'Equal priority and run_at go by id; a lower priority waits even when it is older.');
select is_empty($$select * from conductor.claim('w1', array['order-q'], 10)$$,
  'A running task is not claimed again.');

select * from finish();
rollback;
