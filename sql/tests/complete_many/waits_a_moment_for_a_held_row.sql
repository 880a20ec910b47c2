-- complete_many waits a moment for a task row another transaction holds before it answers
-- 'locked': the engine's own transactions hold a task row for milliseconds (a claim whose scan
-- met the task keeps the row locked to its commit although it did not take it; a heartbeat),
-- and a report must not bounce off those. A row that is let go within 200 ms is waited for
-- and stored, in the same call; one held longer is answered 'locked'
-- (skips_rows_a_client_holds.sql).
-- dblink sessions: 'stage' (roles, tasks, cleanup), 'client' (conductor_client only),
-- 'worker' (conductor_worker only).
begin;
select plan(3);
\ir ../helpers.psql
create extension if not exists dblink;

select 'moment-held-' || pg_backend_pid() as q \gset
select 't_moment_held_client_' || pg_backend_pid() as client_role \gset
select 't_moment_held_worker_' || pg_backend_pid() as worker_role \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c0 \gset
select dblink_exec('stage', format('create role %I login in role conductor_client', :'client_role')) as r1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_worker', :'worker_role')) as r2 \gset
select dblink_connect('client', conductor_tests.conninfo() || ' user=' || :'client_role') as c1 \gset
select dblink_connect('worker', conductor_tests.conninfo() || ' user=' || :'worker_role') as c2 \gset
select pid as worker_pid from dblink('worker', 'select pg_backend_pid()') as r(pid int) \gset

-- whether the async query on conn returns within 3 s ('returned'; a bounded wait is fine) or
-- still waits on a lock then ('waits', and then the other sessions' transactions are rolled back so the file goes on)
create function pg_temp.settle(conn text, pid integer) returns text language plpgsql as $fn$
declare
  v_deadline timestamptz := clock_timestamp() + interval '3 seconds';
begin
  while dblink_is_busy(conn) = 1 loop
    if clock_timestamp() > v_deadline then
      if not exists (select from pg_stat_activity a where a.pid = settle.pid and a.wait_event_type = 'Lock') then
        return 'timeout';
      end if;
      perform dblink_exec(c, 'rollback') from unnest(dblink_get_connections()) c where c not in (conn, 'stage');
      return 'waits';
    end if;
    perform pg_sleep(0.01);
  end loop;
  return 'returned';
end
$fn$;
-- a task enqueued by 'stage' and claimed by the worker; its attempt
create function pg_temp.running() returns bigint language plpgsql as $fn$
declare
  v_queue text := 'moment-held-' || pg_backend_pid();
  v_attempt bigint;
begin
  perform from dblink('stage', format($s$select conductor.enqueue('k', queue => %L)$s$, v_queue)) as r(t bigint);
  select r.a into strict v_attempt from dblink('worker', format(
    'select attempt_id from conductor.claim(worker_id => %L, queues => array[%L])', 'w-' || v_queue, v_queue)) as r(a bigint);
  return v_attempt;
end
$fn$;
create function pg_temp.task_of(attempt_id bigint) returns bigint language sql as $fn$
  select a.task_id from conductor.attempts a where a.id = attempt_id
$fn$;
-- complete_many of the attempts, sent by the worker; its answer as 'attempt:state,...' ('' for none)
create function pg_temp.answer() returns text language sql as $fn$
  select coalesce(string_agg(r.a || ':' || r.s, ',' order by r.a), '') from dblink_get_result('worker') as r(a bigint, s text)
$fn$;
create function pg_temp.send(attempt_ids bigint[]) returns integer language sql as $fn$
  select dblink_send_query('worker', format(
    'select attempt_id, state from conductor.complete_many(attempt_ids => %L::bigint[])', attempt_ids))
$fn$;
create function pg_temp.status(task_id bigint) returns text language sql as $fn$
  select s from dblink('stage', format('select status::text from conductor.tasks where id = %s', task_id)) as r(s text)
$fn$;


select pg_temp.running() as a1 \gset
select pg_temp.running() as a2 \gset
select dblink_exec('client', 'begin') as b1 \gset
select n as cancelled from dblink('client', format('select conductor.cancel(%s)', pg_temp.task_of(:a1))) as r(n int) \gset
select dblink_send_query('worker', format(
  'select attempt_id, state from conductor.complete_many(attempt_ids => %L::bigint[])', array[:a1, :a2])) as s1 \gset
-- the second pass waits for the held row: let it go then
select ok(conductor_tests.await_lock_wait(:worker_pid), 'complete_many waits for the held row.');
select dblink_exec('client', 'rollback') as k1 \gset
select is((select coalesce(string_agg(r.a || ':' || r.s, ','), '') from dblink_get_result('worker') as r(a bigint, s text)),
  '', 'The row let go within the wait, both results are stored in the one call.');
select count(*) as ended from dblink_get_result('worker') as r(a bigint, s text) \gset
select is((select string_agg(s, ',') from dblink('stage', format(
            'select status::text from conductor.tasks where id in (%s, %s)', pg_temp.task_of(:a1), pg_temp.task_of(:a2)))
            as r(s text)), 'succeeded,succeeded', 'Both tasks succeeded.');

-- Clean up the committed rows and the roles.
select dblink_disconnect('client') as x1 \gset
select dblink_disconnect('worker') as x2 \gset
select dblink_exec('stage', format(
  'delete from conductor.steps s using conductor.tasks t where s.task_id = t.id and t.queue = %L', :'q')) as d0 \gset
select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L and parent_id is not null', :'q')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d3 \gset
select dblink_exec('stage', format('delete from conductor.events where name = %L', :'q')) as d4 \gset
select dblink_exec('stage', format('delete from conductor.workers where id = %L', 'w-' || :'q')) as d5 \gset
select dblink_exec('stage', format('drop role %I', :'client_role')) as r3 \gset
select dblink_exec('stage', format('drop role %I', :'worker_role')) as r4 \gset
select dblink_disconnect('stage') as x0 \gset

select * from finish();
rollback;
