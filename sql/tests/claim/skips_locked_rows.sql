-- Two sessions claim at once: the second skips the rows the first holds (FOR UPDATE SKIP LOCKED),
-- gets the others, and does not wait. The second session is a dblink connection; the tasks are
-- committed through a third one (the test's own transaction is invisible to other sessions) and
-- deleted again at the end.
begin;
select plan(5);
\ir ../helpers.psql
create extension if not exists dblink;

select 'race-claim-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('holder', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('other', conductor_tests.conninfo()) as c3 \gset

select dblink_exec('stage', format(
  'do $s$ begin perform conductor.enqueue(''k'', jsonb_build_object(''n'', n), %L) from generate_series(1, 4) n; end $s$',
  :'q')) as staged \gset

-- The holder claims two tasks in an open transaction and keeps their row locks.
select dblink_exec('holder', 'begin') as b \gset
create temp table held as
select * from dblink('holder', format('select task_id from conductor.claim(''holder'', array[%L], 2)', :'q'))
  as h(task_id bigint);

-- The other session must not wait for them: it would hit the lock_timeout.
select dblink_exec('other', 'set lock_timeout = ''2s''') as s \gset
create temp table other_got as
select * from dblink('other', format('select task_id from conductor.claim(''other'', array[%L], 10)', :'q'))
  as o(task_id bigint);

select is((select count(*) from held), 2::bigint, 'The first session claims two tasks and holds their rows.');
select is((select count(*) from other_got), 2::bigint,
  'The second session, claiming ten, gets the two others without waiting.');
select is_empty($$select task_id from held intersect select task_id from other_got$$,
  'No task goes to both sessions.');

select dblink_exec('holder', 'commit') as c \gset
select is_empty(format('select * from dblink(%L, %L) as o(task_id bigint)', 'other',
                       format('select task_id from conductor.claim(%L, array[%L], 10)', 'other', :'q')),
  'After the first commits, every task is running: nothing is left to claim.');
select results_eq(
  format($$select claimed_by, count(*) from conductor.tasks where queue = %L group by claimed_by order by claimed_by$$, :'q'),
  $$values ('holder'::text, 2::bigint), ('other'::text, 2::bigint)$$,
  'Each task is held by the session that claimed it.');

-- Clean up the committed rows.
select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('holder') as x2 \gset
select dblink_disconnect('other') as x3 \gset

select * from finish();
rollback;
