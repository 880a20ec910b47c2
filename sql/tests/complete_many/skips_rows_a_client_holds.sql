-- complete_many never waits long on a task row another transaction holds: a conductor_client
-- login's cancel() (or emit_event(), or an old watch) in a transaction it leaves open locks
-- task rows. v0.2.0's complete_many waited for that transaction, however long it stayed open,
-- and every other result of the batch with it. Now such an attempt is answered 'locked' after
-- 200 ms at most (nothing changed: the worker sends it again later) and the rest of the batch
-- is stored;
-- sent again once the client's transaction ended, it is stored (the client rolled back) or
-- answered 'cancelled' (it committed). The same for a child whose parent row is held (the
-- child's end locks its parent): 'locked', never a wait.
-- dblink sessions: 'stage' (roles, tasks, cleanup), 'client' (conductor_client only),
-- 'worker' (conductor_worker only).
begin;
select plan(15);
\ir ../helpers.psql
create extension if not exists dblink;

select 'skip-held-' || pg_backend_pid() as q \gset
select 't_skip_held_client_' || pg_backend_pid() as client_role \gset
select 't_skip_held_worker_' || pg_backend_pid() as worker_role \gset
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
  v_queue text := 'skip-held-' || pg_backend_pid();
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

-- 1. the client cancels a1's task in an open transaction; the batch a1, a2 is sent
select pg_temp.running() as a1 \gset
select pg_temp.running() as a2 \gset
select dblink_exec('client', 'begin') as b1 \gset
select is((select n from dblink('client', format('select conductor.cancel(%s)', pg_temp.task_of(:a1))) as r(n int)),
  1, 'The client''s cancel in its open transaction cancels the running task.');
select pg_temp.send(array[:a1, :a2]) as s1 \gset
select is(pg_temp.settle('worker', :worker_pid), 'returned',
  'complete_many does not wait for the client''s transaction.');
select is(pg_temp.answer(), :a1 || ':locked', 'It answers the held attempt ''locked''.');
select count(*) as ended from dblink_get_result('worker') as r(a bigint, s text) \gset
select is(pg_temp.status(pg_temp.task_of(:a2)), 'succeeded', 'It stores the other result of the batch.');
select is(pg_temp.status(pg_temp.task_of(:a1)), 'running', 'The held task is unchanged (committed: still running).');

-- 2. the client rolls back: sent again, the result is stored
select dblink_exec('client', 'rollback') as k1 \gset
select pg_temp.send(array[:a1]) as s2 \gset
select is(pg_temp.settle('worker', :worker_pid), 'returned', 'Sent again, complete_many returns.');
select is(pg_temp.answer(), '', 'Once the client rolled back, the result sent again is stored.');
select count(*) as ended from dblink_get_result('worker') as r(a bigint, s text) \gset
select is(pg_temp.status(pg_temp.task_of(:a1)), 'succeeded', 'The task succeeded.');

-- 3. the client commits its cancel: sent again, the attempt is answered 'cancelled'
select pg_temp.running() as a3 \gset
select dblink_exec('client', 'begin') as b3 \gset
select n as cancelled from dblink('client', format('select conductor.cancel(%s)', pg_temp.task_of(:a3))) as r(n int) \gset
select pg_temp.send(array[:a3]) as s3 \gset
select is(pg_temp.settle('worker', :worker_pid) || ' ' || pg_temp.answer(), 'returned ' || :a3 || ':locked',
  'A result whose task the client is cancelling is answered ''locked'' (after 200 ms at most).');
select count(*) as ended from dblink_get_result('worker') as r(a bigint, s text) \gset
select dblink_exec('client', 'commit') as k3 \gset
select pg_temp.send(array[:a3]) as s4 \gset
select is(pg_temp.settle('worker', :worker_pid) || ' ' || pg_temp.answer(), 'returned ' || :a3 || ':cancelled',
  'Sent again once the cancel committed, it is answered ''cancelled''.');
select count(*) as ended from dblink_get_result('worker') as r(a bigint, s text) \gset

-- 4. a child whose parent row the client holds: its parent waits for an event that the
-- client emits in an open transaction (emit_event locks the parent to wake it)
select pg_temp.running() as ap \gset
select c as child from dblink('worker', format(
  $s$select conductor.spawn(attempt_id => %s, step => 'c', kind => 'k', queue => %L)$s$, :ap, :'q')) as r(c bigint) \gset
select s as parked from dblink('worker', format(
  $s$select state from conductor.suspend(attempt_id => %s, step => 'e', wait_for => 'event', event => %L)$s$,
  :ap, :'q')) as r(s text) \gset
select is(:'parked'::text, 'waiting', 'The parent waits for its event.');
select a as ac from dblink('worker', format(
  'select attempt_id from conductor.claim(worker_id => %L, queues => array[%L])', 'w-' || :'q', :'q')) as r(a bigint) \gset
select is(pg_temp.task_of(:ac), :child::bigint, 'The worker runs the child.');
select dblink_exec('client', 'begin') as b4 \gset
select is((select n from dblink('client', format($s$select conductor.emit_event(%L, '{}')$s$, :'q')) as r(n int)),
  1, 'The client''s emit_event in its open transaction wakes the parent (and holds its row).');
select pg_temp.send(array[:ac]) as s5 \gset
select is(pg_temp.settle('worker', :worker_pid) || ' ' || pg_temp.answer(), 'returned ' || :ac || ':locked',
  'The child''s result is answered ''locked'': its end would lock the held parent.');
select count(*) as ended from dblink_get_result('worker') as r(a bigint, s text) \gset
select dblink_exec('client', 'rollback') as k4 \gset
select pg_temp.send(array[:ac]) as s6 \gset
select is(pg_temp.settle('worker', :worker_pid) || ' ' || pg_temp.answer() || ' ' || pg_temp.status(:child),
  'returned  succeeded', 'Sent again once the client rolled back, it is stored.');
select count(*) as ended from dblink_get_result('worker') as r(a bigint, s text) \gset

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
