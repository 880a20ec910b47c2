-- The race of a send and a wait: a worker's wait_update in an open transaction and a client's
-- send_update of that update meanwhile. The send waits for nothing (no task row lock), sees no
-- waiter and wakes nobody; the wait read before the send committed and parks. Each missed the
-- other: the update's event is pending, and reap() wakes the run with the update checkpointed,
-- as the send would have. Sessions: 'stage' (setup, cleanup), 'waiter' (a worker login),
-- 'sender' (a client login).
begin;
select plan(5);
\ir ../helpers.psql
create extension if not exists dblink;

select 'update-race-' || pg_backend_pid() as q, 't_uw_' || pg_backend_pid() as wrole,
       't_uc_' || pg_backend_pid() as crole \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_worker', :'wrole')) as r1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_client', :'crole')) as r2 \gset
select dblink_connect('waiter', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'wrole')) as c2 \gset
select dblink_connect('sender', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'crole')) as c3 \gset
select dblink_exec('sender', 'set lock_timeout = ''2s''') as l \gset

select t as task_id from dblink('stage', format('select conductor.enqueue(''k'', ''{}'', %L)', :'q')) as r(t bigint) \gset
select a as attempt_id from dblink('waiter', format('select attempt_id from conductor.claim(''w-%s'', array[%L])', pg_backend_pid(), :'q')) as r(a bigint) \gset

select dblink_exec('waiter', 'begin') as b \gset
select is((select s from dblink('waiter', format('select state from conductor.wait_update(%s, ''update:ask'', ''ask'')', :attempt_id))
            as r(s text)), 'waiting', 'The worker''s wait returns waiting inside its open transaction.');
select u as update_id from dblink('sender', format('select conductor.send_update(%s, ''ask'', ''{"q": 1}'')', :task_id)) as r(u bigint) \gset
select dblink_exec('waiter', 'commit') as c \gset
select is((select status::text from conductor.tasks where id = :task_id), 'waiting',
  'Each missed the other: the send returned at once and the run waits for an update that was sent.');

savepoint reaping;
select conductor.reap() as reaped \gset
select t.status::text as status_after, s.result->'payload' as step_after
  from conductor.tasks t left join conductor.steps s on s.task_id = t.id and s.name = 'update:ask'
 where t.id = :task_id \gset
rollback to savepoint reaping;

select is(:reaped, 1, 'reap() wakes the run.');
select is(:'status_after'::text, 'queued', 'The run is queued again.');
select is(:'step_after'::jsonb, format('{"update_id": %s, "name": "ask", "payload": {"q": 1}}', :update_id)::jsonb,
  'Its wait step holds the update, as the send checkpoints it.');

select dblink_exec('stage', format('delete from conductor.updates u using conductor.tasks t where u.task_id = t.id and t.queue = %L', :'q')) as d0 \gset
select dblink_exec('stage', format('delete from conductor.steps s using conductor.tasks t where s.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d3 \gset
select dblink_exec('stage', format('delete from conductor.events where name like %L', 'conductor.update:' || :task_id || ':%')) as d4 \gset
select dblink_exec('stage', format('delete from conductor.workers where id = %L', 'w-' || pg_backend_pid())) as d5 \gset
select dblink_disconnect('waiter') as x2 \gset
select dblink_disconnect('sender') as x3 \gset
select dblink_exec('stage', format('drop role %I, %I', :'wrole', :'crole')) as d6 \gset
select dblink_disconnect('stage') as x1 \gset

select * from finish();
rollback;
