-- Revert conductor:functions/leader from pg: back to its v0.1.0 body
--
-- The v0.1.0 deploy script (functions/leader@v0.1.0.sql), with create or replace, and
-- search_path pinned to pg_catalog, pg_temp instead of '': going back to v0.1.0's
-- bodies does not reopen the pg_temp escalation (issue 14).
--
-- Leader locks for singleton loops (the scheduler's tick, the reaper): session
-- advisory locks whose 64-bit key is a stable hash of this schema's name and
-- the lock's name, so two installations in two schemas of one database never
-- share a lock. A leader that loses its connection loses the lock with it, and
-- another session can take it at once.
--
-- Correctness never depends on these locks: tick() fires each due time once
-- through a unique key and reap() is compare-and-set. A leader only saves the
-- others duplicate work.
--
--   conductor.lead_key(name) -> bigint     the advisory lock key
--   conductor.try_lead(name) -> boolean    take it if free (session-level)
--   conductor.release_lead(name) -> boolean
--   conductor.leaders()                    who holds which lock of this schema

begin;

create or replace function conductor.lead_key(name text) returns bigint
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select pg_catalog.hashtextextended('conductor:' || lead_key.name, 0)
$$;

comment on function conductor.lead_key(text) is
$$The advisory lock key of leader lock name: hashtextextended('conductor:' || name, 0),
stable across sessions and PostgreSQL versions.$$;

create or replace function conductor.try_lead(name text) returns boolean
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  if try_lead.name is null or try_lead.name = '' then
    raise exception 'a leader lock needs a name' using errcode = 'QC106';
  end if;
  return pg_catalog.pg_try_advisory_lock(conductor.lead_key(try_lead.name));
end
$$;

comment on function conductor.try_lead(text) is
$$Takes the session-level leader lock name if no other session holds it; returns whether
this session holds it now. Never waits. Taking it twice in one session nests (release
as often). Raises QC106 for an empty name.$$;

create or replace function conductor.release_lead(name text) returns boolean
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select pg_catalog.pg_advisory_unlock(conductor.lead_key(release_lead.name))
$$;

comment on function conductor.release_lead(text) is
$$Releases the leader lock name held by this session; returns false (with a warning from
PostgreSQL) when this session did not hold it.$$;

create or replace function conductor.leaders(names text[] default array['scheduler', 'reaper'])
  returns table (name text, pid integer, application_name text, backend_start timestamptz)
  language sql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select n.name, l.pid, a.application_name, a.backend_start
    from pg_catalog.unnest(leaders.names) as n(name)
    join pg_catalog.pg_locks l
      on l.locktype = 'advisory' and l.granted and l.objsubid = 1
     and l.database = (select d.oid from pg_catalog.pg_database d where d.datname = pg_catalog.current_database())
     and l.classid::bigint = ((conductor.lead_key(n.name) >> 32) & 4294967295)
     and l.objid::bigint = (conductor.lead_key(n.name) & 4294967295)
    left join pg_catalog.pg_stat_activity a on a.pid = l.pid
$$;

comment on function conductor.leaders(text[]) is
$$Which session (pid, application_name) holds each of the named leader locks of this
schema; a name nobody holds has no row.$$;

revoke execute on function conductor.try_lead(text) from public;
revoke execute on function conductor.release_lead(text) from public;
revoke execute on function conductor.leaders(text[]) from public;
revoke execute on function conductor.lead_key(text) from public;
grant execute on function conductor.lead_key(text) to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.try_lead(text) to conductor_worker, conductor_admin;
grant execute on function conductor.release_lead(text) to conductor_worker, conductor_admin;
grant execute on function conductor.leaders(text[]) to conductor_client, conductor_worker, conductor_admin;

commit;
