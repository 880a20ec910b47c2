-- A heartbeat that meets a report in flight answers 'finished' once it committed, never
-- 'lost': session 'reporter' completes the attempt and holds its transaction open; session
-- 'beater' heartbeats it. The beat does not wait on the task row the report holds (it waits
-- on no row another transaction holds): it skips it and answers nothing, the attempt being
-- still open in what is committed. Once the report commits, a beat answers 'finished': its
-- answers come from a snapshot that sees the report.
begin;
select plan(6);
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
select ok(not conductor_tests.await_lock_wait(:beater_pid, interval '1 second'),
  'The heartbeat does not wait on the task row the report holds.');
select is_empty($$select * from dblink_get_result('beater') as r(attempt_id bigint, task_id bigint, state text)$$,
  'It answers nothing while the report is in flight: the attempt is neither finished nor lost yet.');
select count(*) as ended from dblink_get_result('beater') as r(attempt_id bigint, task_id bigint, state text) \gset

select dblink_exec('reporter', 'commit') as c \gset
select format('select attempt_id, task_id, state from conductor.heartbeat(%L, array[%s]::bigint[])',
              :'q', :attempt_id) as beat \gset
select results_eq(
  format($$select * from dblink('beater', %L) as r(attempt_id bigint, task_id bigint, state text)$$, :'beat'),
  format($$values (%s::bigint, %s::bigint, 'finished'::text)$$, :attempt_id, :task_id),
  'Once the report commits, the heartbeat answers the attempt finished, not lost.');

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
