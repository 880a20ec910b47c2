-- A login with no Conductor grant at all (only CONNECT, which every role has) can take any
-- advisory lock, and the keys of the sleeper protocol are in the source:
--   select pg_advisory_lock(hashtext('conductor:enqueue:any'), 0);
-- v0.2.0's enqueue tried the key and, when that failed, waited for it: every READ COMMITTED
-- enqueue of the database stalled for as long as the attacker held it. An enqueue now only
-- tries; when a try fails it notifies the queue (the conservative path: one notification)
-- and returns. A holder of the key in shared mode makes sleep() answer false (not settled)
-- for as long as it holds it: the worker then re-checks with a bounded backoff (its latency,
-- never a spin); its mark is written all the same, so enqueues that come later notify it.
-- dblink sessions: 'nobody' (a login with no grant), 'client' (conductor_client only),
-- 'listener' (LISTENs on conductor), 'stage' (roles, cleanup).
begin;
select plan(9);
\ir ../helpers.psql
create extension if not exists dblink;

select 'foreign-key-' || pg_backend_pid() as q \gset
select 'w-foreign-key-' || pg_backend_pid() as w \gset
select 't_foreign_key_nobody_' || pg_backend_pid() as nobody_role \gset
select 't_foreign_key_client_' || pg_backend_pid() as client_role \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c0 \gset
select dblink_exec('stage', format('create role %I login', :'nobody_role')) as r1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_client', :'client_role')) as r2 \gset
select dblink_connect('nobody', conductor_tests.conninfo() || ' user=' || :'nobody_role') as c1 \gset
select dblink_connect('client', conductor_tests.conninfo() || ' user=' || :'client_role') as c2 \gset
select dblink_connect('listener', conductor_tests.conninfo()) as c3 \gset
select dblink_exec('listener', 'listen conductor') as l \gset
select pid as client_pid from dblink('client', 'select pg_backend_pid()') as r(pid int) \gset

-- whether the async query on conn returns within 3 s ('returned'; a bounded wait is fine) or
-- still waits on a lock then ('waits', and then the attacker lets go so the file goes on)
create function pg_temp.settle(conn text, pid integer) returns text language plpgsql as $fn$
declare
  v_deadline timestamptz := clock_timestamp() + interval '3 seconds';
begin
  while dblink_is_busy(conn) = 1 loop
    if clock_timestamp() > v_deadline then
      if not exists (select from pg_stat_activity a where a.pid = settle.pid and a.wait_event_type = 'Lock') then
        return 'timeout';
      end if;
      perform 1 from dblink('nobody', 'select pg_advisory_unlock_all()') as r(v text);
      return 'waits';
    end if;
    perform pg_sleep(0.01);
  end loop;
  return 'returned';
end
$fn$;
-- the notifications naming this file's queue the listener has received
create function pg_temp.heard() returns setof text language plpgsql as $fn$
begin
  perform dblink_exec('listener', 'do $r$ begin end $r$');  -- a round trip delivers what is pending
  return query select n.extra from dblink_get_notify('listener') n
                where n.notify_name = 'conductor' and n.extra = 'foreign-key-' || pg_backend_pid();
end
$fn$;
create function pg_temp.enqueue(how text) returns integer language sql as $fn$
  select dblink_send_query('client', case how
    when 'one' then format($s$select conductor.enqueue('k', '{}', %L)$s$, 'foreign-key-' || pg_backend_pid())
    else format($s$select max(t) from conductor.enqueue_many(jsonb_build_array(
                     jsonb_build_object('kind', 'k', 'queue', %L))) t$s$, 'foreign-key-' || pg_backend_pid()) end)
$fn$;

-- 1. the attacker holds the 'any queue' key and this queue's key, exclusively
select is((select v from dblink('nobody', format(
  $s$select pg_advisory_lock(hashtext('conductor:enqueue:any'), 0)::text
         || pg_advisory_lock(hashtext('conductor:enqueue:queue'), hashtext(%L))::text$s$, :'q')) as r(v text)),
  '', 'A login with no grant takes the enqueue keys (pg_advisory_lock is everyone''s).');
select pg_temp.enqueue('one') as s1 \gset
select is(pg_temp.settle('client', :client_pid), 'returned', 'A client''s enqueue does not wait for the attacker.');
select isnt((select t from dblink_get_result('client') as r(t bigint)), null::bigint, 'It returns its task.');
select count(*) as ended from dblink_get_result('client') as r(t bigint) \gset
select results_eq('select pg_temp.heard()', format('values (%L::text)', :'q'),
  'It notified the queue (it could not tell whether a worker sleeps on it).');
select pg_temp.enqueue('many') as s2 \gset
select is(pg_temp.settle('client', :client_pid), 'returned', 'A client''s enqueue_many does not wait for the attacker.');
select count(*) as ended from dblink_get_result('client') as r(t bigint) \gset
select count(*) as ended from dblink_get_result('client') as r(t bigint) \gset

-- 2. the attacker lets go: an enqueue into a queue nobody sleeps on notifies nobody again
select count(*) as unlocked from dblink('nobody', 'select pg_advisory_unlock_all()') as r(v text) \gset
select count(*) as drained from pg_temp.heard() \gset
select isnt((select t from dblink('client', format($s$select conductor.enqueue('k', '{}', %L)$s$, :'q')) as r(t bigint)),
  null::bigint, 'Once the attacker let go, an enqueue returns its task.');
select is_empty('select pg_temp.heard()', 'It notified nobody: no worker sleeps on the queue.');

-- 3. the attacker holds the queue's key shared (as an enqueue in flight does): sleep() cannot
-- settle; it still writes its mark
select count(*) as locked from dblink('nobody', format(
  $s$select pg_advisory_lock_shared(hashtext('conductor:enqueue:queue'), hashtext(%L))::text$s$, :'q')) as r(v text) \gset
select is(conductor.sleep(:'w', array[:'q']), false,
  'While the attacker holds the key shared, sleep() answers false (the worker backs off).');
select set_eq(format('select queue from conductor.sleepers where worker_id = %L', :'w'), format('values (%L::text)', :'q'),
  'Its mark is written all the same.');

-- Clean up the committed rows and the roles.
select count(*) as unlocked from dblink('nobody', 'select pg_advisory_unlock_all()') as r(v text) \gset
select dblink_exec('listener', 'unlisten conductor') as u \gset
select dblink_disconnect('nobody') as x1 \gset
select dblink_disconnect('client') as x2 \gset
select dblink_disconnect('listener') as x3 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('drop role %I', :'nobody_role')) as r3 \gset
select dblink_exec('stage', format('drop role %I', :'client_role')) as r4 \gset
select dblink_disconnect('stage') as x0 \gset

select * from finish();
rollback;
