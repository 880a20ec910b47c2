-- conductor._forget_exclusive_locks(older_than, batch) deletes the rows of names made before
-- now - older_than that no transaction holds (SKIP LOCKED), at most batch; exclusive() of a
-- forgotten name makes its row again. Sessions 'w' (autocommit, as apply_retention runs) and
-- 'holder' are dblink connections on the fake clock; they clean up after themselves.
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;

select 'excl-forget-' || pg_backend_pid() as n \gset
select set_config('t.n', :'n', true) as n \gset
select dblink_connect('w', conductor_tests.conninfo()) as c \gset
select dblink_connect('holder', conductor_tests.conninfo()) as c \gset
select dblink_exec('w', 'set conductor.fake_now = ''2030-01-01 00:00:00+00''') as s \gset
select dblink_exec('holder', 'set conductor.fake_now = ''2030-01-01 00:00:00+00''') as s \gset
create function pg_temp.w(q text) returns text language sql as $$ select x from dblink('w', q) as r(x text) $$;
-- this test's rows, by name
create function pg_temp.mine() returns text language sql as $$
  select coalesce(pg_temp.w(format('select string_agg(name, '','' order by name) from conductor.exclusive_locks where name like %L',
                                   current_setting('t.n') || '%')), '') $$;

select pg_temp.w(format('select conductor.exclusive(%L)', n)) from unnest(array[:'n' || '-a', :'n' || '-b', :'n' || '-c', :'n' || '-held']) n;
select dblink_exec('holder', 'begin') as b \gset
select * from dblink('holder', format('select conductor.exclusive(%L)', :'n' || '-held')) as x(t text);

select dblink_exec('w', 'set conductor.fake_now = ''2030-01-01 23:59:59+00''') as s \gset
select pg_temp.w('select conductor._forget_exclusive_locks(interval ''1 day'', 1000)::text');
select is(pg_temp.mine(), format('%1$s-a,%1$s-b,%1$s-c,%1$s-held', :'n'), 'A row less than a day old is kept.');
select dblink_exec('w', 'set conductor.fake_now = ''2030-01-02 00:00:01+00''') as s \gset
select is(pg_temp.w('select conductor._forget_exclusive_locks(interval ''1 day'', 1)::text'), '1',
  'Older rows nobody holds are forgotten, batch at a time.');
select pg_temp.w('select conductor._forget_exclusive_locks(interval ''1 day'', 1000)::text');
select is(pg_temp.mine(), :'n' || '-held', 'All of them but the row a transaction holds.');
select dblink_exec('holder', 'commit') as c \gset
select pg_temp.w('select conductor._forget_exclusive_locks(interval ''1 day'', 1000)::text');
select is(pg_temp.mine(), '', 'Once released it goes too.');
select is(pg_temp.w(format('select conductor.exclusive(%L)', :'n' || '-held')), '', 'exclusive() of a forgotten name');
select is(pg_temp.mine(), :'n' || '-held', 'makes its row again.');

select pg_temp.w(format('delete from conductor.exclusive_locks where name like %L returning 1', :'n' || '%'));
select dblink_disconnect('w') as x \gset
select dblink_disconnect('holder') as x \gset
select * from finish();
rollback;
