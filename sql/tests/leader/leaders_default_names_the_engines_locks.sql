-- leaders() without names lists the engine's own leader locks: scheduler, reaper and
-- retention (pyconductor serve's maintenance role takes 'retention'). Called as
-- conductor_client, a role it is granted to.
begin;
select plan(2);
\ir ../helpers.psql
create extension if not exists dblink;

select dblink_connect('holder', conductor_tests.conninfo()) as c \gset
select pid as holder_pid from dblink('holder', 'select pg_backend_pid()') as p(pid integer) \gset
select held from dblink('holder', $$select conductor.try_lead('retention') and conductor.try_lead('scheduler')$$)
  as r(held boolean) \gset

set local role conductor_client;
select is((select array_agg(name order by name) from conductor.leaders() where pid = :holder_pid),
          array['retention', 'scheduler'],
          'The default names include retention beside scheduler and reaper.');
select is_empty($$select * from conductor.leaders() where name = 'reaper'$$, 'A lock nobody holds is not listed.');
reset role;

select dblink_disconnect('holder') as x \gset
select * from finish();
rollback;
