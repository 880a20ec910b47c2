-- resume_queue wakes the workers sleeping on the queue (channel 'conductor', payload the
-- queue's name, as an enqueue does), so they claim its tasks at once rather than at their
-- next poll; pausing notifies nobody, nor does resuming a queue that was not paused.
-- Notifications are sent at commit, so a dblink session listens and another commits.
begin;
select plan(3);
\ir ../helpers.psql
create extension if not exists dblink;

select 'resume-wakes-' || pg_backend_pid() as q \gset
select dblink_connect('listener', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('admin', conductor_tests.conninfo()) as c2 \gset
select dblink_exec('listener', 'listen conductor') as l \gset
select dblink_exec('admin', format($w$do $s$ begin perform conductor.sleep(%L, %L::text[]); end $s$$w$,
  'sleeper-' || :'q', array[:'q'])) as s \gset

select dblink_exec('admin', format($w$do $s$ begin perform conductor.pause_queue(%L); end $s$$w$, :'q')) as p \gset
select dblink_exec('listener', 'do $r$ begin end $r$') as rt \gset
select is((select count(*) from dblink_get_notify('listener') where extra = :'q'), 0::bigint,
  'Pausing notifies nobody.');

select dblink_exec('admin', format($w$do $s$ begin perform conductor.resume_queue(%L); end $s$$w$, :'q')) as r \gset
select dblink_exec('listener', 'do $r$ begin end $r$') as rt \gset
create temp table got as
select notify_name, extra as payload from dblink_get_notify('listener') where extra = :'q';
select results_eq('select notify_name, payload from got', format($$values ('conductor'::text, %L::text)$$, :'q'),
  'Resuming notifies the queue''s sleepers once on channel ''conductor''.');

select dblink_exec('admin', format($w$do $s$ begin perform conductor.resume_queue(%L); end $s$$w$, :'q')) as r2 \gset
select dblink_exec('listener', 'do $r$ begin end $r$') as rt \gset
select is((select count(*) from dblink_get_notify('listener') where extra = :'q'), 0::bigint,
  'Resuming a queue that was not paused notifies nobody.');

select dblink_exec('admin', format('delete from conductor.workers where id = %L', 'sleeper-' || :'q')) as dw \gset
select dblink_exec('admin', format('delete from conductor.paused_queues where queue = %L', :'q')) as dp \gset
select dblink_exec('listener', 'unlisten conductor') as u \gset
select dblink_disconnect('listener') as x1 \gset
select dblink_disconnect('admin') as x2 \gset

select * from finish();
rollback;
