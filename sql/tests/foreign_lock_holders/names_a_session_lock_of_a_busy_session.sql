-- foreign_lock_holders(hold) names a session lock whose session is never idle when looked
-- at: a session that holds a retired key (v0.2.0's scheduler leader key) and meanwhile runs
-- one short transaction after another. Each look finds the lock in another transaction of
-- that session; it is the same session's lock all along, and named (a look that keyed the
-- lock by its transaction lost it at the second look: the CI failure of stop 38, a squatter
-- sweeping pg_locks in a loop).
-- dblink session 'busy': takes the key with a session lock, then commits 30 times, 100 ms apart
-- (the 0.3 s of looks, one each 50 ms, meet three or four of its transactions). Between a
-- COMMIT and the next transaction's start the session holds no virtualxid lock for an
-- instant, which a look can catch on a loaded machine: with 10 ms transactions a
-- `make test` here called it idle once. Idle now takes two looks in a row in no
-- transaction, and one commit each 100 ms makes a single such look ten times rarer.
begin;
select plan(3);
\ir ../helpers.psql
create extension if not exists dblink;

select dblink_connect('busy', conductor_tests.conninfo() || ' application_name=flh-busy') as x;
select pid as busy_pid from dblink('busy', 'select pg_backend_pid()') as x(pid integer) \gset
select * from dblink('busy', $$select pg_advisory_lock(conductor.lead_key('scheduler'))$$) as x(t text);
select dblink_send_query('busy', $q$do $d$ begin
  for i in 1..30 loop commit; perform pg_sleep(0.1); end loop; end $d$$q$) as s \gset
do $$ begin  -- the loop has begun: the backend is active
  for i in 1..500 loop
    exit when exists (select from pg_stat_activity a where a.application_name = 'flh-busy' and a.state = 'active');
    perform pg_sleep(0.005);
  end loop;
end $$;

create temp table seen as
select * from conductor.foreign_lock_holders('0.3 s') h where h.pid = :busy_pid;
select is((select string_agg(key_space || ':' || label || ':' || mode, ',') from seen),
  'leader (v0.2.0):scheduler:ExclusiveLock',
  'A session lock is named when its session is in a transaction at every look, another one each time.');
select is((select reason from seen), 'holds a key the engine no longer takes, for over 00:00:00.3',
  'The reason names the key as one the engine no longer takes.');
select is((select idle from seen), false, 'It was not seen idle at two looks in a row.');

select * from dblink_get_result('busy') as x(t text);
select dblink_disconnect('busy');
select * from finish();
rollback;
