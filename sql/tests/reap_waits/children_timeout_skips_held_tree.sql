-- reap() waits for no lock a client's transaction holds: a wait for children past its
-- deadline is ended with its tree locked NOWAIT, so while a client's open transaction holds a
-- child (a cancel it has not committed) the wait is left for the next reap (v0.2.0's reap
-- waited for the client, through cancel). Once the client rolled back, the next reap cancels
-- the child and times the parent out. Sessions: 'stage' (setup, cleanup), 'client' (a client
-- login). This session reaps, on the fake clock.
begin;
select plan(5);
\ir ../helpers.psql
create extension if not exists dblink;

select 'h3-held-tree-' || pg_backend_pid() as q, 't_c_' || pg_backend_pid() as crole \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_client', :'crole')) as r1 \gset
select dblink_connect('client', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'crole')) as c2 \gset
select dblink_exec('stage', 'set conductor.fake_now = ''2030-01-01 00:00:00+00''') as f1 \gset
select dblink_exec('client', 'set conductor.fake_now = ''2030-01-01 00:00:30+00''') as f2 \gset

select t as root from dblink('stage', format('select conductor.enqueue(''root'', ''{}'', %L)', :'q')) as r(t bigint) \gset
select a as ra from dblink('stage', format('select attempt_id from conductor.claim(''w-root'', array[%L])', :'q')) as r(a bigint) \gset
select c as kid from dblink('stage', format('select conductor.spawn(%s, ''kid'', ''kid'', ''{}'', %L)', :ra, :'q' || '-kid')) as r(c bigint) \gset
select s from dblink('stage', format('select state from conductor.suspend(%s, ''join'', ''children_all'', timeout => ''1 minute'')', :ra)) as r(s text) \gset

select dblink_exec('client', 'begin') as b \gset
select is((select n from dblink('client', format('select conductor.cancel(%s)', :kid)) as r(n int)), 1,
  'A client cancels the child inside a transaction it leaves open.');

set local lock_timeout = '2s';  -- a reap that waited would fail here rather than hang
set local conductor.fake_now = '2030-01-01 00:02:00+00';
savepoint reaping;
select conductor.reap() as first_pass \gset
select status::text as root_first from conductor.tasks where id = :root \gset
select dblink_exec('client', 'rollback') as c \gset
select conductor.reap() as second_pass \gset
select array_agg(status::text order by id) as after_second from conductor.tasks where root_id = :root \gset
rollback to savepoint reaping;

select is(:first_pass, 0, 'reap() does not wait for the held child: it ends nothing...');
select is(:'root_first'::text, 'waiting', '... and the parent still waits past its deadline.');
select is(:second_pass, 1, 'Once the client rolled back, the next reap ends the wait...');
select is(:'after_second'::text, '{timed_out,cancelled}', '... the parent timed out, its child cancelled.');

-- Clean up the committed rows and roles.
select dblink_exec('stage', format('delete from conductor.steps s using conductor.tasks t where s.task_id = t.id and t.queue like %L', :'q' || '%')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue like %L', :'q' || '%')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue like %L', :'q' || '%')) as d3 \gset
select dblink_exec('stage', 'delete from conductor.workers where id = ''w-root''') as d5 \gset
select dblink_disconnect('client') as x2 \gset
select dblink_exec('stage', format('drop role %I', :'crole')) as d6 \gset
select dblink_disconnect('stage') as x1 \gset

select * from finish();
rollback;
