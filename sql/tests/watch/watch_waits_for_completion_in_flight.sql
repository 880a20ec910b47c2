-- The result-waiting protocol misses no end, whatever the interleaving of the waiter's two
-- watch() calls (each in a transaction of its own) and a completion of the task. The protocol:
-- call watch; if the task is unfinished, call watch once more in a new transaction; wait for a
-- notification only if that second call finds it unfinished. The first call commits the
-- waiter's mark; the second call's read waits out a completion in flight (under a share lock
-- taken in a subtransaction rolled back at once, so nothing stays locked), and any completion
-- after it sees the committed mark and notifies. Staged here:
--   1. a completion in flight (task updated, not committed), then watch: watch waits for that
--      commit and returns the end;
--   2. watch committed first, then the completion: the completion notifies the waiter;
--   3. watch in a transaction left open, then the completion: the completion does not wait
--      for the watcher (v0.2.0's did), nor can it see the uncommitted mark; the watcher's
--      second call, in a new transaction, returns the end;
--   4. watch in flight while a completion reads the waiters (so it misses the mark), the
--      watch commits, then the second call while the completion is still uncommitted: that
--      call waits for the completion's commit and returns the end.
-- dblink sessions: 'stage' enqueues and claims (committed), 'writer' completes, 'watcher'
-- watches and LISTENs on conductor_done (result_waiters is keyed by its pid).
begin;
select plan(17);
\ir ../helpers.psql
create extension if not exists dblink;

select 'watch-race-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('writer', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('watcher', conductor_tests.conninfo()) as c3 \gset
select pid as watcher_pid from dblink('watcher', 'select pg_backend_pid()') as r(pid int) \gset
select pid as writer_pid from dblink('writer', 'select pg_backend_pid()') as r(pid int) \gset
select dblink_exec('watcher', 'listen conductor_done') as l \gset

-- a running task, committed by 'stage'; returns its attempt
create function pg_temp.held() returns bigint language plpgsql as $fn$
declare
  v_attempt bigint;
  v_queue text := 'watch-race-' || pg_backend_pid();
begin
  perform dblink_exec('stage', format($w$do $s$ begin perform conductor.enqueue('k', queue => %L); end $s$$w$, v_queue));
  select t.a into strict v_attempt
    from dblink('stage', format('select attempt_id from conductor.claim(worker_id => %L, queues => array[%L])',
                                'w-' || v_queue, v_queue)) as t(a bigint);
  return v_attempt;
end
$fn$;
-- the notifications on conductor_done the watcher has received that name task_id
create function pg_temp.told(task_id bigint) returns setof text language plpgsql as $fn$
begin
  perform dblink_exec('watcher', 'do $r$ begin end $r$');  -- a round trip delivers what is pending
  return query select n.extra from dblink_get_notify('watcher') n
                where n.notify_name = 'conductor_done'
                  and (n.extra = '*' or task_id::text = any (string_to_array(n.extra, ',')));
end
$fn$;
create function pg_temp.watch(task_id bigint) returns text language sql as $fn$
  select s from dblink('watcher', format('select status::text from conductor.watch(%s)', task_id)) as r(s text)
$fn$;
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

-- 1. the completion first, uncommitted; then watch
select pg_temp.held() as a1 \gset
select task_id as t1 from conductor.attempts where id = :a1 \gset
select dblink_exec('writer', 'begin') as b1 \gset
select dblink_exec('writer', format($w$do $s$ begin perform conductor.complete(%s, '{"n": 1}'); end $s$$w$, :a1)) as c1 \gset
select dblink_send_query('watcher', format('select status::text from conductor.watch(%s)', :t1)) as sent1 \gset
select ok(conductor_tests.await_lock_wait(:watcher_pid),
  'watch of a task whose completion is uncommitted waits.');
select is(dblink_is_busy('watcher'), 1, 'watch has not returned.');
select dblink_exec('writer', 'commit') as k1 \gset
select is((select s from dblink_get_result('watcher') as r(s text)), 'succeeded',
  'Once the completion commits, watch returns the task succeeded.');
select count(*) as ended from dblink_get_result('watcher') as r(s text) \gset
select is_empty(format('select 1 from conductor.result_waiters where task_id = %s', :t1),
  'It leaves no waiter behind (the task had finished).');

-- 2. watch committed first; then the completion
select pg_temp.held() as a2 \gset
select task_id as t2 from conductor.attempts where id = :a2 \gset
select count(*) as drained from pg_temp.told(0) \gset
select is(pg_temp.watch(:t2) || ' ' || pg_temp.watch(:t2), 'running running',
  'Both calls of a committed watch of a running task return it running.');
select dblink_exec('writer', format($w$do $s$ begin perform conductor.complete(%s); end $s$$w$, :a2)) as c2 \gset
select results_eq(format('select pg_temp.told(%s)', :t2), format('values (%L::text)', :t2),
  'The completion that follows notifies the watcher, naming the task.');

-- 3. watch in an open transaction; then the completion
select pg_temp.held() as a3 \gset
select task_id as t3 from conductor.attempts where id = :a3 \gset
select count(*) as drained from pg_temp.told(0) \gset
select dblink_exec('watcher', 'begin') as b3 \gset
select is(pg_temp.watch(:t3), 'running', 'The watch in an open transaction returns the task running.');
select dblink_send_query('writer', format('select conductor.complete(%s)', :a3)) as sent3 \gset
select is(pg_temp.settle('writer', :writer_pid), 'returned',
  'A completion while the watch is uncommitted does not wait for the watcher.');
select count(*) as ended from dblink_get_result('writer') as r(v text) \gset
select count(*) as ended from dblink_get_result('writer') as r(v text) \gset
select dblink_exec('watcher', 'commit') as k3 \gset
select is_empty(format('select pg_temp.told(%s)', :t3),
  'It could not see the uncommitted mark: it notified nobody.');
select is(pg_temp.watch(:t3), 'succeeded',
  'The watcher''s second call, in a new transaction, returns the task succeeded.');
select is_empty(format('select 1 from conductor.result_waiters where task_id = %s', :t3),
  'The second call removes the mark of the finished task.');

-- 4. watch in flight while the completion reads the waiters; the watch commits; then the
-- second call, while the completion is still uncommitted
select pg_temp.held() as a4 \gset
select task_id as t4 from conductor.attempts where id = :a4 \gset
select count(*) as drained from pg_temp.told(0) \gset
select dblink_exec('watcher', 'begin') as b4 \gset
select is(pg_temp.watch(:t4), 'running', 'The first call, in an open transaction, returns the task running.');
select dblink_exec('writer', 'begin') as w4 \gset
select dblink_send_query('writer', format('select conductor.complete(%s)', :a4)) as sent4w \gset
select is(pg_temp.settle('writer', :writer_pid), 'returned',
  'The completion does not wait for the first call''s open transaction.');
select count(*) as ended from dblink_get_result('writer') as r(v text) \gset
select count(*) as ended from dblink_get_result('writer') as r(v text) \gset
select dblink_exec('watcher', 'commit') as k4 \gset
select dblink_send_query('watcher', format('select status::text from conductor.watch(%s)', :t4)) as sent4 \gset
select ok(conductor_tests.await_lock_wait(:watcher_pid),
  'The second call waits for the completion in flight (the mark is committed, the completion missed it).');
select dblink_exec('writer', 'commit') as kw4 \gset
select is((select s from dblink_get_result('watcher') as r(s text)), 'succeeded',
  'Once the completion commits, the second call returns the task succeeded.');
select count(*) as ended from dblink_get_result('watcher') as r(s text) \gset
select is_empty(format('select pg_temp.told(%s)', :t4),
  'The completion, which read the waiters before the mark committed, notified nobody: the read was what counted.');
select is_empty(format('select 1 from conductor.result_waiters where task_id = %s', :t4),
  'No waiter is left behind.');

-- Clean up the committed rows.
select dblink_exec('stage', format(
  'delete from conductor.result_waiters w using conductor.tasks t where w.task_id = t.id and t.queue = %L', :'q')) as d0 \gset
select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.workers where id = %L', 'w-' || :'q')) as d3 \gset
select dblink_exec('watcher', 'unlisten conductor_done') as u \gset
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('writer') as x2 \gset
select dblink_disconnect('watcher') as x3 \gset

select * from finish();
rollback;
