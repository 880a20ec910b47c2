-- watch() waits out a completion in flight, but never longer than its lock_timeout (1 s): a
-- row another transaction holds for longer (a client's cancel() left open in its transaction)
-- makes it raise 55P03 (lock_not_available), and the caller calls it again later. v0.2.0's
-- watch waited for as long as the other transaction stayed open. Once the cancel committed,
-- watch returns the task cancelled.
-- dblink sessions: 'stage' (roles, tasks, cleanup), 'holder' and 'watcher' (conductor_client
-- only).
begin;
select plan(4);
\ir ../helpers.psql
create extension if not exists dblink;

select 'watch-bounded-' || pg_backend_pid() as q \gset
select 't_watch_bounded_client_' || pg_backend_pid() as client_role \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c0 \gset
select dblink_exec('stage', format('create role %I login in role conductor_client', :'client_role')) as r1 \gset
select dblink_connect('holder', conductor_tests.conninfo() || ' user=' || :'client_role') as c1 \gset
select dblink_connect('watcher', conductor_tests.conninfo() || ' user=' || :'client_role') as c2 \gset
-- in the watcher's session: watch(task), answering its status or the SQLSTATE it raised
select dblink_exec('watcher', $w$create function pg_temp.try_watch(task_id bigint) returns text
  language plpgsql as $fn$
  begin
    return (select w.status::text from conductor.watch(try_watch.task_id) w);
  exception when others then
    return sqlstate;
  end $fn$$w$) as f1 \gset

select t as t1 from dblink('stage', format($s$select conductor.enqueue('k', queue => %L)$s$, :'q')) as r(t bigint) \gset
select count(*) as claimed from dblink('stage', format(
  'select attempt_id from conductor.claim(worker_id => %L, queues => array[%L])', 'w-' || :'q', :'q')) as r(a bigint) \gset

select dblink_exec('holder', 'begin') as b1 \gset
select is((select n from dblink('holder', format('select conductor.cancel(%s)', :t1)) as r(n int)),
  1, 'A client cancels the running task in a transaction it leaves open.');
select clock_timestamp() as sent_at \gset
select dblink_send_query('watcher', format('select pg_temp.try_watch(%s)', :t1)) as s1 \gset
-- wait (5 s at most) for the watch to return; past that, let the holder go
do $$
declare
  v_deadline timestamptz := clock_timestamp() + interval '5 seconds';
begin
  while dblink_is_busy('watcher') = 1 and clock_timestamp() < v_deadline loop
    perform pg_sleep(0.01);
  end loop;
  if dblink_is_busy('watcher') = 1 then
    perform dblink_exec('holder', 'rollback');
  end if;
end
$$;
select clock_timestamp() - :'sent_at'::timestamptz as took \gset
select is((select s from dblink_get_result('watcher') as r(s text)), '55P03',
  'Another watcher''s watch raises 55P03 (lock_not_available) instead of waiting for the holder.');
select count(*) as ended from dblink_get_result('watcher') as r(s text) \gset
select ok(:'took'::interval between interval '0.9 seconds' and interval '3 seconds',
  'It raises after waiting about its 1 s lock_timeout.');

select dblink_exec('holder', 'commit') as k1 \gset
select is((select s from dblink('watcher', format('select pg_temp.try_watch(%s)', :t1)) as r(s text)), 'cancelled',
  'Called again once the cancel committed, watch returns the task cancelled.');

-- Clean up the committed rows and the role.
select dblink_disconnect('holder') as x1 \gset
select dblink_disconnect('watcher') as x2 \gset
select dblink_exec('stage', format(
  'delete from conductor.result_waiters w using conductor.tasks t where w.task_id = t.id and t.queue = %L', :'q')) as d0 \gset
select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.workers where id = %L', 'w-' || :'q')) as d3 \gset
select dblink_exec('stage', format('drop role %I', :'client_role')) as r2 \gset
select dblink_disconnect('stage') as x0 \gset

select * from finish();
rollback;
