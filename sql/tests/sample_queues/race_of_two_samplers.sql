-- Two samplers at once write each minute once: the first writes its minutes and keeps its
-- transaction open; the second waits on the first's minute keys, then, once the first
-- commits, writes nothing. Both run on the same fake time, as conductor_worker (to whom
-- sample_queues is granted). Committed through dblink sessions, deleted at the end (the role too).
begin;
select plan(5);
\ir ../helpers.psql
create extension if not exists dblink;

select 'sq-race-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('first', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('second', conductor_tests.conninfo()) as c3 \gset
select dblink_exec('stage', 'do $s$ begin
    if not exists (select from pg_roles where rolname = ''t_sq_worker'') then
      create role t_sq_worker; grant conductor_worker to t_sq_worker;
    end if; end $s$') as r \gset
select count(dblink_exec(c, 'set conductor.fake_now = ''2032-05-01 12:00:30+00''')) as clocks
  from unnest(array['stage', 'first', 'second']) c \gset
select count(dblink_exec(c, 'set role t_sq_worker')) as roles from unnest(array['first', 'second']) c \gset
select pid as second_pid from dblink('second', 'select pg_backend_pid()') as p(pid integer) \gset
select n as staged from dblink('stage', format(
  'select count(conductor.enqueue(''k'', ''{}'', %L, run_at => ''2032-05-01 12:00:00+00'')) from generate_series(1, 3)',
  :'q')) as s(n bigint) \gset

select dblink_exec('first', 'begin') as b \gset
select n as first_wrote from dblink('first', 'select conductor.sample_queues()') as f(n integer) \gset
select dblink_send_query('second', 'select conductor.sample_queues()') as sent \gset

select is(:first_wrote, 1440, 'The first sampler writes its minutes and keeps its transaction open.');
select ok(conductor_tests.await_lock_wait(:second_pid), 'The second waits on the minutes the first holds.');
select dblink_exec('first', 'commit') as c \gset
select n as second_wrote from dblink_get_result('second') as s(n integer) \gset
select count(*) as done from dblink_get_result('second') as s(n integer) \gset
select is(:second_wrote, 0, 'Once the first commits, the second writes nothing.');
select is((select n from dblink('stage', 'select count(*) from conductor.sample_minutes
    where minute > ''2032-04-30 00:00:00+00''') as r(n bigint)), 1440::bigint, 'Each minute is written once.');
select is((select n from dblink('stage', format(
  'select depth from conductor.queue_samples where queue = %L', :'q')) as r(n integer)), 3,
  'The queue has one row, its 3 ready tasks.');

select dblink_exec('stage', 'delete from conductor.queue_samples where minute > ''2032-04-30 00:00:00+00''') as d1 \gset
select dblink_exec('stage', 'delete from conductor.sample_minutes where minute > ''2032-04-30 00:00:00+00''') as d2 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d3 \gset
select dblink_disconnect('first') as x2 \gset
select dblink_disconnect('second') as x3 \gset
select dblink_exec('stage', 'drop role t_sq_worker') as d4 \gset
select dblink_disconnect('stage') as x1 \gset

select * from finish();
rollback;
