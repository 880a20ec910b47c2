-- A task inserted due later (run_at after now) notifies its queue too, once per queue per
-- statement, payload the queue's name: a worker sleeping until the earliest due task of its
-- queues (conductor.next_due) recomputes its wake-up, so delayed work starts on time rather
-- than at the next poll. Notifications are sent at commit, so a dblink session listens and
-- another one commits.
-- A worker sleeping on these queues is marked first: the engine notifies only sleepers.
begin;
select plan(3);
\ir ../helpers.psql
create extension if not exists dblink;

select 'delayed-notify-' || pg_backend_pid() as q \gset
select dblink_connect('listener', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('writer', conductor_tests.conninfo()) as c2 \gset
select dblink_exec('listener', 'listen conductor') as l \gset
-- a worker sleeps on these queues (committed), or nothing would be notified
select dblink_exec('writer', format($w$do $s$ begin perform conductor.sleep(%L, %L::text[]); end $s$$w$,
  'sleeper-' || :'q', array[:'q' || '-a', :'q' || '-b', :'q' || '-single'])) as s \gset

-- one statement: three delayed tasks in two queues
select dblink_exec('writer', format($w$do $s$ begin perform conductor.enqueue_many(%L); end $s$$w$,
  jsonb_build_array(
    jsonb_build_object('kind', 'k', 'queue', :'q' || '-a', 'run_at', '2999-01-01T00:00:00Z'),
    jsonb_build_object('kind', 'k', 'queue', :'q' || '-a', 'run_at', '2999-01-02T00:00:00Z'),
    jsonb_build_object('kind', 'k', 'queue', :'q' || '-b', 'run_at', '2999-01-01T00:00:00Z'))))
  as w \gset
select dblink_exec('listener', 'do $r$ begin end $r$') as rt \gset
create temp table batch_got as
select notify_name, extra as payload from dblink_get_notify('listener') where extra like :'q' || '%';

-- one enqueue of a single delayed task
select dblink_exec('writer', format($w$do $s$ begin perform conductor.enqueue('k', queue => %L, run_at => '2999-01-01T00:00:00Z'); end $s$$w$,
  :'q' || '-single')) as w \gset
select dblink_exec('listener', 'do $r$ begin end $r$') as rt \gset
create temp table single_got as
select notify_name, extra as payload from dblink_get_notify('listener') where extra like :'q' || '%';

select dblink_exec('writer', format('delete from conductor.tasks where queue like %L', :'q' || '%')) as d \gset

select set_eq('select notify_name, payload from batch_got',
  format($$values ('conductor'::text, %L::text), ('conductor', %L)$$, :'q' || '-a', :'q' || '-b'),
  'A batch of delayed tasks notifies each of its queues on channel ''conductor''.');
select is((select count(*) from batch_got), 2::bigint, 'Once per queue: two notifications for three tasks.');
select results_eq('select notify_name, payload from single_got',
  format($$values ('conductor'::text, %L::text)$$, :'q' || '-single'),
  'A single delayed enqueue notifies its queue.');

select dblink_exec('writer', format('delete from conductor.workers where id = %L', 'sleeper-' || :'q')) as dw \gset
select dblink_exec('listener', 'unlisten conductor') as u \gset
select dblink_disconnect('listener') as x1 \gset
select dblink_disconnect('writer') as x2 \gset

select * from finish();
rollback;
