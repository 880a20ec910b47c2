-- A session that ends without unsubscribing leaves its conductor.subscriptions rows behind
-- (which would make every publish on their topics notify); reap() deletes the rows of
-- sessions that are gone and keeps those of live ones. The clock is set in the past so
-- that reap() finds nothing else to do.
begin;
select plan(4);
\ir ../helpers.psql
create extension if not exists dblink;

select 'bus-reap-' || pg_backend_pid() as t \gset
select dblink_connect('alive', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('gone', conductor_tests.conninfo()) as c2 \gset
select pid as alive_pid from dblink('alive', 'select pg_backend_pid()') as r(pid int) \gset
select pid as gone_pid from dblink('gone', 'select pg_backend_pid()') as r(pid int) \gset
select (select count(*) from dblink('alive', format('select conductor.subscribe(%L)', array[:'t'])) as r(x text)) as s1 \gset
select (select count(*) from dblink('gone', format('select conductor.subscribe(%L)', array[:'t', '*'])) as r(x text)) as s2 \gset
select dblink_disconnect('gone') as x2 \gset

create function pg_temp.await_gone(pid integer) returns boolean language plpgsql as $fn$
declare
  v_deadline timestamptz := clock_timestamp() + interval '10 seconds';
begin
  loop
    -- pg_stat_activity is read once per transaction unless the snapshot is cleared
    perform pg_stat_clear_snapshot();
    exit when not exists (select from pg_stat_activity a where a.pid = await_gone.pid);
    if clock_timestamp() >= v_deadline then
      return false;
    end if;
    perform pg_sleep(0.01);
  end loop;
  return true;
end
$fn$;
select ok(pg_temp.await_gone(:gone_pid), '(The disconnected session''s backend has ended.)');
select is(conductor.publish(:'t'), true, 'Its subscriptions outlive it: publish still notifies.');

set local conductor.fake_now = '2000-01-01 00:00:00+00';
select conductor.reap() as n \gset
select is_empty(format('select 1 from conductor.subscriptions where pid = %s', :gone_pid),
  'reap deletes the subscriptions of the session that ended.');
select set_eq(format('select topic, pid from conductor.subscriptions where pid = %s', :alive_pid),
  format('values (%L, %s)', :'t', :alive_pid), 'The live session''s subscription stays.');

select (select count(*) from dblink('alive', 'select conductor.unsubscribe()') as r(x text)) as u \gset
select dblink_disconnect('alive') as x1 \gset

select * from finish();
rollback;
