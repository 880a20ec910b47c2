-- reap() waits for no lock a client's transaction holds: a lost child counts against its
-- run under the root's row lock, taken SKIP LOCKED, so while a client's open transaction
-- holds the root (its emit_event woke it) the child is left for the next reap, which takes
-- it back and counts it once the client committed. Sessions: 'stage' (setup, cleanup, the
-- worker that is lost), 'client' (a client login). This session reaps, on the fake clock.
begin;
select plan(5);
\ir ../helpers.psql
create extension if not exists dblink;

select 'h3-held-root-' || pg_backend_pid() as q, 't_c_' || pg_backend_pid() as crole \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_client', :'crole')) as r1 \gset
select dblink_connect('client', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'crole')) as c2 \gset
select dblink_exec('stage', 'set conductor.fake_now = ''2030-01-01 00:00:00+00''') as f1 \gset
select dblink_exec('client', 'set conductor.fake_now = ''2030-01-01 00:00:30+00''') as f2 \gset

-- a root that spawned a child, then waits for an event; the child runs on a worker that dies
select t as root from dblink('stage', format('select conductor.enqueue(''root'', ''{}'', %L)', :'q')) as r(t bigint) \gset
select a as ra from dblink('stage', format('select attempt_id from conductor.claim(''w-root'', array[%L])', :'q')) as r(a bigint) \gset
select c as kid from dblink('stage', format('select conductor.spawn(%s, ''kid'', ''kid'', ''{}'', %L)', :ra, :'q' || '-kid')) as r(c bigint) \gset
select s from dblink('stage', format('select state from conductor.suspend(%s, ''go'', ''event'', %L)', :ra, :'q')) as r(s text) \gset
select a as ka from dblink('stage', format('select attempt_id from conductor.claim(''w-kid'', array[%L], 1, ''1 minute'')', :'q' || '-kid')) as r(a bigint) \gset

select dblink_exec('client', 'begin') as b \gset
select is((select n from dblink('client', format('select conductor.emit_event(%L, ''{}'')', :'q')) as r(n int)), 1,
  'A client''s emit wakes the root inside a transaction it leaves open: it holds the root''s row.');

set local lock_timeout = '2s';  -- a reap that waited would fail here rather than hang
set local conductor.fake_now = '2030-01-01 00:02:00+00';
savepoint reaping;
select conductor.reap() as first_pass \gset
select status::text as kid_first from conductor.tasks where id = :kid \gset
select count(*) as counted_first from conductor.run_recoveries where root_id = :root \gset
select dblink_exec('client', 'commit') as c \gset
select conductor.reap() as second_pass \gset
select (status, recoveries)::text as kid_second from conductor.tasks where id = :kid \gset
select recoveries as counted_second from conductor.run_recoveries where root_id = :root \gset
rollback to savepoint reaping;

select is(:'kid_first'::text, 'running', 'reap() does not wait for the held root: the lost child is left running...');
select is(:counted_first, 0, '... and not counted yet.');
select is(:'kid_second'::text, '(queued,1)', 'Once the client committed, the next reap takes the child back...');
select is(:counted_second, 1, '... and counts it against the run.');

-- Clean up the committed rows and roles.
select dblink_exec('stage', format('delete from conductor.steps s using conductor.tasks t where s.task_id = t.id and t.queue like %L', :'q' || '%')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue like %L', :'q' || '%')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue like %L', :'q' || '%')) as d3 \gset
select dblink_exec('stage', format('delete from conductor.events where name = %L', :'q')) as d4 \gset
select dblink_exec('stage', 'delete from conductor.workers where id in (''w-root'', ''w-kid'')') as d5 \gset
select dblink_disconnect('client') as x2 \gset
select dblink_exec('stage', format('drop role %I', :'crole')) as d6 \gset
select dblink_disconnect('stage') as x1 \gset

select * from finish();
rollback;
