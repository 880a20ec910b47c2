-- A completion never waits on a result_waiters row another session holds. A client that
-- watched a task (committed) and then calls unwatch() in a transaction it leaves open holds
-- its waiter row (deleted, uncommitted); v0.2.0's completion deleted the waiters of the
-- finished tasks and so waited for that transaction, and the worker's report with it. Now the
-- completion reads the waiters, notifies them, and deletes only the rows it can lock: it
-- returns at once, the waiter is told (when its transaction ends, as any notification), and
-- the row it held is its own to remove.
-- dblink sessions: 'stage' (tasks, cleanup), 'watcher' (watches, LISTENs), 'worker'
-- (completes).
begin;
select plan(4);
\ir ../helpers.psql
create extension if not exists dblink;

select 'waiter-held-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c0 \gset
select dblink_connect('watcher', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('worker', conductor_tests.conninfo()) as c2 \gset
select pid as worker_pid from dblink('worker', 'select pg_backend_pid()') as r(pid int) \gset
select dblink_exec('watcher', 'listen conductor_done') as l \gset

-- whether the async query on conn returns within 3 s ('returned'; a bounded wait is fine) or
-- still waits on a lock then ('waits', and then the watcher's transaction is rolled back so the file goes on)
create function pg_temp.settle(conn text, pid integer) returns text language plpgsql as $fn$
declare
  v_deadline timestamptz := clock_timestamp() + interval '3 seconds';
begin
  while dblink_is_busy(conn) = 1 loop
    if clock_timestamp() > v_deadline then
      if not exists (select from pg_stat_activity a where a.pid = settle.pid and a.wait_event_type = 'Lock') then
        return 'timeout';
      end if;
      perform dblink_exec('watcher', 'rollback');
      return 'waits';
    end if;
    perform pg_sleep(0.01);
  end loop;
  return 'returned';
end
$fn$;

select t as t1 from dblink('stage', format($s$select conductor.enqueue('k', queue => %L)$s$, :'q')) as r(t bigint) \gset
select a as a1 from dblink('worker', format(
  'select attempt_id from conductor.claim(worker_id => %L, queues => array[%L])', 'w-' || :'q', :'q')) as r(a bigint) \gset
select is((select s from dblink('watcher', format('select status::text from conductor.watch(%s)', :t1)) as r(s text)),
  'running', 'The watcher watches the running task (committed).');
select dblink_exec('watcher', 'begin') as b1 \gset
select count(*) as u1 from dblink('watcher', format('select conductor.unwatch(%s)', :t1)) as r(v text) \gset

select dblink_send_query('worker', format('select conductor.complete(%s)', :a1)) as s1 \gset
select is(pg_temp.settle('worker', :worker_pid), 'returned',
  'The completion does not wait for the watcher''s open transaction.');
select count(*) as ended from dblink_get_result('worker') as r(v text) \gset
select count(*) as ended from dblink_get_result('worker') as r(v text) \gset
select is((select status::text from conductor.tasks where id = :t1), 'succeeded', 'The task succeeded.');
select dblink_exec('watcher', 'rollback') as k1 \gset
select dblink_exec('watcher', 'do $r$ begin end $r$') as rt \gset
select results_eq(format($s$select extra from dblink_get_notify('watcher')
                             where notify_name = 'conductor_done' and extra = %L$s$, :t1),
  format('values (%L::text)', :t1), 'The completion notified the waiter whose row it could not lock.');

-- Clean up the committed rows.
select dblink_exec('watcher', 'unlisten conductor_done') as u \gset
select dblink_disconnect('watcher') as x1 \gset
select dblink_disconnect('worker') as x2 \gset
select dblink_exec('stage', format(
  'delete from conductor.result_waiters w using conductor.tasks t where w.task_id = t.id and t.queue = %L', :'q')) as d0 \gset
select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.workers where id = %L', 'w-' || :'q')) as d3 \gset
select dblink_disconnect('stage') as x0 \gset

select * from finish();
rollback;
