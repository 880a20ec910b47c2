-- A lost task counts against its run under a key share lock of the root's row, taken SKIP
-- LOCKED: a client's open transaction that holds the root (its emit_event woke it) neither
-- delays nor stops the count; another reaper that holds the root FOR UPDATE (it is taking the
-- root back, in a transaction still open) makes this reap leave the lost child for the next
-- one, without waiting. Sessions: 'stage' (setup, cleanup, the workers that are lost),
-- 'client' (a client login), 'reaper' (a worker login). This session reaps, on the fake clock.
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;

select 'h3-root-lock-' || pg_backend_pid() as q, 't_c_' || pg_backend_pid() as crole,
       't_w_' || pg_backend_pid() as wrole \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_client', :'crole')) as r1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_worker', :'wrole')) as r2 \gset
select dblink_connect('client', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'crole')) as c2 \gset
select dblink_connect('reaper', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'wrole')) as c3 \gset
select dblink_exec('stage', 'set conductor.fake_now = ''2030-01-01 00:00:00+00''') as f1 \gset
select dblink_exec('client', 'set conductor.fake_now = ''2030-01-01 00:00:30+00''') as f2 \gset
select dblink_exec('reaper', 'set conductor.fake_now = ''2030-01-01 00:02:00+00''') as f3 \gset
set local lock_timeout = '2s';  -- a reap that waited would fail here rather than hang

-- 1. a root that spawned a child, then waits for an event; the child's worker dies
select t as root from dblink('stage', format('select conductor.enqueue(''root'', ''{}'', %L)', :'q' || '-1')) as r(t bigint) \gset
select a as ra from dblink('stage', format('select attempt_id from conductor.claim(''w-root'', array[%L])', :'q' || '-1')) as r(a bigint) \gset
select c as kid from dblink('stage', format('select conductor.spawn(%s, ''kid'', ''kid'', ''{}'', %L)', :ra, :'q' || '-1k')) as r(c bigint) \gset
select s from dblink('stage', format('select state from conductor.suspend(%s, ''go'', ''event'', %L)', :ra, :'q')) as r(s text) \gset
select a as ka from dblink('stage', format('select attempt_id from conductor.claim(''w-kid'', array[%L], 1, ''1 minute'')', :'q' || '-1k')) as r(a bigint) \gset
select dblink_exec('client', 'begin') as b \gset
select n as woke from dblink('client', format('select conductor.emit_event(%L, ''{}'')', :'q')) as r(n int) \gset

set local conductor.fake_now = '2030-01-01 00:02:00+00';
savepoint reaping;
select conductor.reap() as reaped_1 \gset
select (status, recoveries)::text as kid_1 from conductor.tasks where id = :kid \gset
select recoveries as counted_1 from conductor.run_recoveries where root_id = :root \gset
rollback to savepoint reaping;
select dblink_exec('client', 'rollback') as c \gset
select is(:woke, 1, 'Setup: a client''s emit woke the root in a transaction it leaves open.');
select is(:'kid_1'::text, '(queued,1)', 'reap() takes the lost child back, not waiting for the client''s lock of the root...');
select is(:counted_1, 1, '... and counts it against the run.');

-- 2. a root and its child both lost; another reaper is taking the root back, uncommitted
select t as root2 from dblink('stage', format('select conductor.enqueue(''root'', ''{}'', %L)', :'q' || '-2')) as r(t bigint) \gset
select a as ra2 from dblink('stage', format('select attempt_id from conductor.claim(''w-root'', array[%L], 1, ''1 minute'')', :'q' || '-2')) as r(a bigint) \gset
select c as kid2 from dblink('stage', format('select conductor.spawn(%s, ''kid'', ''kid'', ''{}'', %L)', :ra2, :'q' || '-2k')) as r(c bigint) \gset
select a as ka2 from dblink('stage', format('select attempt_id from conductor.claim(''w-kid'', array[%L], 1, ''3 minutes'')', :'q' || '-2k')) as r(a bigint) \gset
select dblink_exec('reaper', 'begin') as b2 \gset
select n as other_reaped from dblink('reaper', 'select conductor.reap()') as r(n int) \gset

set local conductor.fake_now = '2030-01-01 00:04:00+00';
savepoint reaping2;
select conductor.reap() as reaped_2 \gset
select status::text as kid_2 from conductor.tasks where id = :kid2 \gset
select dblink_exec('reaper', 'commit') as c2 \gset
select conductor.reap() as reaped_3 \gset
select (status, recoveries)::text as kid_3 from conductor.tasks where id = :kid2 \gset
select recoveries as counted_3 from conductor.run_recoveries where root_id = :root2 \gset
rollback to savepoint reaping2;
select is(:'kid_2'::text, 'running',
  'While another reaper holds the root (taking it back), reap() leaves the lost child for the next reap, without waiting.');
select is(:'kid_3'::text, '(queued,1)', 'The next reap takes the child back...');
select is(:counted_3, 2, '... and the run counts both: the root''s loss and the child''s.');

-- Clean up the committed rows and roles.
select dblink_exec('stage', format('delete from conductor.run_recoveries r using conductor.tasks t where r.root_id = t.id and t.queue like %L', :'q' || '%')) as d0 \gset
select dblink_exec('stage', format('delete from conductor.steps s using conductor.tasks t where s.task_id = t.id and t.queue like %L', :'q' || '%')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue like %L', :'q' || '%')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue like %L', :'q' || '%')) as d3 \gset
select dblink_exec('stage', format('delete from conductor.events where name = %L', :'q')) as d4 \gset
select dblink_exec('stage', 'delete from conductor.workers where id in (''w-root'', ''w-kid'')') as d5 \gset
select dblink_disconnect('client') as x2 \gset
select dblink_disconnect('reaper') as x3 \gset
select dblink_exec('stage', format('drop role %I, %I', :'crole', :'wrole')) as d6 \gset
select dblink_disconnect('stage') as x1 \gset

select * from finish();
rollback;
