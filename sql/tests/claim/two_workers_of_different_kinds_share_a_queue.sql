-- A rolling deploy: an old worker (kinds {A}) and a new one (kinds {A, B}) claim from one
-- queue at once. Neither waits for the other's locked rows (FOR UPDATE SKIP LOCKED), no
-- task goes to both, and every B task goes to the new worker. The sessions are dblink
-- connections; the tasks are committed through a third one and deleted at the end.
begin;
select plan(5);
\ir ../helpers.psql
create extension if not exists dblink;

select 'kinds-race-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('new', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('old', conductor_tests.conninfo()) as c3 \gset

-- B1, A1, B2, A2, A3, B3 in claim order (same priority, ids increasing)
select dblink_exec('stage', format(
  'do $s$ begin perform conductor.enqueue(k, ''{}'', %L) from unnest(array[''B'', ''A'', ''B'', ''A'', ''A'', ''B'']) k; end $s$',
  :'q')) as staged \gset

-- The new worker claims two in an open transaction and keeps their row locks.
select dblink_exec('new', 'begin') as b \gset
create temp table new_got as
select * from dblink('new', format(
  'select task_id, kind from conductor.claim(''new'', array[%L], 2, kinds => array[''A'', ''B''])', :'q'))
  as n(task_id bigint, kind text);

-- The old worker must not wait for them: it would hit the lock_timeout.
select dblink_exec('old', 'set lock_timeout = ''2s''') as s \gset
create temp table old_got as
select * from dblink('old', format(
  'select task_id, kind from conductor.claim(''old'', array[%L], 10, kinds => array[''A''])', :'q'))
  as o(task_id bigint, kind text);
select dblink_exec('new', 'commit') as c \gset
insert into new_got
select * from dblink('new', format(
  'select task_id, kind from conductor.claim(''new'', array[%L], 10, kinds => array[''A'', ''B''])', :'q'))
  as n(task_id bigint, kind text);

select results_eq($$select kind from new_got order by task_id$$, $$values ('B'), ('A'), ('B'), ('B')$$,
  'The new worker got the first two (B1, A1) and then the B tasks the old one left.');
select results_eq($$select kind from old_got order by task_id$$, $$values ('A'), ('A')$$,
  'The old worker, claiming ten, got the two free A tasks without waiting, and no B task.');
select is_empty($$select task_id from new_got intersect select task_id from old_got$$,
  'No task went to both workers.');
select is((select count(*) from new_got) + (select count(*) from old_got), 6::bigint,
  'Every task was claimed once.');
select is_empty(format($$select status from conductor.tasks where queue = %L and status <> 'running'$$, :'q'),
  'Every task is running; none ended dead.');

-- Clean up the committed rows.
select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('new') as x2 \gset
select dblink_disconnect('old') as x3 \gset

select * from finish();
rollback;
