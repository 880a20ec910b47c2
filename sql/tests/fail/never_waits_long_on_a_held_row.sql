-- fail never waits long on a task row another transaction holds. A conductor_client
-- login's cancel() in a transaction it leaves open locks the task's row; v0.2.0's fail
-- waited for that transaction however long it stayed open. Now it waits 500 ms at most, then
-- raises 55P03 (lock_not_available) and changes nothing: the worker sends it again later.
-- Once the client rolled back, the same call fails the task.
-- dblink sessions: 'stage' (roles, tasks, cleanup), 'client' (conductor_client only),
-- 'worker' (conductor_worker only).
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;

select 'fail-held-' || pg_backend_pid() as q \gset
select 't_fail_held_client_' || pg_backend_pid() as client_role \gset
select 't_fail_held_worker_' || pg_backend_pid() as worker_role \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c0 \gset
select dblink_exec('stage', format('create role %I login in role conductor_client', :'client_role')) as r1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_worker', :'worker_role')) as r2 \gset
select dblink_connect('client', conductor_tests.conninfo() || ' user=' || :'client_role') as c1 \gset
select dblink_connect('worker', conductor_tests.conninfo() || ' user=' || :'worker_role') as c2 \gset
select pid as worker_pid from dblink('worker', 'select pg_backend_pid()') as r(pid int) \gset

-- whether the async query on conn returns within 3 s ('returned'; a bounded wait is fine) or
-- still waits on a lock then ('waits', and then the client's transaction is rolled back so the file goes on)
create function pg_temp.settle(conn text, pid integer) returns text language plpgsql as $fn$
declare
  v_deadline timestamptz := clock_timestamp() + interval '3 seconds';
begin
  while dblink_is_busy(conn) = 1 loop
    if clock_timestamp() > v_deadline then
      if not exists (select from pg_stat_activity a where a.pid = settle.pid and a.wait_event_type = 'Lock') then
        return 'timeout';
      end if;
      perform dblink_exec('client', 'rollback');
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
  v_queue text := 'fail-held-' || pg_backend_pid();
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
-- in the worker's session: fail(attempt), answering 'ok' or the SQLSTATE it raised
select dblink_exec('worker', $w$create function pg_temp.try_complete(attempt_id bigint) returns text
  language plpgsql as $fn$
  begin
    perform conductor.fail(attempt_id => try_complete.attempt_id, error => 'boom');
    return 'ok';
  exception when others then
    return sqlstate;
  end $fn$$w$) as f1 \gset
create function pg_temp.answer() returns text language sql as $fn$
  select r.s from dblink_get_result('worker') as r(s text)
$fn$;
create function pg_temp.status(task_id bigint) returns text language sql as $fn$
  select s from dblink('stage', format('select status::text from conductor.tasks where id = %s', task_id)) as r(s text)
$fn$;

select pg_temp.running() as a1 \gset
select pg_temp.task_of(:a1) as t1 \gset
select dblink_exec('client', 'begin') as b1 \gset
select is((select n from dblink('client', format('select conductor.cancel(%s)', :t1)) as r(n int)),
  1, 'The client''s cancel in its open transaction cancels the running task.');
select dblink_send_query('worker', format('select pg_temp.try_complete(%s)', :a1)) as s1 \gset
select is(pg_temp.settle('worker', :worker_pid), 'returned', 'fail does not wait for the client''s transaction.');
select is(pg_temp.answer(), '55P03', 'It raises 55P03 (lock_not_available).');
select count(*) as ended from dblink_get_result('worker') as r(s text) \gset
select is(pg_temp.status(:t1), 'running', 'It changed nothing: the task is running (as committed).');

select dblink_exec('client', 'rollback') as k1 \gset
select dblink_send_query('worker', format('select pg_temp.try_complete(%s)', :a1)) as s2 \gset
select is(pg_temp.settle('worker', :worker_pid) || ' ' || pg_temp.answer(), 'returned ok',
  'Sent again once the client rolled back, fail records the failure.');
select count(*) as ended from dblink_get_result('worker') as r(s text) \gset
select is(pg_temp.status(:t1), 'failed', 'The task failed.');

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
