-- The reverse order: an emit committed in one session before another session suspends on the
-- event. The suspend, reading after the emit committed, sees the event and is 'ready' with it:
-- the task never waits. (An emit still uncommitted when a suspend starts:
-- open_emit_stalls_no_suspend.sql.)
begin;
select plan(3);
\ir ../helpers.psql
create extension if not exists dblink;

select 'race-emit-first-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('waiter', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('emitter', conductor_tests.conninfo()) as c3 \gset

select t as task_id from dblink('stage', format('select conductor.enqueue(''k'', ''{}'', %L)', :'q')) as r(t bigint) \gset
select a as attempt_id from dblink('stage', format('select attempt_id from conductor.claim(''w1'', array[%L])', :'q')) as r(a bigint) \gset

select is((select n from dblink('emitter', format('select conductor.emit_event(%L, ''{"v": "early"}'')', :'q')) as r(n int)), 0,
  'The emit, committed first, wakes nobody.');
select results_eq(format($$select * from dblink('waiter', %L) as r(state text, result jsonb)$$,
    format('select state, result from conductor.suspend(%s, ''approval'', ''event'', %L)', :attempt_id, :'q')),
  format($$values ('ready'::text, '{"event": "%s", "payload": {"v": "early"}}'::jsonb)$$, :'q'),
  'The later suspend in another session is ready with the event.');
select is((select s from dblink('stage', format('select status::text from conductor.tasks where id = %s', :task_id)) as r(s text)),
  'running', 'The task never waited.');

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
