-- Two sessions claim keyed tasks at once: while one session's claim of a key is
-- uncommitted, the other gets no task of that key (it skips the key's lock) but
-- still gets the tasks of other keys; after the first commits, the key is busy
-- until its task finishes. The tasks are committed through a third session and
-- deleted at the end.
begin;
select plan(4);
\ir ../helpers.psql
create extension if not exists dblink;

select 'race-ckey-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('holder', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('other', conductor_tests.conninfo()) as c3 \gset

-- three tasks of key A, one of key B, in that order
select dblink_exec('stage', format(
  'do $s$ begin
     perform conductor.enqueue(''k'', jsonb_build_object(''n'', n), %L, concurrency_key => ''A'')
        from generate_series(1, 3) n;
     perform conductor.enqueue(''k'', ''{}'', %L, concurrency_key => ''B'');
   end $s$', :'q', :'q')) as staged \gset

select dblink_exec('holder', 'begin') as b \gset
create temp table held as
select * from dblink('holder', format(
  'select task_id, (select concurrency_key from conductor.tasks where id = task_id) from conductor.claim(''holder'', array[%L], 1)', :'q'))
  as h(task_id bigint, concurrency_key text);

select dblink_exec('other', 'set lock_timeout = ''2s''') as s \gset
create temp table other_got as
select * from dblink('other', format(
  'select task_id, (select concurrency_key from conductor.tasks where id = task_id) from conductor.claim(''other'', array[%L], 10)', :'q'))
  as o(task_id bigint, concurrency_key text);

select results_eq($$select concurrency_key from held$$, $$values ('A'::text)$$,
  'The first session claims the first task of key A and keeps its transaction open.');
select results_eq($$select concurrency_key from other_got$$, $$values ('B'::text)$$,
  'Meanwhile the second session gets key B only: key A is being claimed elsewhere.');

select dblink_exec('holder', 'commit') as c \gset
select is_empty(format('select * from dblink(%L, %L) as o(task_id bigint)', 'other',
                       format('select task_id from conductor.claim(%L, array[%L], 10)', 'other', :'q')),
  'After the first commits, key A has a running task, so nothing of key A is claimed.');
select is((select count(*)::int from dblink('stage', format(
  'select 1 from conductor.tasks where queue = %L and concurrency_key = ''A'' and status = ''running''', :'q'))
  as r(x int)), 1, 'Exactly one task of key A is running.');

select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('holder') as x2 \gset
select dblink_disconnect('other') as x3 \gset

select * from finish();
rollback;
