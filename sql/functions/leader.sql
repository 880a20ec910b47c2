-- Deploy conductor:functions/leader to pg
-- (reworked after v0.2.0; the released body is sql/released/functions/leader@v0.2.0.sql)
--
-- Leadership for singleton loops (the scheduler's tick, retention, an app's
-- singletons), and the report of sessions outside the engine that hold one of
-- its advisory keys (issue 25).
--
-- A leader holds a lease: a row of conductor.leader_leases (schema/coordination,
-- read-only to every role), taken when the name is free or its lease expired,
-- renewed by its holder well inside the lease, taken over by anyone once it
-- expires (on conductor.now(), so tests move the fake clock), expired at once
-- on a clean stop (the row stays). A holder is a string the process chose
-- (the same at every renewal) together with the login that took it: another
-- login cannot renew or release a lease before it expires. Every call is one short statement, so
-- leases work through a transaction-mode pooler, and no session outside the
-- engine can hold or block one (v0.2.0's session advisory locks could be taken
-- by any login: select pg_advisory_lock(conductor.lead_key('scheduler'))
-- stopped every schedule).
--
-- Correctness never depends on leadership: tick() fires each due time once
-- through a unique key, reap() is compare-and-set and runs on every worker,
-- apply_retention() deletes with SKIP LOCKED. A leader only saves the others
-- duplicate work; an app's singleton relies on it, and stops when it cannot
-- renew in time (pyconductor/leadership.py).
--
--   conductor.try_lead(name, holder, lease) -> boolean   take or renew; never waits
--                                                        for another holder
--   conductor.release_lead(name, holder) -> boolean      give it up (it expires now)
--   conductor.leaders(names)                             the live leases
--   conductor._lease_live(expires_at, session_pid, at)   the one rule of a live lease
--   conductor._take_lead(name, holder, lease, session_pid)  what both try_leads do
-- v0.2.0's signatures, kept for v0.2.0 workers during a rolling upgrade:
--   conductor.try_lead(name) -> boolean      a lease of this session: live while its
--                                            backend lives (v0.2.0's session lock
--                                            semantics, without the lock)
--   conductor.release_lead(name) -> boolean  releases this session's lease
--   conductor.lead_key(name) -> bigint       v0.2.0's advisory key of a leader name
--                                            (retired; foreign_lock_holders looks for it)
--
-- Foreign lock holders:
--   conductor.foreign_lock_holders(hold) -> the sessions outside the engine that hold
--       one of its advisory keys: the enqueue in-flight keys (functions/notify: held
--       shared by enqueueing transactions, tried exclusively by sleep()) and the key
--       spaces v0.2.0 used and this release retired (leaders, concurrency keys,
--       events, exclusive()). /health and pyconductor status show them.
--   conductor._advisory_holders(keys, spaces, labels)  its read of pg_locks
--   Engine code takes advisory locks only at transaction level, so a holder in
--   no transaction (its backend holds no virtualxid lock) is not the engine; a
--   holder inside a transaction is named when the same session still holds an
--   enqueue key exclusively, or a retired key at all, at every look for hold
--   (one long transaction, or a session lock of a session that is busy).
--
-- Lock order: try_lead locks its lease row FOR UPDATE SKIP LOCKED (a row another
-- try_lead or release_lead holds this instant answers false rather than waiting);
-- only a name's very first lease inserts its row (a release expires the lease and
-- keeps the row), and that insert may wait for another try_lead inserting the same
-- name until its transaction ends. release_lead updates its row (waiting for a
-- try_lead of the name that runs this instant). Nothing else.

begin;
set local role conductor_owner;

-- v0.2.0's leaders() returned (name, pid, application_name, backend_start) from
-- pg_locks: the answer's columns change, so it is dropped and made again.
drop function if exists conductor.leaders(text[]);

create or replace function conductor.lead_key(name text) returns bigint
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select pg_catalog.hashtextextended('conductor.lead:' || lead_key.name, 0)
$$;

comment on function conductor.lead_key(text) is
$$The advisory lock key v0.2.0 used for leader lock name: hashtextextended('conductor.lead:'
|| name, 0). Retired: leadership is a lease row (try_lead) since v0.3.0, and nothing of the
engine takes this key; conductor.foreign_lock_holders() reports a session that holds it.$$;

create or replace function conductor._lease_live(expires_at timestamptz, session_pid integer, at timestamptz)
  returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select _lease_live.expires_at > _lease_live.at
         and (_lease_live.session_pid is null
              or exists (select from pg_catalog.pg_stat_activity a where a.pid = _lease_live.session_pid))
$$;

comment on function conductor._lease_live(timestamptz, integer, timestamptz) is
$$The one rule of a live lease at time at: it expires after at, and when it belongs to a
session (v0.2.0's try_lead(name): session_pid), that backend still exists. Read by try_lead,
release_lead and leaders.$$;

revoke execute on function conductor._lease_live(timestamptz, integer, timestamptz) from public;

-- The one body of both try_leads: lease NULL takes a lease of this session
-- (session_pid, no expiry), the v0.2.0 semantics.
create or replace function conductor._take_lead(name text, holder text, lease interval, session_pid integer)
  returns boolean
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_login text := conductor._caller();
  v_expires timestamptz := coalesce(v_now + _take_lead.lease, 'infinity');
  v_row conductor.leader_leases;
  v_taken boolean;
begin
  if _take_lead.name is null or _take_lead.name = '' or pg_catalog.length(_take_lead.name) > 200 then
    raise exception 'invalid leader name %: 1 to 200 characters', conductor._echo(_take_lead.name)
      using errcode = 'QC106';
  end if;
  if _take_lead.holder is null or _take_lead.holder = '' or pg_catalog.length(_take_lead.holder) > 200 then
    raise exception 'invalid leader holder %: 1 to 200 characters', conductor._echo(_take_lead.holder)
      using errcode = 'QC106';
  end if;
  if _take_lead.session_pid is null
     and (_take_lead.lease is null or _take_lead.lease <= interval '0' or _take_lead.lease > interval '1 hour') then
    raise exception 'invalid lease %: more than 0 and at most 1 hour', coalesce(_take_lead.lease::text, 'NULL')
      using errcode = 'QC106',
            hint = 'A holder renews its lease well inside it (a third of it); the lease is how long a dead holder keeps others waiting.';
  end if;

  -- never wait for another try_lead or release_lead of the name (see the map)
  select l.* into v_row from conductor.leader_leases l where l.name = _take_lead.name for update skip locked;
  if not found then
    if exists (select from conductor.leader_leases l where l.name = _take_lead.name) then
      return false;  -- another call holds the row this instant
    end if;
    insert into conductor.leader_leases as l
           (name, holder, login, since, renewed_at, expires_at, session_pid, pid, application_name)
    values (_take_lead.name, _take_lead.holder, v_login, v_now, v_now, v_expires, _take_lead.session_pid,
            pg_catalog.pg_backend_pid(), pg_catalog.current_setting('application_name'))
    on conflict on constraint leader_leases_pkey do nothing
    returning true into v_taken;
    return coalesce(v_taken, false);
  end if;

  if v_row.session_pid is not null then
    perform pg_catalog.pg_stat_clear_snapshot();  -- whether its backend lives now, not at this transaction's start
  end if;
  if (v_row.holder = _take_lead.holder and v_row.login = v_login)
     or not conductor._lease_live(v_row.expires_at, v_row.session_pid, v_now) then
    update conductor.leader_leases l
       set holder = _take_lead.holder,
           login = v_login,
           since = case when v_row.holder = _take_lead.holder and v_row.login = v_login
                             and conductor._lease_live(v_row.expires_at, v_row.session_pid, v_now)
                        then l.since else v_now end,
           renewed_at = v_now,
           expires_at = v_expires,
           session_pid = _take_lead.session_pid,
           pid = pg_catalog.pg_backend_pid(),
           application_name = pg_catalog.current_setting('application_name')
     where l.name = _take_lead.name;
    return true;
  end if;
  return false;
end
$$;

comment on function conductor._take_lead(text, text, interval, integer) is
$$try_lead's body: takes the lease name for (holder, the caller's login) until now + lease
(lease NULL and session_pid given: for as long as that backend lives) when nobody holds it,
its lease expired, or the same holder and login hold it (a renewal; since is kept). Answers
whether the caller holds it now. Never waits for another holder: a row another call locks
this instant answers false. Raises QC106 for a name or holder NULL, empty or over 200
characters, a lease not in (0, 1 hour].$$;

revoke execute on function conductor._take_lead(text, text, interval, integer) from public;

create or replace function conductor.try_lead(name text, holder text, lease interval default interval '30 seconds')
  returns boolean
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  return conductor._take_lead(try_lead.name, try_lead.holder, try_lead.lease, null);
end
$$;

comment on function conductor.try_lead(text, text, interval) is
$$Takes or renews the leader lease name for holder (a string the calling process chose, the
same at every renewal) and the calling login, until conductor.now() + lease (default 30 s,
at most 1 hour): when nobody holds it, when its lease expired, or when this holder and login
hold it already (then it is renewed and leaders().since is kept). Returns whether the caller
holds it now; false when another holder's lease is live, or another try_lead or release_lead
of the name runs at this instant (try again). Never waits for a holder, and no session
outside the engine can hold or block a lease. A holder renews well inside its lease (a
third) and stops acting as leader when it could not renew before the lease ran out.
Raises QC106 for a name or holder NULL, empty or over 200 characters, or a lease not in
(0, 1 hour]. Granted to conductor_worker and conductor_admin.$$;

create or replace function conductor.release_lead(name text, holder text) returns boolean
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
begin
  -- the row stays, expired: a later try_lead finds it and never waits on an insert (see the map)
  update conductor.leader_leases l
     set expires_at = v_now, renewed_at = v_now
   where l.name = release_lead.name and l.holder = release_lead.holder and l.login = conductor._caller()
     and conductor._lease_live(l.expires_at, l.session_pid, v_now);
  return found;
end
$$;

comment on function conductor.release_lead(text, text) is
$$Gives up the leader lease name held by holder and the calling login: it expires now (a clean
stop: another process takes it at its next try, without waiting for the lease to run out;
the row stays, so no later try_lead inserts it again). Returns whether there was such a live
lease. Another holder's or login's lease is left alone (false).$$;

-- v0.2.0's signatures (see the map): a v0.2.0 worker calls try_lead(name) once and
-- then leads for as long as its session lives, never renewing.
create or replace function conductor.try_lead(name text) returns boolean
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if try_lead.name is null or try_lead.name = '' then
    raise exception 'a leader lock needs a name' using errcode = 'QC106';
  end if;
  return conductor._take_lead(try_lead.name, 'session ' || pg_catalog.pg_backend_pid(), null,
                              pg_catalog.pg_backend_pid());
end
$$;

comment on function conductor.try_lead(text) is
$$v0.2.0's signature, for v0.2.0 workers during a rolling upgrade: takes the leader lease
name for this session (holder 'session <pid>'), live for as long as this backend lives, when
nobody holds it or its lease expired; returns whether this session holds it now. Never
waits. A process of v0.3.0 or later calls try_lead(name, holder, lease) and renews. Raises
QC106 for an empty name.$$;

create or replace function conductor.release_lead(name text) returns boolean
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
begin
  update conductor.leader_leases l
     set expires_at = v_now, renewed_at = v_now
   where l.name = release_lead.name and l.session_pid = pg_catalog.pg_backend_pid()
     and l.login = conductor._caller() and l.expires_at > v_now;
  return found;
end
$$;

comment on function conductor.release_lead(text) is
$$v0.2.0's signature: releases the lease name that this session took with try_lead(name);
returns whether it held one.$$;

create function conductor.leaders(names text[] default null)
  returns table (name text, holder text, login text, since timestamptz, renewed_at timestamptz,
                 expires_at timestamptz, pid integer, application_name text)
  language sql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select l.name, l.holder, l.login, l.since, l.renewed_at, l.expires_at, l.pid, l.application_name
    from conductor.leader_leases l
    left join pg_catalog.unnest(leaders.names) with ordinality as n(name, ord) on n.name = l.name
   where (leaders.names is null or n.name is not null)
     and conductor._lease_live(l.expires_at, l.session_pid, conductor.now())
   order by n.ord, l.name
$$;

comment on function conductor.leaders(text[]) is
$$The live leader leases among names (NULL, the default: every one), in the order of names
(else by name): name, holder (the process's string), login, since (held by this holder
since), renewed_at, expires_at (infinity for a v0.2.0 session's lease, live while its
backend lives), and pid and application_name of the backend that last took or renewed it
(through a pooler: the server session). A name nobody holds, or whose lease expired, has no
row. The engine's own names: scheduler, retention; an app's singleton is 'singleton:' ||
its name.$$;

-- The engine's advisory keys that a session holds or waits for (see foreign_lock_holders):
-- the enqueue in-flight keys (two integers: hashtext('conductor:enqueue:any'), 0, and
-- hashtext('conductor:enqueue:queue'), hashtext(queue)), and the bigint keys of the retired
-- spaces given in keys (with their space and label). A lock whose backend holds no
-- virtualxid lock is held outside any transaction: a session-level lock (idle).
create or replace function conductor._advisory_holders(keys bigint[], spaces text[], labels text[])
  returns table (pid integer, vxid text, key_space text, label text, mode text, granted boolean,
                 waitstart timestamptz, idle boolean, classid oid, objid oid, objsubid smallint)
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  with locks as (
    select l.* from pg_catalog.pg_locks l
     where l.locktype in ('advisory', 'virtualxid') and l.pid <> pg_catalog.pg_backend_pid()
  ), k as (
    select u.k, u.s, u.l
      from rows from (pg_catalog.unnest(_advisory_holders.keys), pg_catalog.unnest(_advisory_holders.spaces),
                      pg_catalog.unnest(_advisory_holders.labels)) u(k, s, l)
  )
  select l.pid, l.virtualtransaction,
         coalesce(k.s, 'enqueue in-flight'),
         case when l.objsubid = 2 and l.classid::bigint = (pg_catalog.hashtext('conductor:enqueue:any')::bigint & 4294967295)
              then 'any queue'
              when l.objsubid = 2 then 'a queue'
              else k.l end,
         l.mode, l.granted, l.waitstart,
         not exists (select from locks v where v.locktype = 'virtualxid' and v.pid = l.pid),
         l.classid, l.objid, l.objsubid
    from locks l
    left join k on l.objsubid = 1 and ((l.classid::bigint << 32) | l.objid::bigint) = k.k
   where l.locktype = 'advisory'
     and l.database = (select d.oid from pg_catalog.pg_database d where d.datname = pg_catalog.current_database())
     and ((l.objsubid = 2 and l.classid::bigint in (pg_catalog.hashtext('conductor:enqueue:any')::bigint & 4294967295,
                                                    pg_catalog.hashtext('conductor:enqueue:queue')::bigint & 4294967295))
          or k.k is not null)
$$;

comment on function conductor._advisory_holders(bigint[], text[], text[]) is
$$foreign_lock_holders' read of pg_locks: every lock another session holds or waits for on
the enqueue in-flight keys or on one of keys (bigint advisory keys, with the key_space and
label of each), with its backend's virtualtransaction, and idle true when that backend is in
no transaction (a session-level lock).$$;

revoke execute on function conductor._advisory_holders(bigint[], text[], text[]) from public;

create or replace function conductor.foreign_lock_holders(hold interval default interval '1 second')
  returns table (pid integer, usename text, application_name text, key_space text, label text, locks integer,
                 mode text, idle boolean, reason text)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_keys bigint[];
  v_spaces text[];
  v_labels text[];
  v_watch text[];       -- pid/key/mode of the holders to look at again until hold has passed
  v_idle text[];        -- those of them seen idle at two looks in a row
  v_last_idle text[];   -- those of them seen idle at the last look
  v_seen_idle text[];
  v_deadline timestamptz;
begin
  if foreign_lock_holders.hold is null or foreign_lock_holders.hold < interval '0'
     or foreign_lock_holders.hold > interval '10 seconds' then
    raise exception 'invalid hold %: from 0 to 10 seconds', coalesce(foreign_lock_holders.hold::text, 'NULL')
      using errcode = 'QC106';
  end if;
  -- the common case: nobody else holds an advisory lock in this database
  if not exists (select from pg_catalog.pg_locks l
                  where l.locktype = 'advisory' and l.pid <> pg_catalog.pg_backend_pid()
                    and l.database = (select d.oid from pg_catalog.pg_database d
                                       where d.datname = pg_catalog.current_database())) then
    return;
  end if;

  -- the retired key spaces' keys that can matter now (v0.2.0's derivations)
  select pg_catalog.array_agg(x.k), pg_catalog.array_agg(x.s), pg_catalog.array_agg(x.l)
    into v_keys, v_spaces, v_labels
    from (select conductor.lead_key(n.name) as k, 'leader (v0.2.0)' as s, n.name as l
            from (select pg_catalog.unnest(array['scheduler', 'reaper', 'retention']) as name
                  union select e.name from conductor.leader_leases e) n
          union all
          select pg_catalog.hashtextextended('conductor:concurrency:' || c.key, 0), 'concurrency key (v0.2.0)', c.key
            from (select distinct t.concurrency_key as key from conductor.tasks t
                   where t.status = any (conductor.unfinished_statuses()) and t.concurrency_key is not null) c
          union all
          select pg_catalog.hashtextextended('conductor:event:' || e.name, 0), 'event (v0.2.0)', e.name
            from (select t.wait_event as name from conductor.tasks t
                   where t.status = 'waiting' and t.wait_for = 'event' and t.wait_event is not null
                  union select v.name from conductor.events v) e
          union all
          select pg_catalog.hashtextextended('conductor.exclusive:' || x.name, 0), 'exclusive() (v0.2.0)', x.name
            from conductor.exclusive_locks x) x;

  -- The engine's enqueues hold the enqueue keys shared in their transaction, sleep()
  -- tries them exclusively for an instant, and nothing of the engine takes the retired
  -- keys any more. So a session that holds one while idle (a session-level lock), or
  -- holds an enqueue key exclusively or a retired key at all at every look until hold
  -- has passed, is not the engine. A look keys a lock by its session, not by its
  -- transaction: a session lock of a busy session is held in one transaction at one
  -- look and in the next at the next, and is named all the same. Idle means seen in
  -- no transaction at two looks in a row: a session that commits in a loop (a
  -- procedure, a DO block) holds no virtualxid lock for an instant between a COMMIT
  -- and its next transaction's start, which one look can land in.
  select pg_catalog.array_agg(distinct h.pid || '/' || h.classid || '/' || h.objid || '/' || h.objsubid || '/' || h.mode),
         pg_catalog.array_agg(distinct h.pid || '/' || h.classid || '/' || h.objid || '/' || h.objsubid || '/' || h.mode)
           filter (where h.idle)
    into v_watch, v_last_idle
    from conductor._advisory_holders(v_keys, v_spaces, v_labels) h
   where h.granted and (h.idle or h.key_space <> 'enqueue in-flight' or h.mode = 'ExclusiveLock');
  v_deadline := pg_catalog.clock_timestamp() + foreign_lock_holders.hold;
  while v_watch is not null and pg_catalog.clock_timestamp() < v_deadline loop
    perform pg_catalog.pg_sleep(least(0.05, extract(epoch from v_deadline - pg_catalog.clock_timestamp())));
    select pg_catalog.array_agg(distinct w.w), pg_catalog.array_agg(distinct w.w) filter (where h.idle)
      into v_watch, v_seen_idle
      from pg_catalog.unnest(v_watch) w(w)
      join conductor._advisory_holders(v_keys, v_spaces, v_labels) h
        on h.granted and w.w = h.pid || '/' || h.classid || '/' || h.objid || '/' || h.objsubid || '/' || h.mode;
    v_idle := v_idle || array(select w.w from pg_catalog.unnest(v_seen_idle) w(w) where w.w = any (v_last_idle));
    v_last_idle := v_seen_idle;
  end loop;

  perform pg_catalog.pg_stat_clear_snapshot();  -- pg_stat_activity as it is now
  return query
  with h as (
    select h.*, h.pid || '/' || h.classid || '/' || h.objid || '/' || h.objsubid || '/' || h.mode as w
      from conductor._advisory_holders(v_keys, v_spaces, v_labels) h
  ), named as (
    -- idle at two looks in a row; or at this one, the only look at a holder not watched
    select h.*, h.granted and (h.w = any (coalesce(v_idle, '{}'))
                               or (h.idle and (h.w <> all (coalesce(v_watch, '{}'))
                                               or h.w = any (coalesce(v_last_idle, '{}'))))) as was_idle
      from h
     where (h.granted and (h.idle or h.w = any (coalesce(v_watch, '{}'))))
        or (not h.granted and h.key_space = 'enqueue in-flight' and h.mode = 'ExclusiveLock'
            and h.waitstart <= pg_catalog.clock_timestamp() - foreign_lock_holders.hold)
  )
  select h.pid, a.usename::text, a.application_name, h.key_space, h.label, pg_catalog.count(*)::integer,
         h.mode, h.was_idle,
         case when not h.granted then 'waits for it in ' || h.mode || ' mode, so enqueues queue behind it'
              when h.was_idle then 'holds it while idle (a session-level lock: the engine takes only transaction locks)'
              when h.key_space = 'enqueue in-flight' then 'holds it exclusively for over ' || foreign_lock_holders.hold
              else 'holds a key the engine no longer takes, for over ' || foreign_lock_holders.hold
         end
    from named h
    left join pg_catalog.pg_stat_activity a on a.pid = h.pid
   group by h.pid, a.usename, a.application_name, h.key_space, h.label, h.mode, h.was_idle, h.granted
   order by h.pid, h.key_space, h.label;
end
$$;

comment on function conductor.foreign_lock_holders(interval) is
$$The sessions outside the engine that hold one of its advisory keys, one row per session,
key space, label (the queue, the leader, key, event or exclusive() name) and mode: pid,
usename, application_name, key_space ('enqueue in-flight', or a key space v0.2.0 used and
v0.3.0 retired: 'leader (v0.2.0)', 'concurrency key (v0.2.0)', 'event (v0.2.0)', 'exclusive()
(v0.2.0)'), locks (how many), mode, idle, and reason. A session is named when it holds such
a key while idle (a session-level lock: the engine takes only transaction-level ones; idle
true when it was in no transaction at two of the call's looks in a row, or at its one look),
holds an enqueue key exclusively or a
retired key for longer than hold (default 1 s, at most 10 s: the call looks again until
then, only when there is such a holder; in one transaction or across several), or
waits for an enqueue key exclusively for longer than hold (enqueues queue behind it).
A v0.2.0 process that took its session leader lock before the upgrade is named too (idle,
'leader (v0.2.0)'). Empty when all is well. Reads pg_locks and pg_stat_activity, which any
login may read; locks nothing. Raises QC106 for a hold NULL, negative or over 10 seconds.
Granted to conductor_worker and conductor_admin.$$;

revoke execute on function conductor.lead_key(text) from public;
revoke execute on function conductor.try_lead(text, text, interval) from public;
revoke execute on function conductor.release_lead(text, text) from public;
revoke execute on function conductor.try_lead(text) from public;
revoke execute on function conductor.release_lead(text) from public;
revoke execute on function conductor.leaders(text[]) from public;
revoke execute on function conductor.foreign_lock_holders(interval) from public;
grant execute on function conductor.lead_key(text) to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.try_lead(text, text, interval) to conductor_worker, conductor_admin;
grant execute on function conductor.release_lead(text, text) to conductor_worker, conductor_admin;
grant execute on function conductor.try_lead(text) to conductor_worker, conductor_admin;
grant execute on function conductor.release_lead(text) to conductor_worker, conductor_admin;
grant execute on function conductor.leaders(text[]) to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.foreign_lock_holders(interval) to conductor_worker, conductor_admin;

commit;
