-- release notifies the task's queue (channel 'conductor', payload the queue's name) every
-- time: the task is due again at once, and were its run_at later (a clock set back), a worker
-- sleeping until the earliest due task of its queues (conductor.next_due) would still have to
-- recompute its wake-up. Notifications are sent at commit, so a dblink session listens and
-- another one commits.
-- A worker sleeping on these queues is marked first: the engine notifies only sleepers.
begin;
select plan(2);
\ir ../helpers.psql
create extension if not exists dblink;

select 'release-notify-' || pg_backend_pid() as q \gset
select dblink_connect('listener', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('writer', conductor_tests.conninfo()) as c2 \gset
select dblink_exec('listener', 'listen conductor') as l \gset
-- a worker sleeps on these queues (committed), or nothing would be notified
select dblink_exec('writer', format($w$do $s$ begin perform conductor.sleep(%L, %L::text[]); end $s$$w$,
  'sleeper-' || :'q', array[:'q' || '-now', :'q' || '-later'])) as s \gset

create function pg_temp.released_notifies(queue text, clock_at_release text) returns setof text language plpgsql as $fn$
declare
  v_attempt bigint;
begin
  -- enqueued and claimed at 2030-01-01 00:00:05 (fake clock of the writer session), due at 00:00:00
  perform dblink_exec('writer', $w$set conductor.fake_now = '2030-01-01 00:00:05+00'$w$);
  perform dblink_exec('writer', format(
    $w$do $s$ begin perform conductor.enqueue('k', queue => %L, run_at => '2030-01-01 00:00:00+00'); end $s$$w$, queue));
  select t.a into strict v_attempt
    from dblink('writer', format('select attempt_id from conductor.claim(worker_id => %L, queues => array[%L])',
                                 'w-release-notify', queue)) as t(a bigint);
  perform dblink_exec('writer', format('set conductor.fake_now = %L', clock_at_release));
  perform dblink_exec('listener', 'do $r$ begin end $r$');
  perform dblink_get_notify('listener');  -- drain the enqueue's
  perform dblink_exec('writer', format('do $s$ begin perform conductor.release(%s); end $s$', v_attempt));
  perform dblink_exec('listener', 'do $r$ begin end $r$');
  return query select extra from dblink_get_notify('listener') where notify_name = 'conductor';
end
$fn$;

select results_eq(format($$select pg_temp.released_notifies(%L, '2030-01-01 00:00:09+00')$$, :'q' || '-now'),
  format($$values (%L::text)$$, :'q' || '-now'),
  'A released task notifies its queue.');
select results_eq(format($$select pg_temp.released_notifies(%L, '2029-12-31 23:00:00+00')$$, :'q' || '-later'),
  format($$values (%L::text)$$, :'q' || '-later'),
  'It does when its run_at is later than the clock too (the clock set back).');

select dblink_exec('writer', 'reset conductor.fake_now') as r \gset
select dblink_exec('writer', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue like %L', :'q' || '%')) as d1 \gset
select dblink_exec('writer', format('delete from conductor.tasks where queue like %L', :'q' || '%')) as d2 \gset
select dblink_exec('writer', format('delete from conductor.workers where id = %L', 'sleeper-' || :'q')) as dw \gset
select dblink_exec('listener', 'unlisten conductor') as u \gset
select dblink_disconnect('listener') as x1 \gset
select dblink_disconnect('writer') as x2 \gset

select * from finish();
rollback;
