-- Issue 25: claim took pg_try_advisory_xact_lock(hashtextextended('conductor:concurrency:'
-- || key, 0)) for each concurrency key, so a login with no grant at all that held that key
-- made the key's tasks unclaimable for ever. The key's slot is a row of a table granted to
-- nobody now: the squatter's advisory lock changes nothing, and it cannot lock the slot.
-- The squatter is a dblink session of a login with nothing but CONNECT; the claimer a role
-- granted conductor_worker, in this transaction.
begin;
select plan(5);
\ir ../helpers.psql
create extension if not exists dblink;

select 'ckey-squat-' || pg_backend_pid() as q \gset
select dblink_exec(conductor_tests.conninfo(),
  $q$do $x$ begin create role t_nobody_ckey login; exception when duplicate_object then null; end $x$$q$) as r \gset
select dblink_connect('squatter', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=t_nobody_ckey')) as c \gset

select conductor.enqueue('k', '{}', :'q', concurrency_key => 'account-1') as t1 \gset
select conductor.enqueue('k', '{}', :'q', concurrency_key => 'account-1') as t2 \gset

select is((select ok from dblink('squatter', format('select pg_try_advisory_lock(hashtextextended(%L, 0))',
                                                     'conductor:concurrency:account-1')) as x(ok boolean)),
  true, 'The login without grants holds the advisory key v0.2.0''s claim tried for key account-1.');

create role t_ckey_worker;
grant conductor_worker to t_ckey_worker;
set local role t_ckey_worker;
select results_eq(format($$select task_id from conductor.claim('w1', array[%L], 10)$$, :'q'),
  format('values (%s::bigint)', :t1), 'A worker still claims the key''s first task (one per key).');
select is_empty(format($$select * from conductor.claim('w2', array[%L], 10)$$, :'q'),
  'and, while it runs, not the second.');
reset role;

select throws_ok($$select * from dblink('squatter', 'select slot from conductor.concurrency_slots for update') as x(n integer)$$,
  '42501', NULL, 'The login without grants cannot read or lock the slot rows.');
select is((select count(*) from pg_locks l where l.pid = pg_backend_pid() and l.locktype = 'advisory' and l.objsubid = 1),
  0::bigint, 'The claims took no advisory lock on a 64-bit key.');

select dblink_disconnect('squatter') as x \gset
select dblink_exec(conductor_tests.conninfo(), 'drop role t_nobody_ckey') as r \gset
select * from finish();
rollback;
