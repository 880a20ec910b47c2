-- A conductor_client login that watches two tasks in a transaction it leaves open
-- (`begin; select conductor.watch(a); select conductor.watch(b);`) hides no task from a
-- worker and stalls none of its reports. v0.2.0's watch() read the task FOR SHARE and kept
-- that lock to the caller's commit: claim's SKIP LOCKED skipped the queued task b, and the
-- worker's complete_many of the running task a, its heartbeat and its fail waited for as long
-- as the client's transaction stayed open. watch() now waits out a completion in flight under
-- a share lock taken in a subtransaction that it rolls back at once, so nothing of it stays.
-- dblink sessions: 'stage' (the test's own role: roles, tasks, cleanup), 'client' (a login
-- with conductor_client only), 'worker' (a login with conductor_worker only).
begin;
select plan(11);
\ir ../helpers.psql
create extension if not exists dblink;

select 'open-watch-' || pg_backend_pid() as q \gset
select 't_open_watch_client_' || pg_backend_pid() as client_role \gset
select 't_open_watch_worker_' || pg_backend_pid() as worker_role \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c0 \gset
-- roles are cluster-wide: created (committed) by 'stage', dropped at the end
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

-- a (claimed, running), c (claimed, running) and b (queued), committed by 'stage'
select t as ta from dblink('stage', format($s$select conductor.enqueue('k', queue => %L)$s$, :'q')) as r(t bigint) \gset
select t as tc from dblink('stage', format($s$select conductor.enqueue('k', queue => %L)$s$, :'q')) as r(t bigint) \gset
select n as claimed from dblink('worker', format(
  'select count(*) from conductor.claim(worker_id => %L, queues => array[%L], max_tasks => 2)',
  'w-' || :'q', :'q')) as r(n bigint) \gset
select attempt_id as aa from conductor.tasks where id = :ta \gset
select attempt_id as ac from conductor.tasks where id = :tc \gset
select t as tb from dblink('stage', format($s$select conductor.enqueue('k', queue => %L)$s$, :'q')) as r(t bigint) \gset

-- the client: begin; watch(a); watch(b); watch(c); and it stays open
select dblink_exec('client', 'begin') as b1 \gset
select is((select s from dblink('client', format('select status::text from conductor.watch(%s)', :ta)) as r(s text)),
  'running', 'The client''s watch of the running task a returns it running.');
select is((select s from dblink('client', format('select status::text from conductor.watch(%s)', :tb)) as r(s text)),
  'queued', 'The client''s watch of the queued task b returns it queued.');
select is((select s from dblink('client', format('select status::text from conductor.watch(%s)', :tc)) as r(s text)),
  'running', 'The client''s watch of the running task c returns it running.');

select is((select n from dblink('stage', format(
            'select count(*) from (select from conductor.tasks where id in (%s, %s, %s) for update skip locked) l',
            :ta, :tb, :tc)) as r(n bigint)),
  3::bigint, 'The client''s open transaction holds no lock on the rows of the three tasks.');

select is((select tid from dblink('worker', format(
            'select task_id from conductor.claim(worker_id => %L, queues => array[%L], max_tasks => 5)',
            'w-' || :'q', :'q')) as r(tid bigint)),
  :tb::bigint, 'A worker claims the task b the client watches in its open transaction.');

select dblink_send_query('worker', format(
  'select count(*) from conductor.heartbeat(worker_id => %L, attempt_ids => array[%s, %s]::bigint[])',
  'w-' || :'q', :aa, :ac)) as s1 \gset
select is(pg_temp.settle('worker', :worker_pid), 'returned',
  'The worker''s heartbeat of the watched tasks does not wait for the client''s transaction.');
select is((select n from dblink_get_result('worker') as r(n bigint)), 0::bigint, 'It extends both leases.');
select count(*) as ended from dblink_get_result('worker') as r(n bigint) \gset

select dblink_send_query('worker', format(
  'select count(*) from conductor.complete_many(attempt_ids => array[%s]::bigint[])', :aa)) as s2 \gset
select is(pg_temp.settle('worker', :worker_pid), 'returned',
  'The worker''s complete_many of the watched task a does not wait for the client''s transaction.');
select n as answered from dblink_get_result('worker') as r(n bigint) \gset
select count(*) as ended from dblink_get_result('worker') as r(n bigint) \gset

select dblink_send_query('worker', format($s$select conductor.fail(attempt_id => %s, error => 'boom')$s$, :ac)) as s3 \gset
select is(pg_temp.settle('worker', :worker_pid), 'returned',
  'The worker''s fail of the watched task c does not wait for the client''s transaction.');
select s as failed from dblink_get_result('worker') as r(s text) \gset
select count(*) as ended from dblink_get_result('worker') as r(s text) \gset

select is(:answered::bigint, 0::bigint, 'complete_many stored the result (it answered no attempt).');
select is((select string_agg(s, ',' order by id) from dblink('stage', format(
            'select id, status::text from conductor.tasks where id in (%s, %s)', :ta, :tc)) as r(id bigint, s text)),
  'succeeded,failed', 'Both reports committed while the client''s transaction stays open.');

-- Clean up: end the client's transaction, then the committed rows and the roles.
select dblink_exec('client', 'rollback') as k1 \gset
select dblink_disconnect('client') as x1 \gset
select dblink_disconnect('worker') as x2 \gset
select dblink_exec('stage', format(
  'delete from conductor.result_waiters w using conductor.tasks t where w.task_id = t.id and t.queue = %L', :'q')) as d0 \gset
select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.workers where id = %L', 'w-' || :'q')) as d3 \gset
select dblink_exec('stage', format('drop role %I', :'client_role')) as r3 \gset
select dblink_exec('stage', format('drop role %I', :'worker_role')) as r4 \gset
select dblink_disconnect('stage') as x0 \gset

select * from finish();
rollback;
