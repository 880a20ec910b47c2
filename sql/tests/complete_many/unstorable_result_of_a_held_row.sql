-- complete_many fails a task for a result over conductor.settings.max_result_bytes in a
-- second statement, run only when such a result came (the common call starts one UPDATE
-- of conductor.tasks). When that task's row is held by another transaction (a client's
-- cancel() left open), the second statement gives up after 200 ms like the first: the
-- oversized result is answered 'locked' (nothing changed: sent again later), and the
-- other results of the batch are stored all the same, not rolled back with it. Sent
-- again once the client rolled back, the task fails for its result.
-- dblink sessions: 'stage' (roles, tasks, settings, cleanup), 'client' (conductor_client
-- only), 'worker' (conductor_worker only).
begin;
select plan(7);
\ir ../helpers.psql
create extension if not exists dblink;

select 'unstorable-held-' || pg_backend_pid() as q \gset
select 't_unstorable_held_client_' || pg_backend_pid() as client_role \gset
select 't_unstorable_held_worker_' || pg_backend_pid() as worker_role \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c0 \gset
select dblink_exec('stage', format('create role %I login in role conductor_client', :'client_role')) as r1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_worker', :'worker_role')) as r2 \gset
select max_result_bytes as old_limit from conductor.settings \gset
select dblink_exec('stage', 'update conductor.settings set max_result_bytes = 100') as l1 \gset
select dblink_connect('client', conductor_tests.conninfo() || ' user=' || :'client_role') as c1 \gset
select dblink_connect('worker', conductor_tests.conninfo() || ' user=' || :'worker_role') as c2 \gset

-- a task enqueued by 'stage' and claimed by the worker: its attempt and its task
create function pg_temp.running(out attempt_id bigint, out task_id bigint) language plpgsql as $fn$
declare
  v_queue text := 'unstorable-held-' || pg_backend_pid();
begin
  perform from dblink('stage', format($s$select conductor.enqueue('k', queue => %L)$s$, v_queue)) as r(t bigint);
  select r.a, r.t into strict attempt_id, task_id from dblink('worker', format(
    'select attempt_id, task_id from conductor.claim(worker_id => %L, queues => array[%L])', 'w-' || v_queue, v_queue))
    as r(a bigint, t bigint);
end
$fn$;
-- complete_many of attempt_ids with results, sent by the worker; its answer as 'attempt:state,...'
-- ('' for none), the wait for it bounded
create function pg_temp.complete_many(attempt_ids bigint[], results jsonb[]) returns text language plpgsql as $fn$
declare
  v_deadline timestamptz := clock_timestamp() + interval '3 seconds';
  v_answer text;
begin
  perform dblink_send_query('worker', format(
    'select attempt_id, state from conductor.complete_many(attempt_ids => %L::bigint[], results => %L::jsonb[])',
    attempt_ids, results));
  while dblink_is_busy('worker') = 1 loop
    if clock_timestamp() > v_deadline then
      perform dblink_exec('client', 'rollback');
      perform from dblink_get_result('worker') as r(a bigint, s text);
      return 'waited';
    end if;
    perform pg_sleep(0.01);
  end loop;
  select coalesce(string_agg(r.a || ':' || r.s, ',' order by r.a), '') into v_answer
    from dblink_get_result('worker') as r(a bigint, s text);
  perform from dblink_get_result('worker') as r(a bigint, s text);
  return v_answer;
end
$fn$;
create function pg_temp.status(task_id bigint) returns text language sql as $fn$
  select s from dblink('stage', format('select status::text || coalesce('' '' || left(error, 20), '''') from conductor.tasks where id = %s', task_id)) as r(s text)
$fn$;

select * from pg_temp.running() as r1 \gset big_
select * from pg_temp.running() as r2 \gset small_
select jsonb_build_object('s', repeat('x', 200)) as big \gset

-- the client cancels the task of the oversized result in a transaction it leaves open
select dblink_exec('client', 'begin') as b1 \gset
select is((select n from dblink('client', format('select conductor.cancel(%s)', :big_task_id)) as r(n int)),
  1, 'The client''s cancel in its open transaction cancels the task of the oversized result.');
select is(pg_temp.complete_many(array[:big_attempt_id, :small_attempt_id], array[:'big', '{"r": 1}']::jsonb[]),
  :big_attempt_id || ':locked',
  'complete_many answers the oversized result whose row the client holds ''locked'', within 3 s.');
select is(pg_temp.status(:small_task_id), 'succeeded', 'The other result of the batch is stored.');
select is(pg_temp.status(:big_task_id), 'running', 'The held task is unchanged (committed: still running).');

-- the client rolls back: sent again, the oversized result fails its task
select dblink_exec('client', 'rollback') as k1 \gset
select is(pg_temp.complete_many(array[:big_attempt_id], array[:'big']::jsonb[]), :big_attempt_id || ':failed',
  'Sent again once the client rolled back, it is answered ''failed''.');
select is(pg_temp.status(:big_task_id), 'failed result not storable:',
  'Its task failed for its result.');
select is(pg_temp.complete_many(array[:small_attempt_id], array['{"r": 1}']::jsonb[]), :small_attempt_id || ':finished',
  'The stored result sent again is answered ''finished''.');

-- Clean up the committed rows, the setting and the roles.
select dblink_disconnect('client') as x1 \gset
select dblink_disconnect('worker') as x2 \gset
select dblink_exec('stage', format('update conductor.settings set max_result_bytes = %s', :old_limit)) as l2 \gset
select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.workers where id = %L', 'w-' || :'q')) as d3 \gset
select dblink_exec('stage', format('drop role %I', :'client_role')) as r3 \gset
select dblink_exec('stage', format('drop role %I', :'worker_role')) as r4 \gset
select dblink_disconnect('stage') as x0 \gset

select * from finish();
rollback;
