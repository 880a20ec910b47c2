-- emit_event and a suspend on the same event serialise on the event's advisory lock: an emit
-- sent while another session's suspend is uncommitted waits for it, then sees the waiter and
-- wakes it with the checkpoint, so the wake-up is not lost. Three dblink sessions: 'stage'
-- commits the task and cleans up, 'waiter' suspends in an open transaction, 'emitter' emits.
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;

select 'race-emit-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('waiter', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('emitter', conductor_tests.conninfo()) as c3 \gset

select t as task_id from dblink('stage', format('select conductor.enqueue(''k'', ''{}'', %L)', :'q')) as r(t bigint) \gset
select a as attempt_id from dblink('stage', format('select attempt_id from conductor.claim(''w1'', array[%L])', :'q')) as r(a bigint) \gset
select pid as emitter_pid from dblink('emitter', 'select pg_backend_pid()') as r(pid int) \gset

select dblink_exec('waiter', 'begin') as b \gset
select is((select s from dblink('waiter', format('select state from conductor.suspend(%s, ''approval'', ''event'', %L)', :attempt_id, :'q'))
            as r(s text)), 'waiting',
  'The waiter''s suspend returns waiting inside its open transaction.');

select dblink_send_query('emitter', format('select conductor.emit_event(%L, ''{"go": 1}'')', :'q')) as sent \gset
-- wait (up to 10 s) until the emitter blocks on a lock, rather than sleeping a fixed time
select conductor_tests.await_lock_wait(:emitter_pid) as lock_wait \gset
select is((select wait_event from pg_stat_activity where pid = :emitter_pid), 'advisory',
  'The emit waits on the event''s advisory lock, held by the uncommitted suspend.');
select is(dblink_is_busy('emitter'), 1, 'The emit has not finished while the suspend is uncommitted.');

select dblink_exec('waiter', 'commit') as c \gset
select is((select n from dblink_get_result('emitter') as r(n int)), 1,
  'Once the suspend commits, the emit goes on and wakes the waiter.');
select * from dblink_get_result('emitter') as r(n int);  -- the end of the async query

select results_eq(format($$select * from dblink('stage', %L) as r(status text, step jsonb)$$,
    format('select t.status::text, s.result from conductor.tasks t left join conductor.steps s on s.task_id = t.id and s.name = ''approval'' where t.id = %s', :task_id)),
  format($$values ('queued'::text, '{"event": "%s", "payload": {"go": 1}}'::jsonb)$$, :'q'),
  'The task is queued again with the event checkpointed under its wait step.');
select is((select o from dblink('stage', format('select outcome from conductor.attempts where id = %s', :attempt_id)) as r(o text)),
  'suspended', 'The waiter''s attempt ended suspended.');

-- Clean up the committed rows.
select dblink_exec('stage', format('delete from conductor.steps s using conductor.tasks t where s.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d3 \gset
select dblink_exec('stage', format('delete from conductor.events where name = %L', :'q')) as d4 \gset
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('waiter') as x2 \gset
select dblink_disconnect('emitter') as x3 \gset

select * from finish();
rollback;
