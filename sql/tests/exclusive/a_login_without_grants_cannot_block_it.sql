-- Issue 25: exclusive(name) was pg_advisory_xact_lock on a key anyone can compute, so a
-- login with no grant at all (pg_advisory_lock(hashtextextended('conductor.exclusive:' ||
-- name, 0))) made every exclusive(name) wait for as long as it liked. Now it locks a row
-- of a table granted to nobody: the squatter's advisory lock changes nothing, and it cannot
-- lock the rows. The squatter is a dblink session of a login with nothing but CONNECT; the
-- caller is a conductor_client role, one exclusive() is granted to.
begin;
select plan(4);
\ir ../helpers.psql
create extension if not exists dblink;

select 'excl-squat-' || pg_backend_pid() as n \gset
select dblink_exec(conductor_tests.conninfo(),
  $q$do $x$ begin create role t_nobody_excl login; exception when duplicate_object then null; end $x$$q$) as r \gset
select dblink_connect('squatter', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=t_nobody_excl')) as c \gset
select dblink_connect('client', conductor_tests.conninfo()) as c \gset
select dblink_exec('client', 'set role conductor_client') as r \gset
select dblink_exec('client', 'set lock_timeout = ''2s''') as r \gset

select is((select ok from dblink('squatter', format('select pg_try_advisory_lock(hashtextextended(%L, 0))',
                                                     'conductor.exclusive:' || :'n')) as x(ok boolean)),
  true, 'The login without grants holds the advisory key v0.2.0''s exclusive(name) waited for.');
select lives_ok(format($$select * from dblink('client', %L) as x(t text)$$, format('select conductor.exclusive(%L)', :'n')),
  'A client''s exclusive(name) returns at once (lock_timeout 2 s): the squatter holds nothing it waits for.');
select lives_ok(format($$select * from dblink('client', %L) as x(t text)$$, format('select conductor.exclusive(%L)', :'n')),
  'and so again, when the name''s row exists.');
select throws_ok($$select * from dblink('squatter', 'select name from conductor.exclusive_locks for update') as x(n text)$$,
  '42501', NULL, 'The login without grants cannot read or lock the rows exclusive() locks.');

select dblink_exec('client', 'reset role') as r \gset
select dblink_exec('client', format('delete from conductor.exclusive_locks where name = %L', :'n')) as d \gset
select dblink_disconnect('squatter') as x \gset
select dblink_disconnect('client') as x \gset
select dblink_exec(conductor_tests.conninfo(), 'drop role t_nobody_excl') as r \gset
select * from finish();
rollback;
