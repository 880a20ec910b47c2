-- A deploy under waiting runs: a worker still on v1 and a worker on v2 (which cannot replay
-- v1) claim from one queue at once. Neither waits for the other's locked rows, no task goes
-- to both, every task recorded on v1 goes to the v1 worker, and each fresh task records the
-- version of the worker that took it. The sessions are dblink connections as
-- conductor_worker logins; the tasks are committed through a third one and deleted at the end.
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;

select 'cv-race-' || pg_backend_pid() as q, 'cv_race_worker_' || pg_backend_pid() as wrole \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_worker', :'wrole')) as r1 \gset
select dblink_connect('v2', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'wrole')) as c2 \gset
select dblink_connect('v1', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'wrole')) as c3 \gset

-- R1 F1 R2 F2 R3 F3 in claim order: R tasks were started on v1 (and wait no more), F are fresh
select dblink_exec('stage', format(
  'do $s$ begin perform conductor.enqueue(''k'', jsonb_build_object(''n'', n), %L) from generate_series(1, 6) n; end $s$',
  :'q')) as staged \gset
select dblink_exec('stage', format(
  'update conductor.tasks set code_version = ''v1'' where queue = %L and (payload->>''n'')::int %% 2 = 1', :'q')) as u \gset

-- The v2 worker claims two in an open transaction and keeps their row locks.
select dblink_exec('v2', 'begin') as b \gset
create temp table v2_got as
select * from dblink('v2', format(
  'select task_id, code_version from conductor.claim(''w-v2'', array[%L], 2, code_versions => array[''v2''])', :'q'))
  as n(task_id bigint, code_version text);
-- The v1 worker must not wait for them: it would hit the lock_timeout.
select dblink_exec('v1', 'set lock_timeout = ''2s''') as s \gset
create temp table v1_got as
select * from dblink('v1', format(
  'select task_id, code_version from conductor.claim(''w-v1'', array[%L], 10, code_versions => array[''v1''])', :'q'))
  as o(task_id bigint, code_version text);
select dblink_exec('v2', 'commit') as c \gset

select results_eq($$select code_version from v2_got order by task_id$$, $$values ('v2'), ('v2')$$,
  'The v2 worker took the first two fresh tasks (F1, F2) and recorded v2 on them, stepping over R1 and R2.');
select results_eq($$select code_version from v1_got order by task_id$$, $$values ('v1'), ('v1'), ('v1'), ('v1')$$,
  'The v1 worker took R1, R2, R3 and F3 without waiting for the v2 worker''s locks.');
select is((select count(*) from v1_got v join conductor.tasks t on t.id = v.task_id
            where (t.payload->>'n')::int % 2 = 1), 3::bigint,
  'Every task recorded on v1 went to the v1 worker.');
select is_empty($$select task_id from v2_got intersect select task_id from v1_got$$, 'No task went to both workers.');
select is((select count(*) from v2_got) + (select count(*) from v1_got), 6::bigint, 'Every task was claimed once.');
select is((select t.code_version from conductor.tasks t join v1_got v on v.task_id = t.id
            where (t.payload->>'n')::int = 6), 'v1', 'F3, fresh, recorded the v1 worker''s version.');

-- Clean up the committed rows.
select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
select dblink_disconnect('v2') as x2 \gset
select dblink_disconnect('v1') as x3 \gset
select dblink_exec('stage', format('drop role %I', :'wrole')) as r2 \gset
select dblink_disconnect('stage') as x1 \gset

select * from finish();
rollback;
