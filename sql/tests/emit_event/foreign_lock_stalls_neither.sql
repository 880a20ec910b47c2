-- A login with no Conductor grant at all holds the event's old advisory key
-- (pg_advisory_lock(hashtextextended('conductor:event:' || name, 0)), which v0.2.0's
-- suspend and emit_event waited on, exclusive and shared): neither a worker's suspend nor a
-- client's emit_event waits for it, and the emit wakes the waiter.
-- Sessions: 'stage' (setup, cleanup), 'nobody' (CONNECT only), 'worker', 'client'.
begin;
select plan(5);
\ir ../helpers.psql
create extension if not exists dblink;

select 'race-foreign-' || pg_backend_pid() as q, 't_n_' || pg_backend_pid() as nrole,
       't_w_' || pg_backend_pid() as wrole, 't_c_' || pg_backend_pid() as crole \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_exec('stage', format('create role %I login', :'nrole')) as r0 \gset
select dblink_exec('stage', format('create role %I login in role conductor_worker', :'wrole')) as r1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_client', :'crole')) as r2 \gset
select dblink_connect('nobody', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'nrole')) as c2 \gset
select dblink_connect('worker', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'wrole')) as c3 \gset
select dblink_connect('client', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'crole')) as c4 \gset
select dblink_exec('worker', 'set lock_timeout = ''2s''') as l1 \gset
select dblink_exec('client', 'set lock_timeout = ''2s''') as l2 \gset

select is((select h from dblink('nobody', format('select pg_try_advisory_lock(hashtextextended(%L, 0))', 'conductor:event:' || :'q'))
            as r(h boolean)), true,
  'The login with no grant takes the event''s old key.');
select t as task_id from dblink('stage', format('select conductor.enqueue(''k'', ''{}'', %L)', :'q')) as r(t bigint) \gset
select a as attempt_id from dblink('worker', format('select attempt_id from conductor.claim(''w1'', array[%L])', :'q')) as r(a bigint) \gset

select is((select s from dblink('worker', format('select state from conductor.suspend(%s, ''approval'', ''event'', %L)', :attempt_id, :'q'))
            as r(s text)), 'waiting',
  'A worker''s suspend on the event does not wait for the key: it parks the task at once.');
select is((select n from dblink('client', format('select conductor.emit_event(%L, ''{"go": 1}'')', :'q')) as r(n int)), 1,
  'A client''s emit_event does not wait for the key either, and wakes the waiter.');
select results_eq(format('select t.status::text, s.result from conductor.tasks t left join conductor.steps s on s.task_id = t.id and s.name = ''approval'' where t.id = %s', :task_id),
  format($$values ('queued'::text, '{"event": "%s", "payload": {"go": 1}}'::jsonb)$$, :'q'),
  'The task is queued with the event checkpointed.');

-- the same with the key held shared (a suspend of v0.2.0 held it so)
select u from dblink('nobody', 'select pg_advisory_unlock_all()::text') as r(u text) \gset
select h2 from dblink('nobody', format('select pg_advisory_lock_shared(hashtextextended(%L, 0))::text', 'conductor:event:' || :'q' || '-2')) as r(h2 text) \gset
select is((select n from dblink('client', format('select conductor.emit_event(%L, ''{}'')', :'q' || '-2')) as r(n int)), 0,
  'An emit does not wait for the key held shared.');

-- Clean up the committed rows and roles.
select dblink_exec('stage', format('delete from conductor.steps s using conductor.tasks t where s.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d3 \gset
select dblink_exec('stage', format('delete from conductor.events where name in (%L, %L)', :'q', :'q' || '-2')) as d4 \gset
select dblink_exec('stage', format('delete from conductor.workers where id = %L', 'w1')) as d5 \gset
select dblink_disconnect('nobody') as x2 \gset
select dblink_disconnect('worker') as x3 \gset
select dblink_disconnect('client') as x4 \gset
select dblink_exec('stage', format('drop role %I, %I, %I', :'nrole', :'wrole', :'crole')) as d6 \gset
select dblink_disconnect('stage') as x1 \gset

select * from finish();
rollback;
