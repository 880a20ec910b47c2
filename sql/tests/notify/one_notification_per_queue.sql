-- One INSERT statement sends one notification on channel 'conductor' per queue that received a
-- task, the queue's name as payload; a queue with only future tasks gets one too (a sleeping
-- worker recomputes its wake-up: notify/delayed_insert_notifies).
-- Notifications are sent at commit, so a dblink session listens and another one commits the batch.
-- A worker sleeping on these queues is marked first: the engine notifies only sleepers.
begin;
select plan(3);
\ir ../helpers.psql
create extension if not exists dblink;

select 'race-notify-' || pg_backend_pid() as q \gset
select dblink_connect('listener', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('writer', conductor_tests.conninfo()) as c2 \gset
select dblink_exec('listener', 'listen conductor') as l \gset
-- a worker sleeps on these queues (committed), or nothing would be notified
select dblink_exec('writer', format($w$do $s$ begin perform conductor.sleep(%L, %L::text[]); end $s$$w$,
  'sleeper-' || :'q', array[:'q' || '-a', :'q' || '-b', :'q' || '-later'])) as s \gset

select dblink_exec('writer', format($w$do $s$ begin perform conductor.enqueue_many(%L); end $s$$w$,
  jsonb_build_array(
    jsonb_build_object('kind', 'k', 'queue', :'q' || '-a'),
    jsonb_build_object('kind', 'k', 'queue', :'q' || '-a'),
    jsonb_build_object('kind', 'k', 'queue', :'q' || '-b'),
    jsonb_build_object('kind', 'k', 'queue', :'q' || '-a', 'payload', jsonb_build_object('secret', 's3cr3t')),
    jsonb_build_object('kind', 'k', 'queue', :'q' || '-later', 'run_at', '2999-01-01T00:00:00Z'))))
  as w \gset

-- A round trip lets the listener's backend deliver what is pending.
select dblink_exec('listener', 'do $r$ begin end $r$') as rt \gset
create temp table got as
select notify_name, extra as payload from dblink_get_notify('listener') where extra like :'q' || '%';

-- Clean up the committed rows before asserting.
select dblink_exec('writer', format('delete from conductor.tasks where queue like %L', :'q' || '%')) as d \gset


select is((select count(*) from got), 3::bigint,
  'Five tasks in three queues, one due only later: exactly three notifications.');
select set_eq('select notify_name, payload from got',
  format($$values ('conductor'::text, %L::text), ('conductor', %L), ('conductor', %L)$$,
         :'q' || '-a', :'q' || '-b', :'q' || '-later'),
  'One on channel ''conductor'' per queue that received a task, its payload the queue''s name.');
select is_empty($$select 1 from got where payload like '%s3cr3t%'$$, 'No task payload is ever sent.');

select dblink_exec('writer', format('delete from conductor.workers where id = %L', 'sleeper-' || :'q')) as dw \gset
select dblink_exec('listener', 'unlisten conductor') as u \gset
select dblink_disconnect('listener') as x1 \gset
select dblink_disconnect('writer') as x2 \gset

select * from finish();
rollback;
