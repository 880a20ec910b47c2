-- leaders() names the session holding each leader lock: its backend pid and application_name;
-- a lock nobody holds has no row.
begin;
select plan(5);
\ir ../helpers.psql
create extension if not exists dblink;

select 'leaders-test-' || pg_backend_pid() as n \gset
select is_empty(format('select * from conductor.leaders(array[%L])', :'n'), 'A lock nobody holds is not listed.');

select conductor.try_lead(:'n') as t \gset
select results_eq(
  format('select name, pid, application_name from conductor.leaders(array[%L])', :'n'),
  format('values (%L::text, pg_backend_pid(), current_setting(''application_name''))', :'n'),
  'The holder is listed with its backend pid and application_name.');
select conductor.release_lead(:'n') as r \gset
select is_empty(format('select * from conductor.leaders(array[%L])', :'n'), 'After release it is gone.');

select dblink_connect('other', conductor_tests.conninfo() || ' application_name=leaders-test-other') as c \gset
select pid as other_pid from dblink('other', 'select pg_backend_pid()') as x(pid integer) \gset
select ok from dblink('other', format('select conductor.try_lead(%L)', :'n')) as x(ok boolean) \gset
-- pg_stat_activity is read once per transaction: forget that snapshot to see the new session.
select pg_stat_clear_snapshot() as c \gset
select results_eq(
  format('select pid, application_name from conductor.leaders(array[%L, %L])', :'n', :'n' || '-unheld'),
  format('values (%s, %L::text)', :other_pid, 'leaders-test-other'),
  'A lock held by another session lists that session''s pid and application_name; the unheld name has no row.');
select set_config('t.other_pid', :'other_pid', true) as c \gset
select dblink_disconnect('other') as x \gset
-- The backend exits just after the disconnect returns: wait (at most 5 s) for its locks to go.
do $$ begin
  for i in 1..500 loop
    exit when not exists (select from pg_locks where pid = current_setting('t.other_pid')::integer);
    perform pg_sleep(0.01);
  end loop;
end $$;
select is_empty(format('select * from conductor.leaders(array[%L])', :'n'),
  'When the holder disconnects the lock is no longer listed.');

select * from finish();
rollback;
