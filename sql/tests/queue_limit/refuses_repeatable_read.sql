-- A claim a queue cap applies to refuses REPEATABLE READ (QC106, naming it): its count of
-- the queue's running tasks, taken after the cap row's lock, must see the claims committed
-- before it, which a transaction snapshot would not. A claim of another queue is not
-- concerned. The tasks and the cap are committed through a second session and deleted at
-- the end.
begin;
select plan(3);
\ir ../helpers.psql
create extension if not exists dblink;

select 'ql-rr-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('rr', conductor_tests.conninfo()) as c2 \gset
select dblink_exec('stage', format(
  'do $s$ begin
     perform conductor.enqueue(''k'', ''{}'', %L);
     perform conductor.enqueue(''k'', ''{}'', %L);
     perform conductor.set_queue_limit(%L, 5);
   end $s$', :'q', :'q' || '-free', :'q')) as staged \gset

select dblink_exec('rr', 'begin isolation level repeatable read') as b \gset
select is((select e from dblink_exec('rr', format(
  'select * from conductor.claim(''rr'', array[%L], 10)', :'q'), false) e), 'ERROR',
  'A claim of a capped queue inside REPEATABLE READ fails.');
select alike(dblink_error_message('rr'), '%claim needs READ COMMITTED to honour queue caps, not repeatable read%',
  'It says why (QC106).');
select dblink_exec('rr', 'rollback') as r \gset
select dblink_exec('rr', 'begin isolation level repeatable read') as b2 \gset
select is((select n from dblink('rr', format(
  'select count(*) from conductor.claim(''rr'', array[%L], 10)', :'q' || '-free')) as r(n bigint)), 1::bigint,
  'A claim of an uncapped queue inside REPEATABLE READ goes on.');
select dblink_exec('rr', 'rollback') as r2 \gset

select dblink_exec('stage', format('delete from conductor.tasks where queue in (%L, %L)', :'q', :'q' || '-free')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.queue_limits where queue = %L', :'q')) as d2 \gset
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('rr') as x2 \gset

select * from finish();
rollback;
