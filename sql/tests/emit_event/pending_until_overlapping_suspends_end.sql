-- The reaper does not clear a pending event while a suspend that may have missed it is still
-- open: passes while the suspend's transaction runs wake nothing and leave the event pending
-- (its horizon noted); once the suspend commits, the next pass wakes the task and clears
-- pending. Sessions: 'stage', 'waiter' (a worker login, its transaction left open), 'emitter'.
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;

select 'race-horizon-' || pg_backend_pid() as q, 't_w_' || pg_backend_pid() as wrole \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_worker', :'wrole')) as r1 \gset
select dblink_connect('waiter', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'wrole')) as c2 \gset
select dblink_connect('emitter', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'wrole')) as c3 \gset
select dblink_exec('emitter', 'set lock_timeout = ''2s''') as l \gset

select t as task_id from dblink('stage', format('select conductor.enqueue(''k'', ''{}'', %L)', :'q')) as r(t bigint) \gset
select a as attempt_id from dblink('waiter', format('select attempt_id from conductor.claim(''w1'', array[%L])', :'q')) as r(a bigint) \gset
select dblink_exec('waiter', 'begin') as b \gset
select s as state from dblink('waiter', format('select state from conductor.suspend(%s, ''approval'', ''event'', %L)', :attempt_id, :'q'))
  as r(s text) \gset
select n as woken_by_emit from dblink('emitter', format('select conductor.emit_event(%L, ''{}'')', :'q')) as r(n int) \gset

-- reap in this session, in a savepoint rolled back before the committed rows are cleaned up
-- (pgTAP's results live in this transaction too: the values are asserted after it)
savepoint reaping;
select conductor.reap() as first_pass \gset
select (pending, pending_horizon is not null)::text as after_first from conductor.events where name = :'q' \gset
select conductor.reap() as second_pass \gset
select pending as after_second from conductor.events where name = :'q' \gset
select dblink_exec('waiter', 'commit') as c \gset
select conductor.reap() as third_pass \gset
select status::text as status_after from conductor.tasks where id = :task_id \gset
select pending as after_third from conductor.events where name = :'q' \gset
rollback to savepoint reaping;

select is(:first_pass + :second_pass, 0, 'Passes while the suspend is open wake nothing (its wait is not committed).');
select is(:'after_first'::text, '(t,t)', 'The first pass notes the horizon.');
select is(:'after_second'::boolean, true, 'The event stays pending while a transaction older than the horizon runs.');
select is(:third_pass, 1, 'Once the suspend committed, the next pass wakes the task...');
select is(:'status_after'::text, 'queued', '... queued again ...');
select is(:'after_third'::boolean, false, '... and clears pending: no transaction older than the horizon runs.');

-- Clean up the committed rows and roles.
select dblink_exec('stage', format('delete from conductor.steps s using conductor.tasks t where s.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d3 \gset
select dblink_exec('stage', format('delete from conductor.events where name = %L', :'q')) as d4 \gset
select dblink_exec('stage', format('delete from conductor.workers where id = %L', 'w1')) as d5 \gset
select dblink_disconnect('waiter') as x2 \gset
select dblink_disconnect('emitter') as x3 \gset
select dblink_exec('stage', format('drop role %I', :'wrole')) as d6 \gset
select dblink_disconnect('stage') as x1 \gset

select * from finish();
rollback;
