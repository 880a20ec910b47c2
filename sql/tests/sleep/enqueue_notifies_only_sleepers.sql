-- Enqueue notifies channel 'conductor' (payload: the queue) only when a worker sleeps on that
-- queue (a committed conductor.sleepers row, written by sleep()): a pg_notify serialises
-- every notifying commit of the database, so nobody waiting must mean no notification.
-- A sleeper on another queue does not count; after wake() the queue is quiet again; an
-- enqueue_many into several queues notifies only the ones slept on.
-- Notifications are sent at commit, so a dblink session listens and another one commits.
begin;
select plan(7);
\ir ../helpers.psql
create extension if not exists dblink;

select 'sleep-notify-' || pg_backend_pid() as q \gset
select 'w-sleep-notify-' || pg_backend_pid() as w \gset
select dblink_connect('listener', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('writer', conductor_tests.conninfo()) as c2 \gset
select dblink_exec('listener', 'listen conductor') as l \gset

-- the payloads on 'conductor' naming this file's queues that sql, committed by the writer, sent
create function pg_temp.notified_after(sql text) returns setof text language plpgsql as $fn$
begin
  perform dblink_exec('listener', 'do $r$ begin end $r$');
  perform dblink_get_notify('listener');  -- drain what came before
  perform dblink_exec('writer', sql);
  perform dblink_exec('listener', 'do $r$ begin end $r$');  -- a round trip delivers what is pending
  return query select n.extra from dblink_get_notify('listener') n
                where n.notify_name = 'conductor' and n.extra like 'sleep-notify-' || pg_backend_pid() || '%'
                order by n.extra;
end
$fn$;
-- dblink_exec refuses a statement that returns rows: calls are wrapped in a DO block
create function pg_temp.perform(call text) returns text language sql as $fn$
  select format('do $s$ begin perform %s; end $s$', call)
$fn$;
create function pg_temp.enqueue(queue text) returns text language sql as $fn$
  select pg_temp.perform(format($w$conductor.enqueue('k', '{}', %L)$w$, queue))
$fn$;

select is_empty(format('select pg_temp.notified_after(%L)', pg_temp.enqueue(:'q')),
  'Nobody sleeps on the queue: the enqueue sends no notification.');

select dblink_exec('writer', pg_temp.perform(format('conductor.sleep(%L, array[%L])', :'w', :'q'))) as s1 \gset
select results_eq(format('select pg_temp.notified_after(%L)', pg_temp.enqueue(:'q')),
  format('values (%L::text)', :'q'),
  'A worker sleeps on the queue: the enqueue notifies it, the queue as payload.');

select dblink_exec('writer', pg_temp.perform(format('conductor.sleep(%L, array[%L])', :'w', :'q' || '-other'))) as s2 \gset
select is_empty(format('select pg_temp.notified_after(%L)', pg_temp.enqueue(:'q')),
  'The worker now sleeps on another queue only: an enqueue into the first sends nothing.');
select results_eq(format('select pg_temp.notified_after(%L)', pg_temp.enqueue(:'q' || '-other')),
  format('values (%L::text)', :'q' || '-other'),
  'An enqueue into the queue it sleeps on now notifies.');

select dblink_exec('writer', pg_temp.perform(format('conductor.wake(%L)', :'w'))) as wk \gset
select is_empty(format('select pg_temp.notified_after(%L)', pg_temp.enqueue(:'q' || '-other')),
  'After wake() the worker''s queues are quiet again.');

select dblink_exec('writer', pg_temp.perform(format('conductor.sleep(%L, array[%L])', :'w', :'q'))) as s3 \gset
select results_eq(format('select pg_temp.notified_after(%L)',
    pg_temp.perform(format('conductor.enqueue_many(%L)', jsonb_build_array(
      jsonb_build_object('kind', 'k', 'queue', :'q'),
      jsonb_build_object('kind', 'k', 'queue', :'q' || '-other'),
      jsonb_build_object('kind', 'k', 'queue', :'q'))))),
  format('values (%L::text)', :'q'),
  'enqueue_many into two queues, a sleeper on one: one notification, for that one.');

select dblink_exec('writer', pg_temp.perform(format('conductor.wake(%L)', :'w'))) as wk2 \gset
select is_empty(format('select pg_temp.notified_after(%L)',
    pg_temp.perform(format('conductor.enqueue_many(%L)', jsonb_build_array(
      jsonb_build_object('kind', 'k', 'queue', :'q'),
      jsonb_build_object('kind', 'k', 'queue', :'q' || '-other'))))),
  'enqueue_many with nobody sleeping sends nothing.');

-- Clean up the committed rows.
select dblink_exec('writer', format('delete from conductor.tasks where queue like %L', :'q' || '%')) as d1 \gset
select dblink_exec('writer', format('delete from conductor.workers where id = %L', :'w')) as d2 \gset
select dblink_exec('listener', 'unlisten conductor') as u \gset
select dblink_disconnect('listener') as x1 \gset
select dblink_disconnect('writer') as x2 \gset

select * from finish();
rollback;
