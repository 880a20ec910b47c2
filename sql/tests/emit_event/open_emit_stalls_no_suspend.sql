-- A client's emit_event in a transaction it leaves open stalls no worker: a worker's suspend
-- on the same event returns 'waiting' at once (v0.2.0 made it wait on the event's advisory
-- lock until the client's transaction ended). When the client commits, the event is pending
-- and reap() wakes the task with it. Sessions: 'stage' (setup, cleanup), 'client' (a client
-- login), 'worker' (a worker login).
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;

select 'race-open-emit-' || pg_backend_pid() as q, 't_w_' || pg_backend_pid() as wrole,
       't_c_' || pg_backend_pid() as crole \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_worker', :'wrole')) as r1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_client', :'crole')) as r2 \gset
select dblink_connect('worker', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'wrole')) as c2 \gset
select dblink_connect('client', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'crole')) as c3 \gset
-- v0.2.0 made the suspend wait here: fail in 2 s instead of hanging
select dblink_exec('worker', 'set lock_timeout = ''2s''') as l \gset

select t as task_id from dblink('stage', format('select conductor.enqueue(''k'', ''{}'', %L)', :'q')) as r(t bigint) \gset
select a as attempt_id from dblink('worker', format('select attempt_id from conductor.claim(''w1'', array[%L])', :'q')) as r(a bigint) \gset

select dblink_exec('client', 'begin') as b \gset
select is((select n from dblink('client', format('select conductor.emit_event(%L, ''{"v": "late"}'')', :'q')) as r(n int)), 0,
  'The client emits inside a transaction it leaves open; nobody waits yet.');
select is((select s from dblink('worker', format('select state from conductor.suspend(%s, ''approval'', ''event'', %L)', :attempt_id, :'q'))
            as r(s text)), 'waiting',
  'The worker''s suspend on that event does not wait for the client''s transaction: it parks the task at once.');
select is((select s from dblink('stage', format('select status::text from conductor.tasks where id = %s', :task_id)) as r(s text)),
  'waiting', 'The parked wait is committed; the worker is free.');
select dblink_exec('client', 'commit') as c \gset

select is((select pending from conductor.events where name = :'q'), true,
  'Once the client commits, the event is pending: a suspend may have missed it.');
savepoint reaping;
select conductor.reap() as reaped \gset
select t.status::text as status_after, s.result as step_after
  from conductor.tasks t left join conductor.steps s on s.task_id = t.id and s.name = 'approval'
 where t.id = :task_id \gset
rollback to savepoint reaping;
select is(:reaped, 1, 'reap() wakes the task.');
select is(row(:'status_after', :'step_after'::jsonb)::text,
  row('queued', format('{"event": "%s", "payload": {"v": "late"}}', :'q')::jsonb)::text,
  'It is queued with the client''s event checkpointed under its wait step.');

-- Clean up the committed rows and roles.
select dblink_exec('stage', format('delete from conductor.steps s using conductor.tasks t where s.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d3 \gset
select dblink_exec('stage', format('delete from conductor.events where name = %L', :'q')) as d4 \gset
select dblink_exec('stage', format('delete from conductor.workers where id = %L', 'w1')) as d5 \gset
select dblink_disconnect('worker') as x2 \gset
select dblink_disconnect('client') as x3 \gset
select dblink_exec('stage', format('drop role %I, %I', :'wrole', :'crole')) as d6 \gset
select dblink_disconnect('stage') as x1 \gset

select * from finish();
rollback;
