-- The race the event's advisory lock used to close, now closed by the reaper: a worker's
-- suspend on an event in an open transaction, and a client's emit of it meanwhile. The emit
-- does not wait for the suspend (no lock: v0.2.0 made it wait on the event's advisory lock),
-- sees no waiter and wakes nobody; the suspend read before the emit committed and parks. Each
-- missed the other: the event is pending, and reap() wakes the task with exactly what
-- emit_event checkpoints. Sessions: 'stage' (setup, cleanup), 'waiter' (a worker login),
-- 'emitter' (a client login).
begin;
select plan(9);
\ir ../helpers.psql
create extension if not exists dblink;

select 'race-missed-' || pg_backend_pid() as q, 't_w_' || pg_backend_pid() as wrole,
       't_c_' || pg_backend_pid() as crole \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_worker', :'wrole')) as r1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_client', :'crole')) as r2 \gset
select dblink_connect('waiter', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'wrole')) as c2 \gset
select dblink_connect('emitter', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'crole')) as c3 \gset
-- v0.2.0 made the emit wait here: fail in 2 s instead of hanging
select dblink_exec('emitter', 'set lock_timeout = ''2s''') as l \gset

select t as task_id from dblink('stage', format('select conductor.enqueue(''k'', ''{}'', %L)', :'q')) as r(t bigint) \gset
select a as attempt_id from dblink('waiter', format('select attempt_id from conductor.claim(''w1'', array[%L])', :'q')) as r(a bigint) \gset

select dblink_exec('waiter', 'begin') as b \gset
select is((select s from dblink('waiter', format('select state from conductor.suspend(%s, ''approval'', ''event'', %L)', :attempt_id, :'q'))
            as r(s text)), 'waiting',
  'The worker''s suspend returns waiting inside its open transaction.');
select is((select n from dblink('emitter', format('select conductor.emit_event(%L, ''{"go": 1}'')', :'q')) as r(n int)), 0,
  'The client''s emit returns at once and wakes nobody: it does not wait for the uncommitted suspend.');
select dblink_exec('waiter', 'commit') as c \gset

select is((select status::text from conductor.tasks where id = :task_id), 'waiting',
  'Each missed the other: the task waits for an event that exists.');
select is((select pending from conductor.events where name = :'q'), true, 'The new event is pending.');

-- reap in this session, in a savepoint rolled back before the committed rows are cleaned up
-- (pgTAP's results live in this transaction too: the values are asserted after it)
savepoint reaping;
select conductor.reap() as reaped \gset
select t.status::text as status_after, s.result as step_after
  from conductor.tasks t left join conductor.steps s on s.task_id = t.id and s.name = 'approval'
 where t.id = :task_id \gset
select outcome as outcome_after from conductor.attempts where id = :attempt_id \gset
select (pending, pending_horizon is null)::text as pending_after_one from conductor.events where name = :'q' \gset
select conductor.reap() as r2 \gset
rollback to savepoint reaping;

select is(:reaped, 1, 'reap() wakes the task.');
select is(row(:'status_after', :'step_after'::jsonb)::text,
  row('queued', format('{"event": "%s", "payload": {"go": 1}}', :'q')::jsonb)::text,
  'It is queued with {"event", "payload"} checkpointed under its wait step, as emit_event checkpoints.');
select is(:'outcome_after'::text, 'suspended', 'The worker''s attempt ended suspended.');
select is(:'pending_after_one'::text, '(f,t)',
  'The same pass clears pending: no transaction older than the event''s horizon runs, no waiter is left.');
select is(:r2, 0, 'The next reap has nothing to do.');

-- Clean up the committed rows and roles.
select dblink_exec('stage', format('delete from conductor.steps s using conductor.tasks t where s.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d3 \gset
select dblink_exec('stage', format('delete from conductor.events where name = %L', :'q')) as d4 \gset
select dblink_exec('stage', format('delete from conductor.workers where id = %L', 'w1')) as d5 \gset
select dblink_disconnect('waiter') as x2 \gset
select dblink_disconnect('emitter') as x3 \gset
select dblink_exec('stage', format('drop role %I, %I', :'wrole', :'crole')) as d6 \gset
select dblink_disconnect('stage') as x1 \gset

select * from finish();
rollback;
