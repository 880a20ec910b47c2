-- Two emits of the same new event at once, the first in a client's transaction left open:
-- the second (a worker login: a task emitting the event) waits at most 100 ms for it, then
-- raises 40001 (retry) and records nothing, instead of waiting for the client (v0.2.0 waited
-- on the event's advisory lock). Once the client commits, the retry succeeds and the first
-- payload stays. Sessions: 'stage', 'client', 'worker'.
begin;
select plan(4);
\ir ../helpers.psql
create extension if not exists dblink;

select 'race-new-name-' || pg_backend_pid() as q, 't_w_' || pg_backend_pid() as wrole,
       't_c_' || pg_backend_pid() as crole \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_worker', :'wrole')) as r1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_client', :'crole')) as r2 \gset
select dblink_connect('client', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'crole')) as c2 \gset
select dblink_connect('worker', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=' || :'wrole')) as c3 \gset
select dblink_exec('worker', 'set lock_timeout = ''2s''') as l \gset

select dblink_exec('client', 'begin') as b \gset
select n as first from dblink('client', format('select conductor.emit_event(%L, ''{"by": "client"}'')', :'q')) as r(n int) \gset
select throws_ok(format($$select * from dblink('worker', %L) as r(n int)$$,
                        format('select conductor.emit_event(%L, ''{"by": "worker"}'')', :'q')),
  '40001', NULL,
  'The worker''s emit of the same new name raises 40001 instead of waiting for the client''s transaction.');
select is((select e.c from dblink('stage', format('select count(*) from conductor.events where name = %L', :'q')) as e(c bigint)),
  0::bigint, 'Nothing is recorded while the client''s transaction is open.');
select dblink_exec('client', 'commit') as c \gset
select is((select n from dblink('worker', format('select conductor.emit_event(%L, ''{"by": "worker"}'')', :'q')) as r(n int)), 0,
  'Retried once the client committed, the worker''s emit succeeds.');
select is((select payload from conductor.events where name = :'q'), '{"by": "client"}'::jsonb,
  'The first payload is the event''s.');

-- Clean up the committed rows and roles.
select dblink_exec('stage', format('delete from conductor.events where name = %L', :'q')) as d4 \gset
select dblink_disconnect('client') as x2 \gset
select dblink_disconnect('worker') as x3 \gset
select dblink_exec('stage', format('drop role %I, %I', :'wrole', :'crole')) as d6 \gset
select dblink_disconnect('stage') as x1 \gset

select * from finish();
rollback;
