-- Two schedulers come back at once after downtime: one tick holds the schedule (FOR UPDATE
-- SKIP LOCKED) and fires it once; the other, a second later, skips it without waiting;
-- once the first commits, the other finds it moved to the next future time and fires
-- nothing. One task in all for the missed stretch. The rows are committed through dblink
-- sessions and deleted at the end.
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;

select 'race-down-' || pg_backend_pid() as s \gset
select dblink_connect('a', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('b', conductor_tests.conninfo()) as c2 \gset

select dblink_exec('a', 'set conductor.fake_now = ''2030-01-01 00:00:00+00''') as f \gset
select dblink_exec('a', format('do $d$ begin perform conductor.create_schedule(%L, ''*/5 * * * * *'', %L); end $d$',
  :'s', :'s')) as staged \gset

-- both come back 3.6 minutes later, b a second after a
select dblink_exec('a', 'set conductor.fake_now = ''2030-01-01 00:03:36+00''') as f \gset
select dblink_exec('b', 'set conductor.fake_now = ''2030-01-01 00:03:37+00''') as f \gset
select dblink_exec('b', 'set lock_timeout = ''5s''') as f \gset

select dblink_exec('a', 'begin') as f \gset
select count(*) as a_fired from dblink('a', format(
  'select schedule_name from conductor.tick() where schedule_name = %L', :'s')) as o(schedule_name text) \gset
select clock_timestamp() as t0 \gset
select count(*) as b_fired from dblink('b', format(
  'select schedule_name from conductor.tick() where schedule_name = %L', :'s')) as o(schedule_name text) \gset
select extract(epoch from clock_timestamp() - :'t0'::timestamptz) as waited \gset
select dblink_exec('a', 'commit') as f \gset

select is(:a_fired::bigint, 1::bigint, 'The first tick back fires the schedule once for the stretch.');
select is(:b_fired::bigint, 0::bigint, 'The other tick skips the schedule the first one holds,');
select cmp_ok(:waited::numeric, '<', 1::numeric, 'without waiting for it.');
select is(
  (select n from dblink('b', format('select count(*) from conductor.tick() where schedule_name = %L', :'s')) as x(n bigint)),
  0::bigint, 'After the first committed, the other tick finds nothing due: the schedule moved to the next future time.');
select is(
  (select n from dblink('b', format('select count(*) from conductor.tasks where kind = %L', :'s')) as x(n bigint)),
  1::bigint, 'One task was committed in all for the 43 missed due times.');
select is(
  (select t from dblink('b', format('select next_due_at from conductor.schedules where name = %L', :'s'))
     as x(t timestamptz)),
  '2030-01-01 00:03:40+00'::timestamptz, 'The schedule continues at 00:03:40.');

select dblink_exec('b', format('delete from conductor.tasks where kind = %L', :'s')) as d1 \gset
select dblink_exec('b', format('delete from conductor.schedules where name = %L', :'s')) as d2 \gset
select dblink_disconnect('a') as x1 \gset
select dblink_disconnect('b') as x2 \gset

select * from finish();
rollback;
