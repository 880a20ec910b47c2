-- Revert conductor:functions/leader from pg: back to its v0.2.0 bodies
-- (the lease rows go with schema/coordination's revert)
--
-- Leader locks for singleton loops (the scheduler's tick, the reaper, retention,
-- an app's singletons): session advisory locks whose 64-bit key is a stable
-- hash of 'conductor.lead:' and the lock's name. The engine is one schema
-- named conductor per database (every function names its objects
-- conductor.*), and each of its key spaces hashes its own prefix:
-- 'conductor.lead:' here, 'conductor.exclusive:' for exclusive(),
-- 'conductor:concurrency:' and 'conductor:event:' for claim's concurrency keys
-- and a run's event waits, two-integer keys for enqueue's in-flight locks.
-- So no leader name can take another key space's lock (v0.1.0 hashed
-- 'conductor:' || name, and a leader named 'event:x' shared emit_event's lock
-- of event x). An application's own advisory locks would have to hash the
-- same text to collide. A leader that loses its connection loses the lock
-- with it, and another session can take it at once.
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
set local role conductor_owner;

-- what the rework added (leases, the report of foreign lock holders), and leaders()
-- whose answer changed: v0.2.0's is made again below
drop function conductor.foreign_lock_holders(interval);
drop function conductor._advisory_holders(bigint[], text[], text[]);
drop function conductor.try_lead(text, text, interval);
drop function conductor.release_lead(text, text);
drop function conductor.leaders(text[]);
drop function conductor._take_lead(text, text, interval, integer);
drop function conductor._lease_live(timestamptz, integer, timestamptz);

create or replace function conductor.lead_key(name text) returns bigint
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select pg_catalog.hashtextextended('conductor.lead:' || lead_key.name, 0)
$$;

comment on function conductor.lead_key(text) is
$$The advisory lock key of leader lock name: hashtextextended('conductor.lead:' || name, 0),
stable across sessions and PostgreSQL versions, apart from the engine's other advisory locks
(exclusive(), concurrency keys, event waits).$$;

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

create or replace function conductor.leaders(names text[] default array['scheduler', 'reaper', 'retention'])
  returns table (name text, pid integer, application_name text, backend_start timestamptz)
  language sql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select n.name, l.pid, a.application_name, a.backend_start
    from pg_catalog.unnest(leaders.names) with ordinality as n(name, ord)
    join pg_catalog.pg_locks l
      on l.locktype = 'advisory' and l.granted and l.objsubid = 1
     and l.database = (select d.oid from pg_catalog.pg_database d where d.datname = pg_catalog.current_database())
     and l.classid::bigint = ((conductor.lead_key(n.name) >> 32) & 4294967295)
     and l.objid::bigint = (conductor.lead_key(n.name) & 4294967295)
    left join pg_catalog.pg_stat_activity a on a.pid = l.pid
   order by n.ord
$$;

comment on function conductor.leaders(text[]) is
$$Which session (pid, application_name) holds each of the named leader locks of this
schema (default: the engine's own, scheduler, reaper and retention; a singleton's lock is
named 'singleton:' || its name), in the order of names; a name nobody holds has no row.$$;

revoke execute on function conductor.try_lead(text) from public;
revoke execute on function conductor.release_lead(text) from public;
revoke execute on function conductor.leaders(text[]) from public;
revoke execute on function conductor.lead_key(text) from public;
grant execute on function conductor.lead_key(text) to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.try_lead(text) to conductor_worker, conductor_admin;
grant execute on function conductor.release_lead(text) to conductor_worker, conductor_admin;
grant execute on function conductor.leaders(text[]) to conductor_client, conductor_worker, conductor_admin;

commit;
