-- Two sessions race for a capped queue's last slots: together they never start more than
-- the cap. A cap of 3 with 10 tasks: the first session claims 2 and keeps its transaction
-- open; the second's claim of 10 waits on the cap row the first holds (it picked other
-- tasks, SKIP LOCKED), then, once the first commits, counts its 2 running and starts 1.
-- The tasks are committed through a third session and deleted at the end.
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;

select 'ql-race-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('first', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('second', conductor_tests.conninfo()) as c3 \gset
select pid as second_pid from dblink('second', 'select pg_backend_pid()') as p(pid integer) \gset

select dblink_exec('stage', format(
  'do $s$ begin
     perform conductor.enqueue(''k'', jsonb_build_object(''n'', n), %L) from generate_series(1, 10) n;
     perform conductor.set_queue_limit(%L, 3);
   end $s$', :'q', :'q')) as staged \gset

select dblink_exec('first', 'begin') as b \gset
select count(*) as first_got from dblink('first', format(
  'select task_id from conductor.claim(''first'', array[%L], 2)', :'q')) as f(task_id bigint) \gset
select dblink_send_query('second', format(
  'select task_id from conductor.claim(''second'', array[%L], 10)', :'q')) as sent \gset

select is(:first_got::bigint, 2::bigint, 'The first session starts 2 and keeps its transaction open.');
select ok(conductor_tests.await_lock_wait(:second_pid),
  'The second session''s claim waits on the cap row the first holds.');
select dblink_exec('first', 'commit') as c \gset
select count(*) as second_got from dblink_get_result('second') as s(task_id bigint) \gset
select count(*) as done from dblink_get_result('second') as s(task_id bigint) \gset

select is(:second_got::bigint, 1::bigint, 'Once the first commits, the second starts the 1 slot left, not 10.');
select is((select n from dblink('stage', format(
  'select count(*) from conductor.tasks where queue = %L and status = ''running''', :'q')) as r(n bigint)), 3::bigint,
  'Together they run 3: the cap.');
select is((select n from dblink('second', format(
  'select count(*) from conductor.claim(''second'', array[%L], 10)', :'q')) as r(n bigint)), 0::bigint,
  'A further claim starts nothing.');
select is((select n from dblink('stage', format(
  'select count(*) from conductor.tasks where queue = %L and status = ''queued'' and attempt = 0', :'q')) as r(n bigint)),
  7::bigint, 'The other 7 are queued, never attempted.');

select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.queue_limits where queue = %L', :'q')) as d3 \gset
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('first') as x2 \gset
select dblink_disconnect('second') as x3 \gset

select * from finish();
rollback;
