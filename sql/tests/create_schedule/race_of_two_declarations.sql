-- Two sessions declare the same new schedule at once (workers starting together): the
-- first inserts it and keeps its transaction open; the second finds no row, and its
-- insert waits on the first's key. Once the first commits, the second answers the row
-- as a re-declaration (equal: nothing written) instead of failing with 23505, and a
-- third declaration that differs replaces it. Both run as conductor_worker. The
-- schedule is deleted at the end through a third session.
begin;
select plan(5);
\ir ../helpers.psql
create extension if not exists dblink;

select 'race-decl-' || pg_backend_pid() as name \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('first', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('second', conductor_tests.conninfo()) as c3 \gset
select count(dblink_exec(c, 'set role conductor_worker')) as roles from unnest(array['first', 'second']) c \gset
select pid as second_pid from dblink('second', 'select pg_backend_pid()') as p(pid integer) \gset

select dblink_exec('first', 'begin') as b \gset
select count(*) as first_declared from dblink('first', format(
  'select s.name from conductor.create_schedule(name => %L, cron => ''* * * * *'', kind => ''k'', replace => true) s',
  :'name')) as s(name text) \gset
select dblink_send_query('second', format(
  'select s.name, s.cron from conductor.create_schedule(name => %L, cron => ''* * * * *'', kind => ''k'', replace => true) s',
  :'name')) as sent \gset

select ok(conductor_tests.await_lock_wait(:second_pid),
  'The second declaration waits on the key the first inserted.');
select dblink_exec('first', 'commit') as c \gset
select is((select row(name, cron)::text from dblink_get_result('second', false) as s(name text, cron text)),
  row(:'name', '* * * * *')::text,
  'Once the first commits, the second answers the row (no 23505).');
select count(*) as done from dblink_get_result('second') as s(name text, cron text) \gset
select is((select n from dblink('stage', format(
  'select count(*) from conductor.schedules where name = %L', :'name')) as r(n bigint)), 1::bigint,
  'One schedule of that name.');
select ok((select same from dblink('stage', format(
  'select updated_at = created_at from conductor.schedules where name = %L', :'name')) as r(same boolean)),
  'The equal re-declaration wrote nothing: the row is as the first created it.');
select is((select cron from dblink('second', format(
  'select s.cron from conductor.create_schedule(name => %L, cron => ''*/5 * * * *'', kind => ''k'', replace => true) s',
  :'name')) as r(cron text)), '*/5 * * * *',
  'A later, different declaration replaces it.');

select dblink_exec('stage', format('delete from conductor.schedules where name = %L', :'name')) as d \gset
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('first') as x2 \gset
select dblink_disconnect('second') as x3 \gset

select * from finish();
rollback;
