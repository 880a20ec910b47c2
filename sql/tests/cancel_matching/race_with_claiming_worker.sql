-- A worker claims a matching queued task while an operator cancels the queue's queued tasks:
-- cancel_matching skips the row the claim holds (SKIP LOCKED) instead of waiting, cancels the
-- rest and says how many; once the claim commits the task is running, so it no longer matches
-- and a further call leaves it alone. The tasks are committed through a second session and
-- deleted at the end; the operator's calls commit in a third.
begin;
select plan(5);
\ir ../helpers.psql
create extension if not exists dblink;

select 'bk-race-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('worker', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('operator', conductor_tests.conninfo()) as c3 \gset
select n as staged from dblink('stage', format(
  'select count(conductor.enqueue(''k'', jsonb_build_object(''n'', n), %L)) from generate_series(1, 4) n', :'q')) as s(n bigint) \gset
select min(id) as oldest from dblink('stage', format('select id from conductor.tasks where queue = %L', :'q')) as t(id bigint) \gset

select dblink_exec('worker', 'begin') as b \gset
select task_id as claimed from dblink('worker', format(
  'select task_id from conductor.claim(''bk-race-w'', array[%L], 1)', :'q')) as c(task_id bigint) \gset
select is(:claimed::bigint, :oldest::bigint, 'The worker claims the oldest task and keeps its transaction open.');

select is((select n from dblink('operator', format('select conductor.cancel_matching(queue => %L, status => ''queued'')', :'q'))
  as o(n integer)), 3,
  'cancel_matching cancels the 3 it can lock, without waiting for the claimed one.');
select dblink_exec('worker', 'commit') as c \gset
select is((select n from dblink('operator', format('select conductor.cancel_matching(queue => %L, status => ''queued'')', :'q'))
  as o(n integer)), 0,
  'Once the claim commits, the claimed task is running and no longer matches.');
select is((select status::text from conductor.tasks where id = :claimed), 'running', 'The claimed task runs on, untouched.');
select is((select count(*) from conductor.tasks where queue = :'q' and status = 'cancelled'), 3::bigint,
  'The other 3 are cancelled.');

select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('worker') as x2 \gset
select dblink_disconnect('operator') as x3 \gset

select * from finish();
rollback;
