-- reap() deletes the conductor.result_waiters rows of sessions that are gone (a client killed
-- while it waited on a result never calls unwatch, and its completion may never come): a row
-- whose pid is no live backend goes; the rows of live sessions stay.
-- Runs in this transaction (rolled back). The clock is set in the past so that reap() finds
-- nothing else to do (no lease or deadline expired before 2000).
begin;
select plan(4);
\ir ../helpers.psql
create extension if not exists dblink;

select dblink_connect('alive', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('gone', conductor_tests.conninfo()) as c2 \gset
select pid as alive_pid from dblink('alive', 'select pg_backend_pid()') as r(pid int) \gset
select pid as gone_pid from dblink('gone', 'select pg_backend_pid()') as r(pid int) \gset
select dblink_disconnect('gone') as x2 \gset

create function pg_temp.await_gone(pid integer) returns boolean language plpgsql as $fn$
declare
  v_deadline timestamptz := clock_timestamp() + interval '10 seconds';
begin
  -- pg_stat_activity is read once per transaction unless the snapshot is cleared
  perform pg_stat_clear_snapshot();
  while exists (select from pg_stat_activity a where a.pid = await_gone.pid) loop
    perform pg_stat_clear_snapshot();
    if clock_timestamp() >= v_deadline then
      return false;
    end if;
    perform pg_sleep(0.01);
  end loop;
  return true;
end
$fn$;
select ok(pg_temp.await_gone(:gone_pid), '(The disconnected session''s backend has ended.)');

set local conductor.fake_now = '2000-01-01 00:00:00+00';
insert into conductor.result_waiters (task_id, pid, since) values
  (-101, 0, conductor.now()),
  (-102, :gone_pid, conductor.now()),
  (-103, pg_backend_pid(), conductor.now()),
  (-104, :alive_pid, conductor.now());

select conductor.reap() as n \gset
select is_empty('select 1 from conductor.result_waiters where task_id in (-101, -102)',
  'reap deletes the waiters whose pid is no live backend (pid 0, an ended session).');
select set_eq('select task_id, pid from conductor.result_waiters where task_id in (-103, -104)',
  format('values (-103::bigint, %s), (-104, %s)', pg_backend_pid(), :alive_pid),
  'The waiters of live sessions (this one, another) stay.');
select is(conductor.reap(), 0, 'reap does not count waiters among the tasks it took back.');

select dblink_disconnect('alive') as x1 \gset

select * from finish();
rollback;
