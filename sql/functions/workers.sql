-- Deploy conductor:functions/workers to pg
-- (reworked after v0.2.0; the released body is sql/released/functions/workers@v0.2.0.sql)
--
-- Who is alive, for forensics, the dashboard and the unknown-kind sweep.
-- Leases, not these rows, decide who holds what: a worker that never registers
-- can still claim.
--
--   conductor.register_worker(worker_id, host, pid, queues, concurrency, roles, version, metadata, kinds)
--   conductor.deregister_worker(worker_id)
--
-- The kinds a worker serves (workers.kinds; NULL: every kind) tell reap() which
-- kinds some live worker still runs: a queued task whose kind none has served
-- for conductor.settings.unknown_kind_after is dead-lettered. A worker that
-- stops cleanly takes its row away, so deregister_worker leaves when it last
-- served each of its kinds in conductor.served_kinds: a rolling deploy that
-- stops the only worker of a kind for a moment does not make the kind unknown.
--
-- A registration is its login's (workers.owner, conductor._caller(); the bare
-- rows heartbeat and sleep write for a worker that never registered record it
-- too): another login may neither register that worker id again nor
-- deregister it (QC208, conductor._check_owner), or it could rewrite the kinds
-- the unknown-kind sweep reads and dead-letter another application's tasks;
-- an admin may (and owns the row then). A row from before v0.3.0 (owner NULL)
-- is claimed by the first login that registers it. save_log writes only into
-- attempts of a worker the caller owns (functions/retention).
--
-- Locks: the worker's row (FOR UPDATE, or the insert of a new one);
-- deregister_worker then the served_kinds rows of its kinds. Any number of
-- workers at once.

begin;
set local role conductor_owner;

-- kinds is new (the last parameter): v0.1.0's eight-parameter register_worker goes.

create or replace function conductor.register_worker(
  worker_id   text,
  host        text default null,
  pid         integer default null,
  queues      text[] default null,
  concurrency integer default null,
  roles       text[] default '{worker}',
  version     text default null,
  metadata    jsonb default '{}',
  kinds       text[] default null
) returns void
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now    timestamptz := conductor.now();
  v_caller text := conductor._caller();
  v_owner  text;
begin
  if register_worker.worker_id is null or register_worker.worker_id = '' then
    raise exception 'register_worker needs a worker_id' using errcode = 'QC106';
  end if;
  if register_worker.concurrency < 1 then
    raise exception 'invalid concurrency %: it must be 1 or more', register_worker.concurrency
      using errcode = 'QC106';
  end if;
  if register_worker.metadata is null or pg_catalog.jsonb_typeof(register_worker.metadata) <> 'object' then
    raise exception 'worker metadata must be a JSON object' using errcode = 'QC106';
  end if;
  -- the kinds list follows claim's rule; each queue of the list enqueue's queue rule (an
  -- empty queues list stays accepted, as v0.1.0 took it)
  perform conductor._check_scope(null, register_worker.kinds);
  perform conductor._check_queue_names(register_worker.queues);

  -- at most twice round: a second time when another caller registered the id since the select
  loop
    select w.owner into v_owner from conductor.workers w where w.id = register_worker.worker_id for update;
    if found then
      perform conductor._check_owner('worker', register_worker.worker_id, v_owner);
      update conductor.workers w
         set host = register_worker.host, pid = register_worker.pid, queues = register_worker.queues,
             concurrency = register_worker.concurrency, roles = coalesce(register_worker.roles, '{}'),
             version = register_worker.version, metadata = register_worker.metadata,
             kinds = register_worker.kinds, last_seen_at = v_now, owner = v_caller
       where w.id = register_worker.worker_id;
      return;
    end if;
    insert into conductor.workers as w
           (id, host, pid, queues, concurrency, roles, version, metadata, kinds, started_at, last_seen_at, owner)
    values (register_worker.worker_id, register_worker.host, register_worker.pid,
            register_worker.queues, register_worker.concurrency,
            coalesce(register_worker.roles, '{}'), register_worker.version,
            register_worker.metadata, register_worker.kinds, v_now, v_now, v_caller)
    on conflict on constraint workers_pkey do nothing;
    if found then
      return;
    end if;
    -- registered since the select (a bare row of its own heartbeat, or another login):
    -- the next select sees the row and its owner
  end loop;
end
$$;

comment on function conductor.register_worker(text, text, integer, text[], integer, text[], text, jsonb, text[]) is
$$Records (or refreshes) a live worker: its host, pid, queues (NULL: all), concurrency,
roles (e.g. {worker,scheduler}), version, metadata and kinds (the kinds it has handlers
for, as it passes them to claim; NULL: every kind). heartbeat keeps last_seen_at fresh;
reap deletes rows not seen for a while. While a worker is seen, reap() does not
dead-letter tasks of its kinds. The row records the caller (conductor._caller()) as its
owner: registering a worker id another login registered (or whose heartbeat or sleep
recorded it) raises QC208 and changes nothing, unless the caller is a member of
conductor_admin (the row is the admin's then); a row from before v0.3.0 (owner NULL) is the
caller's from then on. Raises QC106 for a missing worker_id, concurrency below 1 or
metadata that is not a JSON object, QC101 for an empty kinds list or one holding NULL, QC104 for a
queues list naming an invalid queue (enqueue's rule).
Locks the worker's row.$$;

create or replace function conductor.deregister_worker(worker_id text) returns boolean
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_owner text;
  v_kinds text[];
begin
  select w.owner into v_owner from conductor.workers w where w.id = deregister_worker.worker_id for update;
  if not found then
    return false;
  end if;
  perform conductor._check_owner('worker', deregister_worker.worker_id, v_owner);
  delete from conductor.workers w where w.id = deregister_worker.worker_id returning w.kinds into v_kinds;
  -- what reap()'s unknown-kind sweep reads once the row is gone (kinds NULL: nothing
  -- to name; such a worker served every kind only while it lived)
  insert into conductor.served_kinds as s (kind, last_served_at)
  select distinct k.kind, conductor.now()
    from pg_catalog.unnest(v_kinds) as k(kind)
   order by k.kind  -- lock order: served_kinds rows by kind
  on conflict (kind) do update set last_served_at = excluded.last_served_at;
  return true;
end
$$;

comment on function conductor.deregister_worker(text) is
$$Forgets a worker at its clean exit; returns whether it was registered. Records that its
kinds were served until now (conductor.served_kinds), so reap() does not take them for
unknown kinds before settings.unknown_kind_after has passed without them. Tasks it still
holds are not touched: release them first, or the reaper takes them back. Raises QC208 and
changes nothing when another login registered the worker (conductor.workers.owner), unless
the caller is a member of conductor_admin. Locks the worker's row, then the served_kinds
rows of its kinds in kind order.$$;

revoke execute on function conductor.register_worker(text, text, integer, text[], integer, text[], text, jsonb, text[]) from public;
revoke execute on function conductor.deregister_worker(text) from public;
grant execute on function conductor.register_worker(text, text, integer, text[], integer, text[], text, jsonb, text[]) to conductor_worker, conductor_admin;
grant execute on function conductor.deregister_worker(text) to conductor_worker, conductor_admin;

commit;
