-- heartbeat never waits on a row another transaction holds. A conductor_client login's
-- cancel() in a transaction it leaves open locks the task's row; v0.2.0's heartbeat waited
-- for that transaction, and with it the leases of every other task of the worker ran out.
-- Now the held row is skipped: its lease is not extended this beat and it is not answered
-- (the next beat tries again; once the cancel commits, the beat answers 'cancelled'). The same
-- for the worker's own row, which another worker login can hold by heartbeating that
-- worker_id in an open transaction: the beat goes on without marking the worker seen.
-- dblink sessions: 'stage' (roles, tasks, cleanup), 'client' (conductor_client only),
-- 'worker' and 'other' (conductor_worker only).
begin;
select plan(10);
\ir ../helpers.psql
create extension if not exists dblink;

select 'hb-held-' || pg_backend_pid() as q \gset
select 't_hb_held_client_' || pg_backend_pid() as client_role \gset
select 't_hb_held_worker_' || pg_backend_pid() as worker_role \gset
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
  v_queue text := 'hb-held-' || pg_backend_pid();
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
select dblink_connect('other', conductor_tests.conninfo() || ' user=' || :'worker_role') as c3 \gset
create function pg_temp.lease(task_id bigint) returns timestamptz language sql as $fn$
  select t.lease_expires_at from conductor.tasks t where t.id = task_id
$fn$;
create function pg_temp.beat(attempt_ids bigint[]) returns integer language sql as $fn$
  select dblink_send_query('worker', format(
    $s$select attempt_id, state from conductor.heartbeat(worker_id => %L, attempt_ids => %L::bigint[], lease => '10 minutes')$s$,
    'w-hb-held-' || pg_backend_pid(), attempt_ids))
$fn$;
create function pg_temp.answer() returns text language sql as $fn$
  select coalesce(string_agg(r.a || ':' || r.s, ',' order by r.a), '') from dblink_get_result('worker') as r(a bigint, s text)
$fn$;

select pg_temp.running() as a1 \gset
select pg_temp.running() as a2 \gset
select pg_temp.task_of(:a1) as t1 \gset
select pg_temp.task_of(:a2) as t2 \gset
select pg_temp.lease(:t1) as lease1 \gset
select pg_temp.lease(:t2) as lease2 \gset

-- 1. the client cancels t1 in an open transaction; the worker beats both
select dblink_exec('client', 'begin') as b1 \gset
select is((select n from dblink('client', format('select conductor.cancel(%s)', :t1)) as r(n int)),
  1, 'The client''s cancel in its open transaction cancels the running task.');
select pg_temp.beat(array[:a1, :a2]) as s1 \gset
select is(pg_temp.settle('worker', :worker_pid), 'returned', 'The heartbeat does not wait for the client''s transaction.');
select is(pg_temp.answer(), '', 'It answers nothing: the held attempt is neither lost nor cancelled yet.');
select count(*) as ended from dblink_get_result('worker') as r(a bigint, s text) \gset
select ok(pg_temp.lease(:t2) > :'lease2'::timestamptz, 'It extends the lease of the other task.');
select is(pg_temp.lease(:t1), :'lease1'::timestamptz, 'It leaves the held task''s lease as it was.');

-- 2. the cancel commits: the next beat answers it
select dblink_exec('client', 'commit') as k1 \gset
select pg_temp.beat(array[:a1, :a2]) as s2 \gset
select is(pg_temp.settle('worker', :worker_pid) || ' ' || pg_temp.answer(), 'returned ' || :a1 || ':cancelled',
  'Once the cancel committed, the next beat answers it ''cancelled''.');
select count(*) as ended from dblink_get_result('worker') as r(a bigint, s text) \gset

-- 3. another worker login holds this worker's row (a beat under its worker_id, left open)
select dblink_exec('other', 'begin') as b3 \gset
select n as squatted from dblink('other', format(
  $s$select count(*) from conductor.heartbeat(worker_id => %L, attempt_ids => '{}')$s$, 'w-' || :'q')) as r(n bigint) \gset
select pg_temp.lease(:t2) as lease2b \gset
select pg_temp.beat(array[:a2]) as s3 \gset
select is(pg_temp.settle('worker', :worker_pid), 'returned',
  'The heartbeat does not wait for another session holding the worker''s row.');
select is(pg_temp.answer(), '', 'It answers nothing.');
select count(*) as ended from dblink_get_result('worker') as r(a bigint, s text) \gset
select ok(pg_temp.lease(:t2) > :'lease2b'::timestamptz, 'It extends the lease all the same.');
select dblink_exec('other', 'rollback') as k3 \gset
select dblink_disconnect('other') as x3 \gset
select isnt((select last_seen_at from conductor.workers where id = 'w-' || :'q'), null, 'The worker is seen.');

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
