-- exclusive(name) takes a transaction-scoped advisory lock on
-- hashtextextended('conductor.exclusive:' || name, 0): a second transaction asking for the
-- same name waits until the first commits (or rolls back), then gets it; another name does
-- not wait; taking it again in the same transaction returns at once. dblink sessions 'a'
-- and 'b' run the two transactions.
begin;
select plan(9);
\ir ../helpers.psql
create extension if not exists dblink;

select 'excl-' || pg_backend_pid() as n \gset
select dblink_connect('a', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('b', conductor_tests.conninfo()) as c2 \gset
select pid as a_pid from dblink('a', 'select pg_backend_pid()') as r(pid int) \gset
select pid as b_pid from dblink('b', 'select pg_backend_pid()') as r(pid int) \gset
select hashtextextended('conductor.exclusive:' || :'n', 0) as k \gset

select dblink_exec('a', 'begin') as ba \gset
select (select count(*) from dblink('a', format('select conductor.exclusive(%L)', :'n')) as r(x text)) as xa \gset
select is((select count(*) from pg_locks l
            where l.pid = :a_pid and l.locktype = 'advisory' and l.granted and l.mode = 'ExclusiveLock'
              and l.objsubid = 1
              and l.classid::bigint = ((:k::bigint >> 32) & 4294967295)
              and l.objid::bigint = (:k::bigint & 4294967295)), 1::bigint,
  'The first transaction holds the advisory lock whose key is hashtextextended(''conductor.exclusive:'' || name, 0).');
select lives_ok(format('select count(*) from dblink(%L, %L) as r(x text)', 'a', format('select conductor.exclusive(%L)', :'n')),
  'Taking it again in the same transaction returns at once.');

select dblink_exec('b', 'begin') as bb \gset
select is((select ok from dblink('b', format('select count(*) = 1 from (select conductor.exclusive(%L)) x', :'n' || '-other')) as r(ok boolean)),
  true, 'Another name does not wait.');
select dblink_send_query('b', format('select count(*) = 1 from (select conductor.exclusive(%L)) x', :'n')) as sent \gset
select ok(conductor_tests.await_lock_wait(:b_pid), 'The second transaction asking for the name waits on a lock.');
select is(dblink_is_busy('b'), 1, 'It has not returned.');
select dblink_exec('a', 'commit') as ka \gset
select is((select ok from dblink_get_result('b') as r(ok boolean)), true,
  'When the first commits, the second gets the lock.');
select * from dblink_get_result('b') as r(ok boolean);  -- the end of the async query
select is((select count(*) from pg_locks l where l.pid = :a_pid and l.locktype = 'advisory'), 0::bigint,
  'The first session holds nothing after its commit.');
select dblink_exec('b', 'rollback') as rb \gset
select is((select count(*) from pg_locks l where l.pid = :b_pid and l.locktype = 'advisory'), 0::bigint,
  'A rollback releases it too.');
select is((select count(*) from pg_locks l where l.pid = :a_pid and l.locktype = 'advisory'
             and l.objid::bigint = (:k::bigint & 4294967295)), 0::bigint,
  '(Nobody holds it.)');

select dblink_disconnect('a') as x1 \gset
select dblink_disconnect('b') as x2 \gset

select * from finish();
rollback;
