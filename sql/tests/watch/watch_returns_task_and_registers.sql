-- watch(task_id) records that this session (pg_backend_pid()) waits for the task's end, one
-- conductor.result_waiters row, so that the completion notifies it; then it returns the task
-- exactly as get_task does, so a client calls watch instead of get_task. A task already
-- finished is returned and not watched (nothing will ever notify for it). unwatch removes the
-- session's row (idempotent). An unknown task raises QC203 and leaves no row.
-- Runs in this transaction (rolled back).
begin;
select plan(11);
\ir ../helpers.psql

select 'watch-returns-' || pg_backend_pid() as q \gset
select conductor.enqueue('k', '{"n": 1}', :'q') as t1 \gset

select results_eq(format('select * from conductor.watch(%s)', :t1),
  format('select * from conductor.get_task(%s)', :t1),
  'watch returns the same row as get_task (a queued task).');
select results_eq(format('select task_id, pid from conductor.result_waiters where task_id = %s', :t1),
  format('values (%s::bigint, pg_backend_pid())', :t1),
  'It records this session as waiting on the task.');
select is((select status::text from conductor.watch(:t1)), 'queued', 'Watching again returns the task again.');
select is((select count(*) from conductor.result_waiters where task_id = :t1), 1::bigint,
  'Watching again keeps one row.');

select conductor.unwatch(:t1) as u1 \gset
select is_empty(format('select 1 from conductor.result_waiters where task_id = %s', :t1),
  'unwatch removes the session''s row.');
select lives_ok(format('select conductor.unwatch(%s)', :t1), 'unwatch again is fine: idempotent.');

select conductor.enqueue('k', '{}', :'q') as t2 \gset
select conductor_tests.claim_one(:'q', 'w-watch-returns') as a2 \gset
-- t1 is claimed first (oldest): finish whichever was claimed, and watch that one
select task_id as done from conductor.attempts where id = :a2 \gset
select conductor.complete(:a2, '{"ok": true}') as c2 \gset
select results_eq(format('select * from conductor.watch(%s)', :done),
  format('select * from conductor.get_task(%s)', :done),
  'watch of a finished task returns it as get_task does.');
select is((select status::text from conductor.watch(:done)), 'succeeded', 'The row shows it finished.');
select is_empty(format('select 1 from conductor.result_waiters where task_id = %s', :done),
  'A finished task is not watched: no row is left.');

select throws_ok('select * from conductor.watch(-1)', 'QC203', NULL, 'watch of an unknown task raises QC203.');
select is_empty('select 1 from conductor.result_waiters where task_id = -1',
  'The refused watch left no row.');

select * from finish();
rollback;
