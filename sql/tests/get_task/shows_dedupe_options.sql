-- get_task (and watch, which answers the same columns) shows the dedupe options a task
-- stores: dedupe_states, dedupe_until ('infinity' without a window), debounce_until.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 10:20:00+00';

select conductor.enqueue('k', '{}', 'gt-dd', dedupe_key => 'gt:1', dedupe_window => '1 hour') as w \gset
select conductor.enqueue('k', '{}', 'gt-dd', dedupe_key => 'gt:2', debounce => '5 s', debounce_max => '1 minute') as d \gset
select conductor.enqueue('k', '{}', 'gt-dd') as plain \gset
select is((select (dedupe_states::text[], dedupe_until, debounce_until) from conductor.get_task(:w)),
  (array['queued', 'running', 'waiting', 'succeeded'], '2030-01-01 11:00:00+00'::timestamptz, null::timestamptz),
  'A windowed task shows the statuses that hold its key and the end of its period.');
select is((select (dedupe_states, dedupe_until, debounce_until) from conductor.get_task(:d)),
  (null::conductor.task_status[], null::timestamptz, '2030-01-01 10:21:00+00'::timestamptz),
  'A debounced task shows the latest its run_at may move to.');
select is((select (dedupe_states, dedupe_until, debounce_until) from conductor.watch(:plain)),
  (null::conductor.task_status[], null::timestamptz, null::timestamptz),
  'A task without options shows none, through watch too.');

select * from finish();
rollback;
