-- fail that puts a task back in the queue notifies its queue (channel 'conductor', payload
-- the queue's name) whether the retry is due now or later (a backoff, a retry_at): a worker
-- sleeping until the earliest due task of its queues (conductor.next_due) recomputes its
-- wake-up, so the retry starts on time. A fail that ends the task sends no queue notification.
-- Notifications are sent at commit, so a dblink session listens and another one commits.
-- A worker sleeping on these queues is marked first: the engine notifies only sleepers.
begin;
select plan(3);
\ir ../helpers.psql
create extension if not exists dblink;

select 'fail-notify-' || pg_backend_pid() as q \gset
select dblink_connect('listener', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('writer', conductor_tests.conninfo()) as c2 \gset
select dblink_exec('listener', 'listen conductor') as l \gset
-- a worker sleeps on these queues (committed), or nothing would be notified
select dblink_exec('writer', format($w$do $s$ begin perform conductor.sleep(%L, %L::text[]); end $s$$w$,
  'sleeper-' || :'q', array[:'q' || '-later', :'q' || '-backoff', :'q' || '-last'])) as s \gset

create function pg_temp.held(queue text, max_attempts integer) returns bigint language plpgsql as $fn$
declare
  v_attempt bigint;
begin
  -- a task enqueued, then claimed, in the writer session: each call commits
  perform dblink_exec('writer', format(
    $w$do $s$ begin perform conductor.enqueue(%L, queue => %L, max_attempts => %s); end $s$$w$,
    'k', queue, max_attempts));
  select t.a into strict v_attempt
    from dblink('writer', format('select attempt_id from conductor.claim(worker_id => %L, queues => array[%L])',
                                 'w-fail-notify', queue)) as t(a bigint);
  return v_attempt;
end
$fn$;
create function pg_temp.notified_after(sql text) returns setof text language plpgsql as $fn$
begin
  perform dblink_exec('listener', 'do $r$ begin end $r$');
  perform dblink_get_notify('listener');  -- drain what came before
  perform dblink_exec('writer', sql);
  perform dblink_exec('listener', 'do $r$ begin end $r$');
  return query select extra from dblink_get_notify('listener') where notify_name = 'conductor';
end
$fn$;

select pg_temp.held(:'q' || '-later', 3) as a1 \gset
select results_eq(
  format($$select pg_temp.notified_after(%L)$$,
         format($w$do $s$ begin perform conductor.fail(%s, 'boom', retry_at => '2999-01-01T00:00:00Z'); end $s$$w$, :a1)),
  format($$values (%L::text)$$, :'q' || '-later'),
  'A retry due later (retry_at) notifies its queue.');

select pg_temp.held(:'q' || '-backoff', 3) as a2 \gset
select results_eq(
  format($$select pg_temp.notified_after(%L)$$,
         format($w$do $s$ begin perform conductor.fail(%s, 'boom'); end $s$$w$, :a2)),
  format($$values (%L::text)$$, :'q' || '-backoff'),
  'A retry after its backoff notifies its queue.');

select pg_temp.held(:'q' || '-last', 1) as a3 \gset
select is_empty(
  format($$select pg_temp.notified_after(%L)$$,
         format($w$do $s$ begin perform conductor.fail(%s, 'boom'); end $s$$w$, :a3)),
  'A fail that ends the task notifies no queue.');

select dblink_exec('writer', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue like %L', :'q' || '%')) as d1 \gset
select dblink_exec('writer', format('delete from conductor.tasks where queue like %L', :'q' || '%')) as d2 \gset
select dblink_exec('writer', format('delete from conductor.workers where id = %L', 'sleeper-' || :'q')) as dw \gset
select dblink_exec('listener', 'unlisten conductor') as u \gset
select dblink_disconnect('listener') as x1 \gset
select dblink_disconnect('writer') as x2 \gset

select * from finish();
rollback;
