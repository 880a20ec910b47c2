-- Two reapers at once: a row one of them holds is skipped by the other, which does not wait;
-- once the first commits, the late reaper finds nothing left to take. Sessions are dblink
-- connections; the tasks are committed and deleted again at the end.
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;

select 'race-reap-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('reaper1', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('reaper2', conductor_tests.conninfo()) as c3 \gset

-- Two tasks claimed with a 1 minute lease at 2030-01-01 00:00, committed.
select dblink_exec('stage', 'set conductor.fake_now = ''2030-01-01 00:00:00+00''') as s0 \gset
select dblink_exec('stage', format(
  'do $s$ begin perform conductor.enqueue(''k'', ''{}'', %L, run_at => ''2030-01-01 00:00:00+00'') from generate_series(1, 2);'
  ' perform conductor.claim(''w-crashed'', array[%L], 2, ''1 minute''); end $s$', :'q', :'q')) as staged \gset
select min(id) as t1, max(id) as t2 from conductor.tasks where queue = :'q' \gset

select dblink_exec('reaper1', 'set conductor.fake_now = ''2030-01-01 00:05:00+00''') as s1 \gset
select dblink_exec('reaper2', 'set conductor.fake_now = ''2030-01-01 00:05:00+00''') as s2 \gset
select dblink_exec('reaper2', 'set lock_timeout = ''2s''') as s3 \gset

-- Reaper 1 holds the first task's row (as a reaper mid-way would) in an open transaction.
select dblink_exec('reaper1', 'begin') as b \gset
select dblink_exec('reaper1', format('do $s$ begin perform from conductor.tasks where id = %s for update; end $s$', :t1)) as l \gset

select is((select n from dblink('reaper2', 'select conductor.reap()') as r(n integer)), 1,
  'The second reaper takes only the task not locked, without waiting for the other.');
select is((select status::text from conductor.tasks where id = :t1), 'running',
  'The locked task is left alone.');
select is((select (status, recoveries)::text from conductor.tasks where id = :t2), '(queued,1)',
  'The unlocked task is back in the queue with one recovery.');

-- Now reaper 1 reaps in its open transaction (it holds the lock), commits; reaper 2 comes late.
select is((select n from dblink('reaper1', 'select conductor.reap()') as r(n integer)), 1,
  'The first reaper takes the task it holds.');
select dblink_exec('reaper1', 'commit') as c \gset
select is((select n from dblink('reaper2', 'select conductor.reap()') as r(n integer)), 0,
  'A late reaper finds nothing: it never touches a task already taken back.');
select results_eq(format('select status::text, recoveries, attempt from conductor.tasks where queue = %L order by id', :'q'),
  $$values ('queued', 1, 0), ('queued', 1, 0)$$,
  'Each task was reaped exactly once: recoveries 1, the attempt given back once.');

select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
-- the committed reaps also took the unknown-kind sweep's turn at their fake time
select dblink_exec('stage', 'update conductor.maintenance set unknown_kinds_swept_at = null') as d3 \gset
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('reaper1') as x2 \gset
select dblink_disconnect('reaper2') as x3 \gset

select * from finish();
rollback;
