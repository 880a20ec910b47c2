-- watch() and a completion of the same task cannot miss each other, whichever comes first:
--   - a completion in flight (task updated, not committed): watch writes its row, then reads
--     the task FOR SHARE, so it waits for that commit and returns the end ('succeeded');
--   - a watch committed first: the completion (a later statement) finds its row and notifies;
--   - a watch in flight (row written and task share-locked, not committed): the completion's
--     update waits for the watch to commit, then finds its row and notifies.
-- Otherwise a client could read 'running' and then wait for a notification already sent.
-- dblink sessions: 'stage' enqueues and claims (committed), 'writer' completes, 'watcher'
-- watches and LISTENs on conductor_done (result_waiters is keyed by its pid).
begin;
select plan(11);
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
select * from dblink_get_result('watcher') as r(s text);  -- the end of the async query
select is_empty(format('select 1 from conductor.result_waiters where task_id = %s', :t1),
  'It leaves no waiter behind (the task had finished).');

-- 2. watch committed first; then the completion
select pg_temp.held() as a2 \gset
select task_id as t2 from conductor.attempts where id = :a2 \gset
-- drain what came before
select count(*) as drained from pg_temp.told(0) \gset
select is((select s from dblink('watcher', format('select status::text from conductor.watch(%s)', :t2)) as r(s text)),
  'running', 'A committed watch of a running task returns it running.');
select dblink_exec('writer', format($w$do $s$ begin perform conductor.complete(%s); end $s$$w$, :a2)) as c2 \gset
select results_eq(format('select pg_temp.told(%s)', :t2), format('values (%L::text)', :t2),
  'The completion that follows notifies the watcher, naming the task.');

-- 3. watch first, uncommitted; then the completion
select pg_temp.held() as a3 \gset
select task_id as t3 from conductor.attempts where id = :a3 \gset
select dblink_exec('watcher', 'begin') as b3 \gset
select is((select s from dblink('watcher', format('select status::text from conductor.watch(%s)', :t3)) as r(s text)),
  'running', 'The watch in an open transaction returns the task running.');
select dblink_send_query('writer', format('select conductor.complete(%s)', :a3)) as sent3 \gset
select ok(conductor_tests.await_lock_wait(:writer_pid),
  'A completion while the watch is uncommitted waits (the watch holds the task FOR SHARE).');
select is(dblink_is_busy('writer'), 1, 'The completion has not finished.');
select dblink_exec('watcher', 'commit') as k3 \gset
select * from dblink_get_result('writer') as r(v text);
select * from dblink_get_result('writer') as r(v text);  -- the end of the async query
select results_eq(format('select pg_temp.told(%s)', :t3), format('values (%L::text)', :t3),
  'Once the watch commits, the completion sees its row and notifies the watcher.');
select is_empty(format('select 1 from conductor.result_waiters where task_id = %s', :t3),
  'The completion removed the waiter it told.');

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
