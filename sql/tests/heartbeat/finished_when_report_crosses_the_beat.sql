-- A heartbeat that meets a report committing at the same moment answers 'finished', never
-- 'lost': session 'reporter' completes the attempt and holds its transaction open; session
-- 'beater' heartbeats it and waits on the task row; once the report commits, the beat's
-- update skips the row, and its answer must come from a snapshot that sees the report
-- (in READ COMMITTED the statement's own snapshot still shows the attempt running).
begin;
select plan(5);
\ir ../helpers.psql
create extension if not exists dblink;

select 'hb-cross-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('reporter', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('beater', conductor_tests.conninfo()) as c3 \gset

select t as task_id from dblink('stage', format('select conductor.enqueue(''k'', ''{}'', %L)', :'q')) as r(t bigint) \gset
select a as attempt_id from dblink('stage', format('select attempt_id from conductor.claim(%L, array[%L])', :'q', :'q')) as r(a bigint) \gset
select pid as beater_pid from dblink('beater', 'select pg_backend_pid()') as r(pid int) \gset

select dblink_exec('reporter', 'begin') as b \gset
select is((select count(*) from dblink('reporter',
             format('select * from conductor.complete_many(array[%s]::bigint[], array[''{"ok": 1}'']::jsonb[])', :attempt_id))
             as r(attempt_id bigint, task_id bigint, state text)), 0::bigint,
  'The report is stored, in a transaction still open.');

select dblink_send_query('beater', format('select attempt_id, task_id, state from conductor.heartbeat(%L, array[%s]::bigint[])',
                                          :'q', :attempt_id)) as sent \gset
select ok(conductor_tests.await_lock_wait(:beater_pid), 'The heartbeat waits on the task row the report holds.');

select dblink_exec('reporter', 'commit') as c \gset
select results_eq(
  $$select * from dblink_get_result('beater') as r(attempt_id bigint, task_id bigint, state text)$$,
  format($$values (%s::bigint, %s::bigint, 'finished'::text)$$, :attempt_id, :task_id),
  'Once the report commits, the heartbeat answers the attempt finished, not lost.');
select * from dblink_get_result('beater') as r(attempt_id bigint, task_id bigint, state text);  -- the end of the async query

select results_eq(format($$select * from dblink('stage', %L) as r(status text, lease timestamptz)$$,
    format('select status::text, lease_expires_at from conductor.tasks where id = %s', :task_id)),
  $$values ('succeeded'::text, NULL::timestamptz)$$,
  'The task stays succeeded without a lease: the beat changed nothing.');
select is((select o from dblink('stage', format('select outcome from conductor.attempts where id = %s', :attempt_id)) as r(o text)),
  'succeeded', 'The attempt is succeeded.');

-- Clean up the committed rows.
select dblink_exec('stage', format('delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.workers where id = %L', :'q')) as d3 \gset
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('reporter') as x2 \gset
select dblink_disconnect('beater') as x3 \gset

select * from finish();
rollback;
