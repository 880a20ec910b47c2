-- The engine publishes task changes on topic 'tasks' (origin null), only while a session
-- subscribes to 'tasks' or '*': an enqueue publishes {"event": "queued", "queue": q} (once
-- per queue per transaction: PostgreSQL folds equal notifications), a completion
-- {"event": "finished", "ids": [...]} naming every finished id, a claim {"event": "running",
-- "ids": [...]} naming the tasks it started (not only watched ones), 350
-- ids a message so that a big batch never exceeds the notification limit. With nobody
-- subscribed, an enqueue and a completion send nothing on conductor_bus.
-- dblink sessions: 'sub' listens (and subscribes), 'writer' enqueues, claims and completes.
begin;
select plan(8);
\ir ../helpers.psql
create extension if not exists dblink;

select 'bus-tasks-' || pg_backend_pid() as q \gset
select dblink_connect('sub', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('writer', conductor_tests.conninfo()) as c2 \gset
select dblink_exec('sub', 'listen conductor_bus') as l \gset

create function pg_temp.received() returns setof jsonb language plpgsql as $fn$
begin
  perform dblink_exec('sub', 'do $r$ begin end $r$');  -- a round trip delivers what is pending
  return query select n.extra::jsonb from dblink_get_notify('sub') n where n.notify_name = 'conductor_bus';
end
$fn$;
-- a task enqueued and claimed by the writer (committed); its attempt
create function pg_temp.held() returns bigint language plpgsql as $fn$
declare
  v_attempt bigint;
  v_queue text := 'bus-tasks-' || pg_backend_pid();
begin
  perform (select count(*) from dblink('writer', format('select conductor.enqueue(%L, queue => %L)', 'k', v_queue)) as r(x text));
  select t.a into strict v_attempt
    from dblink('writer', format('select attempt_id from conductor.claim(worker_id => %L, queues => array[%L])',
                                 'w-' || v_queue, v_queue)) as t(a bigint);
  return v_attempt;
end
$fn$;

-- nobody subscribes
select pg_temp.held() as a0 \gset
select (select count(*) from dblink('writer', format('select conductor.complete(%s)', :a0)) as r(x text)) as k0 \gset
select is_empty('select pg_temp.received()',
  'With nobody subscribed to tasks, an enqueue and a completion send nothing on conductor_bus.');

select (select count(*) from dblink('sub', $$select conductor.subscribe(array['tasks'])$$) as r(x text)) as s \gset

select dblink_exec('writer', format($w$do $s$ begin
  perform conductor.enqueue('k', queue => %L);
  perform conductor.enqueue('k', queue => %L);
  perform conductor.enqueue('k', queue => %L);
end $s$$w$, :'q', :'q', :'q' || '-b')) as e \gset
select set_eq('select pg_temp.received()',
  format($$values (%L::jsonb), (%L::jsonb)$$,
    jsonb_build_object('topic', 'tasks', 'origin', null, 'payload', jsonb_build_object('event', 'queued', 'queue', :'q')),
    jsonb_build_object('topic', 'tasks', 'origin', null, 'payload', jsonb_build_object('event', 'queued', 'queue', :'q' || '-b'))),
  'A transaction enqueueing three tasks into two queues publishes queued once per queue.');

select pg_temp.held() as a1 \gset
select task_id as t1 from conductor.attempts where id = :a1 \gset
select count(*) as drained from pg_temp.received() \gset
select (select count(*) from dblink('writer', format('select conductor.complete(%s)', :a1)) as r(x text)) as k1 \gset
select results_eq('select pg_temp.received()',
  format($$values (%L::jsonb)$$,
    jsonb_build_object('topic', 'tasks', 'origin', null, 'payload', jsonb_build_object('event', 'finished', 'ids', jsonb_build_array(:t1)))),
  'A completion nobody watches publishes finished with its id.');

select (select count(*) from dblink('writer', format('select conductor.enqueue(%L, queue => %L)', 'k', :'q')) as r(x text)) as e1 \gset
select count(*) as drained from pg_temp.received() \gset
select t.a as a_run, t.t as t_run
  from dblink('writer', format('select attempt_id, task_id from conductor.claim(worker_id => %L, queues => array[%L])',
                               'w-' || :'q', :'q')) as t(a bigint, t bigint) \gset
select results_eq('select pg_temp.received()',
  format($$values (%L::jsonb)$$,
    jsonb_build_object('topic', 'tasks', 'origin', null, 'payload', jsonb_build_object('event', 'running', 'ids', jsonb_build_array(:t_run)))),
  'A claim publishes running with the ids it started.');
select (select count(*) from dblink('writer', format('select conductor.complete(%s)', :a_run)) as r(x text)) as k_run \gset

select pg_temp.held() as a2 \gset
select pg_temp.held() as a3 \gset
select task_id as t2 from conductor.attempts where id = :a2 \gset
select task_id as t3 from conductor.attempts where id = :a3 \gset
select count(*) as drained from pg_temp.received() \gset
select (select count(*) from dblink('writer', format('select conductor.complete_many(array[%s, %s])', :a2, :a3)) as r(x text)) as k2 \gset
select results_eq($$select jsonb_array_elements(m -> 'payload' -> 'ids') from pg_temp.received() m$$,
  format('values (to_jsonb(%s::bigint)), (to_jsonb(%s::bigint))', :t2, :t3),
  'complete_many publishes one finished message naming both ids.');

-- a batch of 800 ids (the engine's helper, run as the owner would): three messages
select (select count(*) from dblink('writer', 'select conductor._notify_done(array(select g::bigint from generate_series(1000000001, 1000000800) g))') as r(x text)) as k3 \gset
create temp table big as select m from pg_temp.received() m;
select is(array(select jsonb_array_length(m -> 'payload' -> 'ids') from big order by m -> 'payload' -> 'ids' -> 0),
  array[350, 350, 100], '800 finished ids are published 350 a message.');
select is((select count(distinct e) from big, jsonb_array_elements(m -> 'payload' -> 'ids') e), 800::bigint,
  'Together they name all 800.');

select (select count(*) from dblink('sub', 'select conductor.unsubscribe()') as r(x text)) as u \gset
select (select count(*) from dblink('sub', $$select conductor.subscribe(array['*'])$$) as r(x text)) as s2 \gset
select (select count(*) from dblink('writer', format('select conductor.enqueue(%L, queue => %L)', 'k', :'q')) as r(x text)) as e2 \gset
select is(array(select m -> 'payload' ->> 'event' from pg_temp.received() m), array['queued'],
  'A subscriber to ''*'' receives the tasks topic too.');

-- clean up the committed rows
select (select count(*) from dblink('sub', 'select conductor.unsubscribe()') as r(x text)) as u2 \gset
select dblink_exec('writer', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue like %L', :'q' || '%')) as d1 \gset
select dblink_exec('writer', format('delete from conductor.tasks where queue like %L', :'q' || '%')) as d2 \gset
select dblink_exec('writer', format('delete from conductor.workers where id = %L', 'w-' || :'q')) as d3 \gset
select dblink_exec('sub', 'unlisten conductor_bus') as ul \gset
select dblink_disconnect('sub') as x1 \gset
select dblink_disconnect('writer') as x2 \gset

select * from finish();
rollback;
