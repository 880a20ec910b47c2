-- try_lead gives a leader lock to one session at a time and never waits; release_lead hands
-- it on. The other session is a dblink connection. Session locks outlive the test's rollback,
-- so the test releases what it took.
begin;
select plan(9);
\ir ../helpers.psql
create extension if not exists dblink;

select 'lead-test-' || pg_backend_pid() as n \gset
select dblink_connect('other', conductor_tests.conninfo()) as c \gset
select dblink_exec('other', 'set lock_timeout = ''2s''') as f \gset
select pid as other_pid from dblink('other', 'select pg_backend_pid()') as x(pid integer) \gset
select set_config('t.other_pid', :'other_pid', true) as c \gset

select is(conductor.try_lead(:'n'), true, 'The first session to try a free leader lock gets it.');
select is(
  (select ok from dblink('other', format('select conductor.try_lead(%L)', :'n')) as x(ok boolean)),
  false, 'Another session trying the same lock gets false at once instead of waiting.');
select is(
  (select ok from dblink('other', format('select conductor.try_lead(%L)', :'n' || '-else')) as x(ok boolean)),
  true, 'A lock of another name is free for the other session.');

select is(conductor.release_lead(:'n'), true, 'The holder releases it: release_lead returns true.');
select is(
  (select ok from dblink('other', format('select conductor.try_lead(%L)', :'n')) as x(ok boolean)),
  true, 'Then the other session takes it.');
select is(conductor.try_lead(:'n'), false, 'And the first session is refused in turn.');

set local client_min_messages = error;  -- release_lead warns when this session holds nothing
select is(conductor.release_lead(:'n'), false, 'Releasing a lock this session does not hold returns false.');
reset client_min_messages;

select dblink_disconnect('other') as x \gset
-- The backend exits just after the disconnect returns: wait (at most 5 s) for its locks to go.
do $$ begin
  for i in 1..500 loop
    exit when not exists (select from pg_locks where pid = current_setting('t.other_pid')::integer);
    perform pg_sleep(0.01);
  end loop;
end $$;
select is(conductor.try_lead(:'n'), true,
  'When the holder''s connection ends its lock goes with it: the first session takes it again.');
select is(conductor.release_lead(:'n'), true, 'and releases it.');

select * from finish();
rollback;
