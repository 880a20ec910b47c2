-- The barrier between sleep() and enqueue: once a worker's sleep() got its try-lock (true),
-- an enqueue into that queue that comes later takes the queue's shared advisory lock first
-- and so waits until the sleep's transaction commits; its read of conductor.sleepers (a
-- statement of its own, a fresh snapshot) then sees the mark and notifies. Without the wait
-- the enqueue could read the sleepers before the mark is visible, and the worker, whose
-- re-check claim ran before the task committed, would sleep past the task.
-- Four dblink sessions: 'a' sleeps in an open transaction, 'b' enqueues, 'listener'
-- listens, 'stage' cleans up.
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;

select 'sleep-barrier-' || pg_backend_pid() as q \gset
select 'w-sleep-barrier-' || pg_backend_pid() as w \gset
select dblink_connect('a', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('b', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('listener', conductor_tests.conninfo()) as c3 \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c4 \gset
select dblink_exec('listener', 'listen conductor') as l \gset
select pid as b_pid from dblink('b', 'select pg_backend_pid()') as r(pid int) \gset

select dblink_exec('a', 'begin') as ab \gset
select is((select s from dblink('a', format('select conductor.sleep(%L, array[%L])', :'w', :'q')) as r(s boolean)),
  true, 'The sleep in the open transaction is settled (true).');

select dblink_send_query('b', format($$select conductor.enqueue('k', '{}', %L)$$, :'q')) as sent \gset
-- wait (up to 10 s) until the enqueue blocks on a lock, rather than sleeping a fixed time
select ok(conductor_tests.await_lock_wait(:b_pid),
  'An enqueue into the queue waits while the mark is uncommitted.');
select is((select wait_event from pg_stat_activity where pid = :b_pid), 'advisory',
  'It waits on the queue''s advisory lock, held by the sleep.');
select is(dblink_is_busy('b'), 1, 'The enqueue has not finished.');

select dblink_exec('a', 'commit') as ac \gset
select isnt((select t from dblink_get_result('b') as r(t bigint)), null::bigint,
  'Once the mark commits, the enqueue goes on and returns its task.');
select * from dblink_get_result('b') as r(t bigint);  -- the end of the async query

select dblink_exec('listener', 'do $r$ begin end $r$') as rt \gset
select results_eq(
  format($$select extra from dblink_get_notify('listener') where notify_name = 'conductor' and extra = %L$$, :'q'),
  format('values (%L::text)', :'q'),
  'The enqueue saw the mark and notified the queue.');

-- Clean up the committed rows.
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.workers where id = %L', :'w')) as d2 \gset
select dblink_exec('listener', 'unlisten conductor') as u \gset
select dblink_disconnect('a') as x1 \gset
select dblink_disconnect('b') as x2 \gset
select dblink_disconnect('listener') as x3 \gset
select dblink_disconnect('stage') as x4 \gset

select * from finish();
rollback;
