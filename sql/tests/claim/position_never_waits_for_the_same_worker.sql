-- Two connections claiming as the same worker_id (a worker with two claim
-- connections, or behind a pooler) share its remembered position
-- (conductor.claim_positions): while one claim's transaction is open, holding
-- the row it read and replaces, the other's claim goes on from the same
-- committed position, takes the next task and never waits for that row (SKIP
-- LOCKED); both positions stay, the row both read goes. The tasks are
-- committed through a third session and deleted at the end.
begin;
select plan(5);
\ir ../helpers.psql
create extension if not exists dblink;

select 'pos-same-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('holder', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('other', conductor_tests.conninfo()) as c3 \gset

select dblink_exec('stage', format(
  'do $s$ begin
     perform conductor.enqueue(''k'', jsonb_build_object(''n'', n), %L) from generate_series(1, 4) n;
     insert into conductor.claim_positions (worker_id, scope, priority, run_at, task_id, until)
       select %L, %L, t.priority, t.run_at, t.id, extract(epoch from clock_timestamp() + interval ''1 hour'')
         from conductor.tasks t where t.queue = %L order by t.id limit 1;
   end $s$', :'q', :'q', :'q', :'q')) as staged \gset
select array_agg(id order by id) as ids from dblink('stage', format(
  'select id from conductor.tasks where queue = %L', :'q')) as t(id bigint) \gset
select (:'ids'::bigint[])[2] as t2, (:'ids'::bigint[])[3] as t3 \gset

select dblink_exec('holder', 'begin') as b \gset
select results_eq(format('select * from dblink(%L, %L) as h(task_id bigint)', 'holder',
                         format('select task_id from conductor.claim(%L, array[%L], 1)', :'q', :'q')),
  format('values (%s::bigint)', :t2),
  'The first connection claims from the position (after the first task) and keeps its transaction open.');

select dblink_exec('other', 'set lock_timeout = ''2s''') as s \gset
select results_eq(format('select * from dblink(%L, %L) as o(task_id bigint)', 'other',
                         format('select task_id from conductor.claim(%L, array[%L], 1)', :'q', :'q')),
  format('values (%s::bigint)', :t3),
  'The second connection of the same worker claims the next task without waiting for the position row the first holds.');

select dblink_exec('holder', 'commit') as c \gset
select is((select count(*)::int from dblink('stage', format(
  'select 1 from conductor.claim_positions where worker_id = %L', :'q')) as r(x int)), 2,
  'Both new positions are kept');
select is((select count(*)::int from dblink('stage', format(
  'select 1 from conductor.claim_positions where worker_id = %L and task_id = %s', :'q', (:'ids'::bigint[])[1]))
  as r(x int)), 0, 'and the row both claims read is gone.');
select is((select count(*)::int from dblink('stage', format(
  'select 1 from conductor.tasks where queue = %L and status = ''running''', :'q')) as r(x int)), 2,
  'Two tasks running, none twice.');

select dblink_exec('stage', format('delete from conductor.claim_positions where worker_id = %L', :'q')) as d0 \gset
select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('holder') as x2 \gset
select dblink_disconnect('other') as x3 \gset

select * from finish();
rollback;
