-- Two sessions claim the tasks of one key under a per-key limit at once: together they
-- never start more than the key's bucket holds. The first claims 3 of 5 tokens and keeps
-- its transaction open; the second's claim of 10 waits on the key's bucket (it picked
-- other tasks, SKIP LOCKED), then, once the first commits, starts the 2 left. Both run on
-- the same fake time. The tasks are committed through a third session and deleted at the
-- end.
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;

select 'rk-race-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('first', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('second', conductor_tests.conninfo()) as c3 \gset
select count(dblink_exec(c, 'set conductor.fake_now = ''2032-04-01 00:00:00+00''')) as clocks
  from unnest(array['stage', 'first', 'second']) c \gset
select pid as second_pid from dblink('second', 'select pg_backend_pid()') as p(pid integer) \gset

select dblink_exec('stage', format(
  'do $s$ begin
     perform conductor.enqueue(''k'', jsonb_build_object(''n'', n), %L, rate_key => ''acme'') from generate_series(1, 20) n;
     perform conductor.set_rate_limit(queue => %L, per_second => 1, burst => 5, per_key => true);
   end $s$', :'q', :'q')) as staged \gset

select dblink_exec('first', 'begin') as b \gset
select count(*) as first_got from dblink('first', format(
  'select task_id from conductor.claim(''first'', array[%L], 3)', :'q')) as f(task_id bigint) \gset
select dblink_send_query('second', format(
  'select task_id from conductor.claim(''second'', array[%L], 10)', :'q')) as sent \gset

select is(:first_got::bigint, 3::bigint, 'The first session starts 3 and keeps its transaction open.');
select ok(conductor_tests.await_lock_wait(:second_pid),
  'The second session''s claim waits on the key''s bucket the first holds.');
select dblink_exec('first', 'commit') as c \gset
select count(*) as second_got from dblink_get_result('second') as s(task_id bigint) \gset
-- the end of its answer, so the connection takes queries again
select count(*) as done from dblink_get_result('second') as s(task_id bigint) \gset

select is(:second_got::bigint, 2::bigint, 'Once the first commits, the second starts the 2 tokens left, not 10.');
select is((select n from dblink('stage', format(
  'select count(*) from conductor.tasks where queue = %L and status = ''running''', :'q')) as r(n bigint)), 5::bigint,
  'Together they started 5: the key''s burst.');
select is((select n from dblink('second', format(
  'select count(*) from conductor.claim(''second'', array[%L], 10)', :'q')) as r(n bigint)), 0::bigint,
  'A further claim at the same time starts nothing.');
select is((select n from dblink('stage', format(
  'select count(*) from conductor.tasks where queue = %L and status = ''queued'' and attempt = 0', :'q')) as r(n bigint)),
  15::bigint, 'The other 15 are queued, never attempted.');

select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.rate_limits where name = %L', :'q')) as d3 \gset
select dblink_exec('stage', format('delete from conductor.rate_key_buckets where name = %L', :'q')) as d4 \gset
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('first') as x2 \gset
select dblink_disconnect('second') as x3 \gset

select * from finish();
rollback;
