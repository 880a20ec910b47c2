-- Two claimers race for the last slot of a key whose limit is 2 and which has one task
-- running: while the first session's claim of the key is uncommitted, the second gets no
-- task of that key (it skips the key's slot row) but still gets other keys' tasks; after
-- the first commits, the second sees two running and takes none of the key. Never three.
-- The tasks are committed through a third session and deleted at the end.
begin;
select plan(5);
\ir ../helpers.psql
create extension if not exists dblink;

select 'race-climit-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('holder', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('other', conductor_tests.conninfo()) as c3 \gset

-- four tasks of key A (limit 2), one of key B; the first of A runs already
select dblink_exec('stage', format(
  'do $s$ begin
     perform conductor.enqueue(''k'', jsonb_build_object(''n'', n), %L, concurrency_key => ''A'', concurrency_limit => 2)
        from generate_series(1, 4) n;
     perform conductor.enqueue(''k'', ''{}'', %L, concurrency_key => ''B'');
     perform conductor.claim(''stage'', array[%L], 1);
   end $s$', :'q', :'q', :'q')) as staged \gset

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
  'The first session takes the last slot of key A (one running, limit 2) and keeps its transaction open.');
select results_eq($$select concurrency_key from other_got$$, $$values ('B'::text)$$,
  'Meanwhile the second session gets key B only: key A is being claimed elsewhere.');

select dblink_exec('holder', 'commit') as c \gset
select is_empty(format('select * from dblink(%L, %L) as o(task_id bigint)', 'other',
                       format('select task_id from conductor.claim(%L, array[%L], 10)', 'other', :'q')),
  'After the first commits, key A has two running, its limit, so nothing of key A is claimed.');
select is((select count(*)::int from dblink('stage', format(
  'select 1 from conductor.tasks where queue = %L and concurrency_key = ''A'' and status = ''running''', :'q'))
  as r(x int)), 2, 'Exactly two tasks of key A are running.');
select is((select count(*)::int from dblink('stage', format(
  'select 1 from conductor.tasks where queue = %L and concurrency_key = ''A'' and status = ''queued''', :'q'))
  as r(x int)), 2, 'The other two wait.');

select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('holder') as x2 \gset
select dblink_disconnect('other') as x3 \gset

select * from finish();
rollback;
