-- try_lead gives a leader lease to one holder at a time and never waits; the holder renews
-- it; release_lead hands it on at once. The contenders are dblink sessions in autocommit,
-- as workers call it. Leases are rows that outlive the test's rollback, so the names are
-- this test's own.
begin;
select plan(10);
\ir ../helpers.psql
create extension if not exists dblink;

select 'lead-test-' || pg_backend_pid() as n \gset
select dblink_connect('a', conductor_tests.conninfo()) as c \gset
select dblink_connect('b', conductor_tests.conninfo()) as c \gset
select dblink_exec('b', 'set lock_timeout = ''2s''') as f \gset

create function pg_temp.try(conn text, name text, holder text) returns boolean
  language sql as $$
  select ok from dblink(conn, format('select conductor.try_lead(%L, %L, interval ''30 seconds'')', name, holder))
    as x(ok boolean) $$;
create function pg_temp.release(conn text, name text, holder text) returns boolean
  language sql as $$
  select ok from dblink(conn, format('select conductor.release_lead(%L, %L)', name, holder)) as x(ok boolean) $$;

select is(pg_temp.try('a', :'n', 'holder-a'), true, 'The first holder to try a free name gets its lease.');
select is(pg_temp.try('b', :'n', 'holder-b'), false, 'Another holder trying the same name gets false at once instead of waiting.');
select is(pg_temp.try('b', :'n' || '-else', 'holder-b'), true, 'A lease of another name is free for the other holder.');
select is(pg_temp.try('a', :'n', 'holder-a'), true, 'The holder renews its lease.');
select is(pg_temp.try('b', :'n', 'holder-a'), true,
  'The lease belongs to the holder string and the login, not the connection: the same holder on another connection renews it.');

select is(pg_temp.release('b', :'n', 'holder-b'), false, 'Releasing a lease another holder has returns false.');
select is(pg_temp.release('a', :'n', 'holder-a'), true, 'The holder releases it: release_lead returns true.');
select is(pg_temp.try('b', :'n', 'holder-b'), true, 'Then the other holder takes it at once.');
select is(pg_temp.try('a', :'n', 'holder-a'), false, 'And the first holder is refused in turn.');
select is(pg_temp.release('a', :'n', 'holder-a'), false, 'Releasing a lease it does not hold returns false.');

select dblink_exec('a', format('delete from conductor.leader_leases where name in (%L, %L)', :'n', :'n' || '-else')) as d \gset
select dblink_disconnect('a') as x \gset
select dblink_disconnect('b') as x \gset
select * from finish();
rollback;
