-- v0.2.0 workers call try_lead(name) once and lead for as long as their session lives,
-- without renewing (its session advisory lock did that). During a rolling upgrade the
-- v0.2.0 signature takes a lease of the calling session: live while its backend lives,
-- refused to every other holder meanwhile (old or new), taken over once the backend is
-- gone, released by release_lead(name). The sessions are dblink connections.
begin;
select plan(8);
\ir ../helpers.psql
create extension if not exists dblink;

select 'v020-lead-' || pg_backend_pid() as n \gset
select dblink_connect('old', conductor_tests.conninfo()) as c \gset
select dblink_connect('new', conductor_tests.conninfo()) as c \gset
select pid as old_pid from dblink('old', 'select pg_backend_pid()') as x(pid integer) \gset
select set_config('t.old_pid', :'old_pid', true) as c \gset

select is((select ok from dblink('old', format('select conductor.try_lead(%L)', :'n')) as x(ok boolean)), true,
  'A v0.2.0 worker takes the lease with try_lead(name).');
select is((select ok from dblink('old', format('select conductor.try_lead(%L)', :'n')) as x(ok boolean)), true,
  'Asking again from the same session answers true.');
select results_eq(format('select holder, expires_at, pid from conductor.leaders(array[%L])', :'n'),
  format($$values ('session %s'::text, 'infinity'::timestamptz, %s)$$, :old_pid, :old_pid),
  'It is the session''s lease: holder ''session <pid>'', no expiry.');
select is((select ok from dblink('new', format('select conductor.try_lead(%L, %L, interval ''10 seconds'')', :'n', 'new-holder'))
             as x(ok boolean)), false, 'A worker of this release is refused while that session lives.');
select is((select ok from dblink('new', format('select conductor.try_lead(%L)', :'n')) as x(ok boolean)), false,
  'So is another v0.2.0 session.');

select dblink_disconnect('old') as x \gset
-- the backend exits just after the disconnect returns: wait (at most 5 s) for it to go
do $$ begin
  for i in 1..500 loop
    perform pg_stat_clear_snapshot();
    exit when not exists (select from pg_stat_activity where pid = current_setting('t.old_pid')::integer);
    perform pg_sleep(0.01);
  end loop;
end $$;
select is((select ok from dblink('new', format('select conductor.try_lead(%L, %L, interval ''10 seconds'')', :'n', 'new-holder'))
             as x(ok boolean)), true, 'When that session ends, its lease goes with it: the new worker takes over.');

select is((select ok from dblink('new', format('select conductor.release_lead(%L)', :'n')) as x(ok boolean)), false,
  'release_lead(name) releases only a lease this session took with try_lead(name).');
select is((select ok from dblink('new', format('select conductor.try_lead(%L) and conductor.release_lead(%L)', :'n' || '-2', :'n' || '-2'))
             as x(ok boolean)), true, 'which it does.');

select dblink_exec('new', format('delete from conductor.leader_leases where name in (%L, %L)', :'n', :'n' || '-2')) as d \gset
select dblink_disconnect('new') as x \gset
select * from finish();
rollback;
