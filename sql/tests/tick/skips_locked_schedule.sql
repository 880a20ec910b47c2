-- Two sessions tick at once: while this session's open transaction holds a due schedule
-- (tick locks it FOR UPDATE SKIP LOCKED), a tick in another session fires nothing and does
-- not wait; once the lock is gone it fires the due time itself. The schedule is committed
-- through a dblink session (the test's own transaction is invisible to others) and deleted
-- again at the end. No assertion runs between the savepoint and its rollback, which would
-- take pgTAP's results with it.
begin;
select plan(5);
\ir ../helpers.psql
create extension if not exists dblink;

select 'race-tick-' || pg_backend_pid() as s \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('other', conductor_tests.conninfo()) as c2 \gset

select dblink_exec('stage', 'set conductor.fake_now = ''2030-01-01 00:00:00+00''') as f \gset
select dblink_exec('stage', format('do $d$ begin perform conductor.create_schedule(%L, ''* * * * *'', %L); end $d$',
  :'s', :'s')) as staged \gset
select dblink_exec('other', 'set conductor.fake_now = ''2030-01-01 00:01:00+00''') as f \gset
select dblink_exec('other', 'set lock_timeout = ''5s''') as f \gset
set local conductor.fake_now = '2030-01-01 00:01:00+00';

savepoint race;
select count(*) as mine from conductor.tick() where schedule_name = :'s' \gset
select clock_timestamp() as t0 \gset
select count(*) as theirs from dblink('other', format(
  'select schedule_name from conductor.tick() where schedule_name = %L', :'s')) as o(schedule_name text) \gset
select extract(epoch from clock_timestamp() - :'t0'::timestamptz) as waited \gset
rollback to savepoint race;

select is(:mine::bigint, 1::bigint, 'This session''s tick fires the due schedule and keeps it locked.');
select is(:theirs::bigint, 0::bigint, 'The other session''s tick skips the locked schedule and fires nothing.');
select cmp_ok(:waited::numeric, '<', 1::numeric, 'The other session did not wait for the lock.');

select results_eq(
  format('select * from dblink(%L, %L) as o(due_at timestamptz)', 'other',
         format('select due_at from conductor.tick() where schedule_name = %L', :'s')),
  $$values ('2030-01-01 00:01:00+00'::timestamptz)$$,
  'With the lock released (this session rolled back) the other session fires the due time.');
select is(
  (select n from dblink('stage', format('select count(*) from conductor.schedule_fires where schedule_name = %L', :'s'))
     as x(n bigint)),
  1::bigint, 'One fire was committed in all.');

-- Clean up the committed rows.
select dblink_exec('stage', format('delete from conductor.tasks where kind = %L', :'s')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.schedules where name = %L', :'s')) as d2 \gset
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('other') as x2 \gset

select * from finish();
rollback;
