-- The barrier between sleep() and enqueue, without a wait: while a worker's sleep() holds its
-- queue's key (it got its try-lock, true, and has not committed its mark), an enqueue into that
-- queue fails its own try-lock on the key, so it cannot know whether the mark will be there:
-- it notifies the queue (the conservative path, one notification) instead of reading
-- conductor.sleepers, and it never waits. v0.2.0's enqueue waited for the sleep's commit,
-- which let any session that takes the key stall every enqueue (sleep/
-- enqueue_never_waits_on_a_foreign_key_holder.sql). Once the mark is committed, an enqueue's
-- try succeeds, its read sees the mark, and it notifies as before.
-- Four dblink sessions: 'a' sleeps in an open transaction, 'b' enqueues, 'listener'
-- listens, 'stage' cleans up.
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;

select 'sleep-barrier-' || pg_backend_pid() as q \gset
select 'w-sleep-barrier-' || pg_backend_pid() as w \gset
select dblink_connect('a', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('b', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('listener', conductor_tests.conninfo()) as c3 \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c4 \gset
select dblink_exec('listener', 'listen conductor') as l \gset
select pid as b_pid from dblink('b', 'select pg_backend_pid()') as r(pid int) \gset

-- whether the async query on conn returns within 3 s ('returned'; a bounded wait is fine) or
-- still waits on a lock then ('waits', and then the sleep's transaction is committed so the file goes on)
create function pg_temp.settle(conn text, pid integer) returns text language plpgsql as $fn$
declare
  v_deadline timestamptz := clock_timestamp() + interval '3 seconds';
begin
  while dblink_is_busy(conn) = 1 loop
    if clock_timestamp() > v_deadline then
      if not exists (select from pg_stat_activity a where a.pid = settle.pid and a.wait_event_type = 'Lock') then
        return 'timeout';
      end if;
      perform dblink_exec('a', 'commit');
      return 'waits';
    end if;
    perform pg_sleep(0.01);
  end loop;
  return 'returned';
end
$fn$;
-- the notifications naming this file's queue the listener has received
create function pg_temp.heard() returns setof text language plpgsql as $fn$
begin
  perform dblink_exec('listener', 'do $r$ begin end $r$');  -- a round trip delivers what is pending
  return query select n.extra from dblink_get_notify('listener') n
                where n.notify_name = 'conductor' and n.extra = 'sleep-barrier-' || pg_backend_pid();
end
$fn$;

select dblink_exec('a', 'begin') as ab \gset
select is((select s from dblink('a', format('select conductor.sleep(%L, array[%L])', :'w', :'q')) as r(s boolean)),
  true, 'The sleep in the open transaction is settled (true).');

select dblink_send_query('b', format($$select conductor.enqueue('k', '{}', %L)$$, :'q')) as sent \gset
select is(pg_temp.settle('b', :b_pid), 'returned', 'An enqueue into the queue does not wait for the uncommitted mark.');
select isnt((select t from dblink_get_result('b') as r(t bigint)), null::bigint, 'It returns its task.');
select count(*) as ended from dblink_get_result('b') as r(t bigint) \gset
select results_eq('select pg_temp.heard()', format('values (%L::text)', :'q'),
  'It notified the queue: the mark it could not see may be there.');

select dblink_exec('a', 'commit') as ac \gset
select isnt((select t from dblink('b', format($$select conductor.enqueue('k', '{}', %L)$$, :'q')) as r(t bigint)),
  null::bigint, 'An enqueue after the mark committed returns its task.');
select results_eq('select pg_temp.heard()', format('values (%L::text)', :'q'),
  'It saw the mark and notified the queue.');

-- Clean up the committed rows.
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.workers where id = %L', :'w')) as d2 \gset
select dblink_exec('listener', 'unlisten conductor') as u \gset
select dblink_disconnect('a') as x1 \gset
select dblink_disconnect('b') as x2 \gset
select dblink_disconnect('listener') as x3 \gset
select dblink_disconnect('stage') as x4 \gset

select * from finish();
rollback;
