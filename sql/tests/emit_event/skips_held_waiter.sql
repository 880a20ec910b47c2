-- emit_event never waits for a waiter's row: one that a client's open transaction holds
-- (here a cancel it has not committed) is skipped, the others are woken at once. v0.2.0
-- waited for that transaction. When the client rolls its cancel back, the skipped task still
-- waits for an event that exists, and reap() wakes it with the same checkpoint: the lock
-- order of functions/runs (waiters SKIP LOCKED) holds. Sessions: 'stage', 'client' (a client
-- login holding the row), 'emitter' (a worker login: a task emitting an event).
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;

select 'race-held-waiter-' || pg_backend_pid() as q, 't_w_' || pg_backend_pid() as wrole,
       't_c_' || pg_backend_pid() as crole \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_worker', :'wrole')) as r1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_client', :'crole')) as r2 \gset
select dblink_connect('client', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'crole')) as c2 \gset
select dblink_connect('emitter', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'wrole')) as c3 \gset
select dblink_exec('emitter', 'set lock_timeout = ''2s''') as l \gset

-- two tasks, each parked waiting for the event (committed)
select t as t1 from dblink('stage', format('select conductor.enqueue(''k'', ''{}'', %L)', :'q')) as r(t bigint) \gset
select t as t2 from dblink('stage', format('select conductor.enqueue(''k'', ''{}'', %L)', :'q')) as r(t bigint) \gset
select count(*) as parked from dblink('stage', format(
  'select s.state from conductor.claim(''w1'', array[%L], 2) c, conductor.suspend(c.attempt_id, ''approval'', ''event'', %L) s',
  :'q', :'q')) as r(state text) \gset

select dblink_exec('client', 'begin') as b \gset
select is((select n from dblink('client', format('select conductor.cancel(%s)', :t1)) as r(n int)), 1,
  'A client cancels the first waiter inside a transaction it leaves open.');
select is((select n from dblink('emitter', format('select conductor.emit_event(%L, ''{"go": 2}'')', :'q')) as r(n int)), 1,
  'emit_event does not wait for the held row: it wakes the other waiter at once.');
select is((select s from dblink('stage', format('select status::text from conductor.tasks where id = %s', :t2)) as r(s text)),
  'queued', 'The other waiter is queued.');
select dblink_exec('client', 'rollback') as c \gset

select is((select status::text from conductor.tasks where id = :t1), 'waiting',
  'The client rolled back: the skipped task still waits, for an event that exists.');
savepoint reaping;
select conductor.reap() as reaped \gset
select t.status::text as status_after, s.result as step_after
  from conductor.tasks t left join conductor.steps s on s.task_id = t.id and s.name = 'approval'
 where t.id = :t1 \gset
rollback to savepoint reaping;
select is(:reaped, 1, 'reap() wakes it.');
select is(row(:'status_after', :'step_after'::jsonb)::text,
  row('queued', format('{"event": "%s", "payload": {"go": 2}}', :'q')::jsonb)::text,
  'It is queued with the event checkpointed, as the emit checkpointed the other.');

-- Clean up the committed rows and roles.
select dblink_exec('stage', format('delete from conductor.steps s using conductor.tasks t where s.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d3 \gset
select dblink_exec('stage', format('delete from conductor.events where name = %L', :'q')) as d4 \gset
select dblink_exec('stage', format('delete from conductor.workers where id = %L', 'w1')) as d5 \gset
select dblink_disconnect('client') as x2 \gset
select dblink_disconnect('emitter') as x3 \gset
select dblink_exec('stage', format('drop role %I, %I', :'wrole', :'crole')) as d6 \gset
select dblink_disconnect('stage') as x1 \gset

select * from finish();
rollback;
