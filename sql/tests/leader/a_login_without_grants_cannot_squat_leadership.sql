-- Issue 25: a login with no grant at all took v0.2.0's leader locks
-- (pg_advisory_lock(hashtextextended('conductor.lead:scheduler', 0))), so no schedule
-- fired. Leadership is a lease row now: the squatter's advisory locks change nothing, and
-- it can neither read nor lock the lease rows. The squatter is a dblink session of a login
-- with nothing but CONNECT; the worker is a role granted conductor_worker.
begin;
select plan(7);
\ir ../helpers.psql
create extension if not exists dblink;

select dblink_exec(conductor_tests.conninfo(),
  $q$do $x$ begin create role t_nobody_lead login; exception when duplicate_object then null; end $x$$q$) as r \gset
select dblink_connect('squatter', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=t_nobody_lead')) as c \gset
select dblink_connect('worker', conductor_tests.conninfo()) as c \gset
select dblink_exec(conductor_tests.conninfo(),
  $q$do $x$ begin create role t_lead_squat_worker login; exception when duplicate_object then null; end $x$$q$) as r \gset
select dblink_exec(conductor_tests.conninfo(), 'grant conductor_worker to t_lead_squat_worker') as r \gset
select dblink_exec('worker', 'set role t_lead_squat_worker') as r \gset
select dblink_exec('worker', 'set lock_timeout = ''2s''') as r \gset

select is((select ok from dblink('squatter', $$select pg_try_advisory_lock(hashtextextended('conductor.lead:scheduler', 0))
                                               and pg_try_advisory_lock(hashtextextended('conductor.lead:reaper', 0))
                                               and pg_try_advisory_lock(hashtextextended('conductor.lead:retention', 0))
                                               and pg_try_advisory_lock(hashtextextended('conductor.lead:singleton:squat-feed', 0))$$)
            as x(ok boolean)),
  true, 'The login without grants holds every key v0.2.0''s leader locks used.');

select is((select ok from dblink('worker', $$select conductor.try_lead(name => 'scheduler')$$) as x(ok boolean)), true,
  'A worker still takes the scheduler''s leadership (v0.2.0''s signature, as a v0.2.0 worker calls it).');
select is((select ok from dblink('worker', $$select conductor.release_lead(name => 'scheduler')$$) as x(ok boolean)), true,
  'and gives it up.');
select is((select ok from dblink('worker', $$select conductor.try_lead('singleton:squat-feed', 'w-1', interval '5 seconds')$$)
            as x(ok boolean)), true,
  'A worker takes a singleton''s lease (the signature workers of this release call).');
select is((select ok from dblink('worker', $$select conductor.release_lead('singleton:squat-feed', 'w-1')$$) as x(ok boolean)),
  true, 'and releases it.');

select throws_ok($$select * from dblink('squatter', 'select name from conductor.leader_leases for update') as x(n text)$$,
  '42501', NULL, 'The login without grants cannot read or lock the lease rows.');
select throws_ok($$select * from dblink('squatter', 'select conductor.try_lead(''scheduler'', ''me'', interval ''1 hour'')') as x(ok boolean)$$,
  '42501', NULL, 'Nor take a lease: try_lead is granted to workers and admins only.');

select dblink_exec('worker', $$reset role$$) as r \gset
select dblink_exec('worker', $$delete from conductor.leader_leases where name in ('scheduler', 'singleton:squat-feed')$$) as d \gset
select dblink_disconnect('squatter') as x \gset
select dblink_disconnect('worker') as x \gset
select dblink_exec(conductor_tests.conninfo(), 'drop role t_nobody_lead') as r \gset
select dblink_exec(conductor_tests.conninfo(), 'drop role t_lead_squat_worker') as r \gset
select * from finish();
rollback;
