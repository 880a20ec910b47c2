-- Revert conductor:functions/workers from pg: back to its v0.1.0 body
--
-- The v0.1.0 deploy script (functions/workers@v0.1.0.sql), with create or replace, and
-- search_path pinned to pg_catalog, pg_temp instead of '': going back to v0.1.0's
-- bodies does not reopen the pg_temp escalation (issue 14).
--
-- Who is alive, for forensics and the dashboard. Leases, not these rows, decide
-- who holds what: a worker that never registers can still claim.
--
--   conductor.register_worker(worker_id, host, pid, queues, concurrency, roles, version, metadata)
--   conductor.deregister_worker(worker_id)

begin;

-- 0.2.0's register_worker (kinds) goes first: create or replace below recreates v0.1.0's.
drop function conductor.register_worker(text, text, integer, text[], integer, text[], text, jsonb, text[]);

create or replace function conductor.register_worker(
  worker_id   text,
  host        text default null,
  pid         integer default null,
  queues      text[] default null,
  concurrency integer default null,
  roles       text[] default '{worker}',
  version     text default null,
  metadata    jsonb default '{}'
) returns void
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
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

  insert into conductor.workers as w
         (id, host, pid, queues, concurrency, roles, version, metadata, started_at, last_seen_at)
  values (register_worker.worker_id, register_worker.host, register_worker.pid,
          register_worker.queues, register_worker.concurrency,
          coalesce(register_worker.roles, '{}'), register_worker.version,
          register_worker.metadata, v_now, v_now)
  on conflict (id) do update
     set host = excluded.host, pid = excluded.pid, queues = excluded.queues,
         concurrency = excluded.concurrency, roles = excluded.roles,
         version = excluded.version, metadata = excluded.metadata,
         last_seen_at = excluded.last_seen_at;
end
$$;

comment on function conductor.register_worker(text, text, integer, text[], integer, text[], text, jsonb) is
$$Records (or refreshes) a live worker: its host, pid, queues (NULL: all), concurrency,
roles (e.g. {worker,scheduler}), version and metadata. heartbeat keeps last_seen_at
fresh; reap deletes rows not seen for a while. Raises QC106 for a missing worker_id,
concurrency below 1 or metadata that is not a JSON object.$$;

create or replace function conductor.deregister_worker(worker_id text) returns boolean
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  with gone as (
    delete from conductor.workers w where w.id = deregister_worker.worker_id returning w.id
  )
  select exists (select from gone)
$$;

comment on function conductor.deregister_worker(text) is
$$Forgets a worker at its clean exit; returns whether it was registered. Tasks it still
holds are not touched: release them first, or the reaper takes them back.$$;

revoke execute on function conductor.register_worker(text, text, integer, text[], integer, text[], text, jsonb) from public;
revoke execute on function conductor.deregister_worker(text) from public;
grant execute on function conductor.register_worker(text, text, integer, text[], integer, text[], text, jsonb) to conductor_worker, conductor_admin;
grant execute on function conductor.deregister_worker(text) to conductor_worker, conductor_admin;

commit;
