-- A task put back in its queue by fail (a retry) or release notifies channel 'conductor' only
-- when a worker sleeps on that queue, as an enqueue does: with nobody sleeping, a requeue
-- commits without pg_notify's database-wide commit lock. With a sleeper it notifies (payload
-- the queue), whether the retry is due now or after its backoff.
-- Notifications are sent at commit, so a dblink session listens and another one commits.
begin;
select plan(4);
\ir ../helpers.psql
create extension if not exists dblink;

select 'sleep-requeue-' || pg_backend_pid() as q \gset
select 'w-sleep-requeue-' || pg_backend_pid() as w \gset
select dblink_connect('listener', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('writer', conductor_tests.conninfo()) as c2 \gset
select dblink_exec('listener', 'listen conductor') as l \gset

create function pg_temp.held(queue text) returns bigint language plpgsql as $fn$
declare
  v_attempt bigint;
begin
  -- a task enqueued, then claimed, in the writer session: each call commits
  perform dblink_exec('writer', format(
    $w$do $s$ begin perform conductor.enqueue('k', queue => %L, max_attempts => 5); end $s$$w$, queue));
  select t.a into strict v_attempt
    from dblink('writer', format('select attempt_id from conductor.claim(worker_id => %L, queues => array[%L])',
                                 'w-claim-' || pg_backend_pid(), queue)) as t(a bigint);
  return v_attempt;
end
$fn$;
create function pg_temp.notified_after(sql text) returns setof text language plpgsql as $fn$
begin
  perform dblink_exec('listener', 'do $r$ begin end $r$');
  perform dblink_get_notify('listener');  -- drain what came before
  perform dblink_exec('writer', sql);
  perform dblink_exec('listener', 'do $r$ begin end $r$');
  return query select n.extra from dblink_get_notify('listener') n
                where n.notify_name = 'conductor' and n.extra like 'sleep-requeue-' || pg_backend_pid() || '%';
end
$fn$;

select pg_temp.held(:'q' || '-fail') as a1 \gset
select is_empty(format('select pg_temp.notified_after(%L)',
    format($w$do $s$ begin perform conductor.fail(%s, 'boom'); end $s$$w$, :a1)),
  'Nobody sleeps on the queue: a fail with a retry sends no notification.');
select pg_temp.held(:'q' || '-release') as a2 \gset
select is_empty(format('select pg_temp.notified_after(%L)',
    format($w$do $s$ begin perform conductor.release(%s); end $s$$w$, :a2)),
  'Nobody sleeps on the queue: a release sends no notification.');

select dblink_exec('writer', format($w$do $s$ begin perform conductor.sleep(%L, %L::text[]); end $s$$w$,
  :'w', array[:'q' || '-fail', :'q' || '-release'])) as s \gset

select pg_temp.held(:'q' || '-fail') as a3 \gset
select results_eq(format('select pg_temp.notified_after(%L)',
    format($w$do $s$ begin perform conductor.fail(%s, 'boom'); end $s$$w$, :a3)),
  format('values (%L::text)', :'q' || '-fail'),
  'A worker sleeps on the queue: a fail with a retry (after its backoff) notifies it.');
select pg_temp.held(:'q' || '-release') as a4 \gset
select results_eq(format('select pg_temp.notified_after(%L)',
    format($w$do $s$ begin perform conductor.release(%s); end $s$$w$, :a4)),
  format('values (%L::text)', :'q' || '-release'),
  'A worker sleeps on the queue: a release notifies it.');

-- Clean up the committed rows.
select dblink_exec('writer', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue like %L', :'q' || '%')) as d1 \gset
select dblink_exec('writer', format('delete from conductor.tasks where queue like %L', :'q' || '%')) as d2 \gset
select dblink_exec('writer', format('delete from conductor.workers where id in (%L, %L)', :'w', 'w-claim-' || pg_backend_pid())) as d3 \gset
select dblink_exec('listener', 'unlisten conductor') as u \gset
select dblink_disconnect('listener') as x1 \gset
select dblink_disconnect('writer') as x2 \gset

select * from finish();
rollback;
