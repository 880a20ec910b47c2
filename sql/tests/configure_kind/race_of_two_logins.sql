-- Two logins declare one new kind at once (issue 25): the first inserts it and keeps its
-- transaction open; the second finds no row and its insert waits on the first's key. Once
-- the first commits, the second is judged against the first's row, as if it had been there:
-- a different policy from another login is refused (QC208), not stored over it, and the
-- same policy succeeds. The logins are made and dropped through a third session (a role
-- this transaction created would not exist for the others).
begin;
select plan(5);
\ir ../helpers.psql
create extension if not exists dblink;

select 'race-kind-' || pg_backend_pid() as kind, 't_race_a_' || pg_backend_pid() as role_a,
       't_race_b_' || pg_backend_pid() as role_b \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c0 \gset
select dblink_exec('stage', format('create role %I; grant conductor_worker to %I; create role %I; grant conductor_worker to %I',
  :'role_a', :'role_a', :'role_b', :'role_b')) as made \gset
select dblink_connect('first', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('second', conductor_tests.conninfo()) as c2 \gset
select dblink_exec('first', format('set role %I', :'role_a')) as r1 \gset
select dblink_exec('second', format('set role %I', :'role_b')) as r2 \gset
select pid as second_pid from dblink('second', 'select pg_backend_pid()') as p(pid integer) \gset
select dblink_exec('second', format($f$
  create function pg_temp.declare(q text) returns text language plpgsql as $$
  begin
    perform conductor.configure_kind(%L, queue => q);
    return 'stored';
  exception when sqlstate 'QC208' then
    return 'QC208';
  end
  $$$f$, :'kind')) as f \gset

select dblink_exec('first', 'begin') as b \gset
select count(*) as d1 from dblink('first', format($$select conductor.configure_kind(%L, queue => 'a-q')::text$$, :'kind'))
  as d(x text) \gset
select dblink_send_query('second', $$select pg_temp.declare('b-q')$$) as sent \gset
select ok(conductor_tests.await_lock_wait(:second_pid), 'The second login''s declaration waits on the first''s key.');
select dblink_exec('first', 'commit') as c \gset
select is((select r from dblink_get_result('second', false) as s(r text)), 'QC208',
  'Once the first commits, the second, which declares it differently, is refused with QC208 (no 23505).');
select count(*) as done from dblink_get_result('second') as s(r text) \gset
select is((select row(q, o)::text from dblink('stage', format(
  'select queue, owner from conductor.kinds where kind = %L', :'kind')) as r(q text, o text)),
  row('a-q', :'role_a')::text, 'The first login''s policy is stored, and the kind is its.');
select is((select r from dblink('second', $$select pg_temp.declare('a-q')$$) as s(r text)), 'stored',
  'The second login declaring the same policy succeeds.');
select is((select o from dblink('stage', format('select owner from conductor.kinds where kind = %L', :'kind')) as r(o text)),
  :'role_a', 'And the kind stays the first login''s.');

select dblink_exec('second', 'drop function pg_temp.declare(text); reset role') as f2 \gset
select dblink_disconnect('first') as x1 \gset
select dblink_disconnect('second') as x2 \gset
select dblink_exec('stage', format('delete from conductor.kinds where kind = %L; drop role %I; drop role %I',
  :'kind', :'role_a', :'role_b')) as gone \gset
select dblink_disconnect('stage') as x0 \gset

select * from finish();
rollback;
