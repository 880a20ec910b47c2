-- Revert conductor:functions/kinds from pg: back to its v0.1.0 body
--
-- The v0.1.0 deploy script (functions/kinds@v0.1.0.sql), with create or replace, and
-- search_path pinned to pg_catalog, pg_temp instead of '': going back to v0.1.0's
-- bodies does not reopen the pg_temp escalation (issue 14).
--
-- conductor.configure_kind(kind, ...): sets the retry policy of a kind, read by
-- enqueue (max_attempts, max_recoveries) and by fail (backoff) whenever the task
-- itself does not say. A worker calls it at start for the kinds it serves, so
-- a task enqueued from psql gets the same policy as one enqueued from Python.

begin;

-- the reworked configure_kind has twelve parameters; v0.1.0's six come back
drop function conductor.configure_kind(text, integer, integer, interval, double precision, interval,
                                       text, integer, text, interval, interval, interval);

create or replace function conductor.configure_kind(
  kind           text,
  max_attempts   integer default null,
  max_recoveries integer default null,
  backoff_base   interval default null,
  backoff_factor double precision default null,
  backoff_max    interval default null
) returns void
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if configure_kind.kind is null or configure_kind.kind = '' then
    raise exception 'invalid kind %: a kind is a non-empty name',
      coalesce(pg_catalog.quote_literal(configure_kind.kind), 'NULL')
      using errcode = 'QC101';
  end if;
  if configure_kind.max_attempts < 1 or configure_kind.max_recoveries < 0
     or configure_kind.backoff_base < interval '0' or configure_kind.backoff_max < interval '0'
     or configure_kind.backoff_factor < 1 then
    raise exception 'invalid retry policy for kind %: max_attempts % (>= 1), max_recoveries % (>= 0), backoff base % and max % (>= 0), factor % (>= 1)',
      pg_catalog.quote_literal(configure_kind.kind), configure_kind.max_attempts,
      configure_kind.max_recoveries, configure_kind.backoff_base, configure_kind.backoff_max,
      configure_kind.backoff_factor
      using errcode = 'QC106';
  end if;

  insert into conductor.kinds as k
         (kind, max_attempts, max_recoveries, backoff_base, backoff_factor, backoff_max, updated_at)
  values (configure_kind.kind, configure_kind.max_attempts, configure_kind.max_recoveries,
          configure_kind.backoff_base, configure_kind.backoff_factor, configure_kind.backoff_max,
          conductor.now())
  on conflict on constraint kinds_pkey do update
     set max_attempts = excluded.max_attempts, max_recoveries = excluded.max_recoveries,
         backoff_base = excluded.backoff_base, backoff_factor = excluded.backoff_factor,
         backoff_max = excluded.backoff_max, updated_at = excluded.updated_at
   where (k.max_attempts, k.max_recoveries, k.backoff_base, k.backoff_factor, k.backoff_max)
         is distinct from
         (excluded.max_attempts, excluded.max_recoveries, excluded.backoff_base,
          excluded.backoff_factor, excluded.backoff_max);
end
$$;

comment on function conductor.configure_kind(text, integer, integer, interval, double precision, interval) is
$$Sets the retry policy of kind (replacing the previous one; NULL = the engine default):
max_attempts (1) and max_recoveries (3) apply to tasks enqueued afterwards that do not
set their own; backoff_base (30 s), backoff_factor (2) and backoff_max (1 h) apply at
each failure of a task that does not set its own. Raises QC101 for an empty kind,
QC106 for an invalid policy. Idempotent; many callers at once.$$;

revoke execute on function conductor.configure_kind(text, integer, integer, interval, double precision, interval) from public;
grant execute on function conductor.configure_kind(text, integer, integer, interval, double precision, interval)
  to conductor_worker, conductor_admin;

commit;
