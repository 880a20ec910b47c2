-- exclusive(name) holds the lock of name for the caller's transaction: a second transaction
-- asking for the same name waits until the first commits (or rolls back), then gets it;
-- another name does not wait; taking it again in the same transaction returns at once; the
-- first call of a name (its row made by an uncommitted transaction) excludes as well. It
-- takes no advisory lock. dblink sessions 'a' and 'b' run the two transactions.
begin;
select plan(11);
\ir ../helpers.psql
create extension if not exists dblink;

select 'excl-' || pg_backend_pid() as n \gset
select dblink_connect('a', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('b', conductor_tests.conninfo()) as c2 \gset
select pid as a_pid from dblink('a', 'select pg_backend_pid()') as r(pid int) \gset
select pid as b_pid from dblink('b', 'select pg_backend_pid()') as r(pid int) \gset

-- the name is new: a's call makes its row, uncommitted
select dblink_exec('a', 'begin') as ba \gset
select (select count(*) from dblink('a', format('select conductor.exclusive(%L)', :'n')) as r(x text)) as xa \gset
select is((select count(*) from pg_locks l where l.pid = :a_pid and l.locktype = 'advisory'), 0::bigint,
  'The first transaction holds the name without any advisory lock.');
select lives_ok(format('select count(*) from dblink(%L, %L) as r(x text)', 'a', format('select conductor.exclusive(%L)', :'n')),
  'Taking it again in the same transaction returns at once.');

select dblink_exec('b', 'begin') as bb \gset
select is((select ok from dblink('b', format('select count(*) = 1 from (select conductor.exclusive(%L)) x', :'n' || '-other')) as r(ok boolean)),
  true, 'Another name does not wait.');
select dblink_send_query('b', format('select count(*) = 1 from (select conductor.exclusive(%L)) x', :'n')) as sent \gset
select ok(conductor_tests.await_lock_wait(:b_pid), 'The second transaction asking for the name waits on a lock (its first row, made by the first).');
select is(dblink_is_busy('b'), 1, 'It has not returned.');
select dblink_exec('a', 'commit') as ka \gset
select is((select ok from dblink_get_result('b') as r(ok boolean)), true,
  'When the first commits, the second gets the lock.');
select * from dblink_get_result('b') as r(ok boolean);  -- the end of the async query

-- the row exists now: the same with a row lock
select dblink_exec('a', 'begin') as ba \gset
select dblink_send_query('a', format('select count(*) = 1 from (select conductor.exclusive(%L)) x', :'n')) as sent \gset
select ok(conductor_tests.await_lock_wait(:a_pid), 'Now the first waits for the second, which holds the name.');
select dblink_exec('b', 'rollback') as rb \gset
select is((select ok from dblink_get_result('a') as r(ok boolean)), true, 'A rollback releases it too.');
select * from dblink_get_result('a') as r(ok boolean);
select dblink_exec('a', 'commit') as ka \gset

-- a first call that rolls back leaves no row, and excludes nobody after
select dblink_exec('a', 'begin') as ba \gset
select (select count(*) from dblink('a', format('select conductor.exclusive(%L)', :'n' || '-gone')) as r(x text)) as xa \gset
select dblink_exec('a', 'rollback') as ra \gset
select is((select ok from dblink('b', format('select count(*) = 1 from (select conductor.exclusive(%L)) x', :'n' || '-gone')) as r(ok boolean)),
  true, 'A name whose first caller rolled back is free.');
select is((select n from dblink('b', format('select count(*) from conductor.exclusive_locks where name like %L', :'n' || '%')) as r(n bigint)),
  2::bigint, 'One row per name that a committed transaction made (the other name''s went with b''s rollback).');
select is((select count(*) from pg_locks l where l.pid in (:a_pid, :b_pid) and l.locktype = 'advisory'), 0::bigint,
  'No advisory lock was taken at any point.');

select dblink_exec('a', format('delete from conductor.exclusive_locks where name like %L', :'n' || '%')) as d \gset
select dblink_disconnect('a') as x1 \gset
select dblink_disconnect('b') as x2 \gset

select * from finish();
rollback;
