-- Deploy conductor:schema/conductor to pg
--
-- The conductor schema and the types every other change shares.
--
-- Owns:   schema conductor, type conductor.task_status
-- Roles:  conductor_client, conductor_worker, conductor_admin (created here when
--         missing; roles are cluster-wide, so they are never dropped by revert)

begin;

create schema conductor;
comment on schema conductor is
  'Conductor: a durable task engine. Call the functions; read the tables.';

-- The lifecycle of a task. queued/running/waiting are unfinished; the rest are
-- terminal. The words are part of the contract other languages rely on.
create type conductor.task_status as enum (
  'queued',     -- ready now, or due later by run_at
  'running',    -- leased by a worker (attempt_id, lease_expires_at)
  'waiting',    -- suspended: on children, an event or a time
  'succeeded',
  'failed',     -- out of attempts
  'cancelled',
  'timed_out',
  'dead'        -- out of recoveries, or a kind no worker knows
);

do $$
begin
  if not exists (select from pg_roles where rolname = 'conductor_client') then
    create role conductor_client nologin;
  end if;
  if not exists (select from pg_roles where rolname = 'conductor_worker') then
    create role conductor_worker nologin;
  end if;
  if not exists (select from pg_roles where rolname = 'conductor_admin') then
    create role conductor_admin nologin;
  end if;
end
$$;

grant usage on schema conductor to conductor_client, conductor_worker, conductor_admin;
grant usage on type conductor.task_status to conductor_client, conductor_worker, conductor_admin;

commit;
