-- Revert conductor:functions/kinds from pg: back to its v0.2.0 bodies
--
-- conductor.configure_kind(kind, ...): a kind's defaults and policy, so that a
-- task enqueued from psql, a trigger or a worker in another language gets what
-- the Python registry would give it. One row of conductor.kinds per kind:
--   queue, priority, concurrency_key, timeout, max_attempts, max_recoveries
--       read by enqueue, enqueue_many, spawn and tick (conductor._enqueue) for
--       a task that does not give its own
--   backoff_base, backoff_factor, backoff_max
--       read by fail at each failure of a task that does not set its own
--   retain_succeeded, retain_failed
--       read by apply_retention (functions/retention) for a run whose root is
--       of this kind; NULL: the settings' (conductor.settings.retain_*)
-- A worker calls it at start for the kinds it serves. Each call replaces the
-- whole row: a NULL argument is the engine's default, not "keep".
-- The values are checked by the rules of a task (conductor._spec_problem,
-- the same SQLSTATEs as enqueue): QC101 kind, QC104 queue (when given), QC106
-- the rest (a negative retention among them).
--
-- Locks: the kind's row (an upsert). Many callers at once.

begin;
set local role conductor_owner;

-- added after v0.2.0: configure_kind's concurrency_limit and expires_in (issue 30); v0.2.0's comes back below
drop function conductor.configure_kind(text, integer, integer, interval, double precision, interval, text, integer, text, interval, interval, interval, integer, interval);

-- queue, priority, concurrency_key, timeout, retain_succeeded and retain_failed are
-- new: v0.1.0's six-parameter configure_kind goes, or a call naming only those six
-- would match both.

create or replace function conductor.configure_kind(
  kind            text,
  max_attempts    integer default null,
  max_recoveries  integer default null,
  backoff_base    interval default null,
  backoff_factor  double precision default null,
  backoff_max     interval default null,
  queue           text default null,
  priority        integer default null,
  concurrency_key text default null,
  timeout         interval default null,
  retain_succeeded interval default null,
  retain_failed   interval default null
) returns void
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  -- checked by the rules of a task (conductor._spec_problem); a queue not given is valid
  v_spec conductor._task_spec := row(
    configure_kind.kind, '{}', coalesce(configure_kind.queue, 'default'), configure_kind.priority, null,
    configure_kind.max_attempts, null, configure_kind.concurrency_key, null, configure_kind.max_recoveries,
    configure_kind.backoff_base, configure_kind.backoff_factor, configure_kind.backoff_max,
    configure_kind.timeout);
  v_problem text := conductor._spec_problem(v_spec);
begin
  if v_problem is not null then
    perform conductor._raise_spec_problem(v_problem, v_spec);
  end if;
  if configure_kind.retain_succeeded < interval '0' or configure_kind.retain_failed < interval '0' then
    raise exception 'invalid retention for kind %: retain_succeeded % and retain_failed % must be 0 or more',
      conductor._echo(configure_kind.kind), coalesce(configure_kind.retain_succeeded::text, 'NULL'),
      coalesce(configure_kind.retain_failed::text, 'NULL')
      using errcode = 'QC106', hint = 'Pass an interval such as ''7 days'', or NULL for the settings'' retention.';
  end if;

  insert into conductor.kinds as k
         (kind, max_attempts, max_recoveries, backoff_base, backoff_factor, backoff_max,
          queue, priority, concurrency_key, timeout, retain_succeeded, retain_failed, updated_at)
  values (configure_kind.kind, configure_kind.max_attempts, configure_kind.max_recoveries,
          configure_kind.backoff_base, configure_kind.backoff_factor, configure_kind.backoff_max,
          configure_kind.queue, configure_kind.priority, configure_kind.concurrency_key,
          configure_kind.timeout, configure_kind.retain_succeeded, configure_kind.retain_failed,
          conductor.now())
  on conflict on constraint kinds_pkey do update
     set max_attempts = excluded.max_attempts, max_recoveries = excluded.max_recoveries,
         backoff_base = excluded.backoff_base, backoff_factor = excluded.backoff_factor,
         backoff_max = excluded.backoff_max, queue = excluded.queue, priority = excluded.priority,
         concurrency_key = excluded.concurrency_key, timeout = excluded.timeout,
         retain_succeeded = excluded.retain_succeeded, retain_failed = excluded.retain_failed,
         updated_at = excluded.updated_at
   -- a worker restarting writes what is there: no new row version
   where (k.max_attempts, k.max_recoveries, k.backoff_base, k.backoff_factor, k.backoff_max,
          k.queue, k.priority, k.concurrency_key, k.timeout, k.retain_succeeded, k.retain_failed)
         is distinct from
         (excluded.max_attempts, excluded.max_recoveries, excluded.backoff_base,
          excluded.backoff_factor, excluded.backoff_max, excluded.queue, excluded.priority,
          excluded.concurrency_key, excluded.timeout, excluded.retain_succeeded, excluded.retain_failed);
end
$$;

comment on function conductor.configure_kind(text, integer, integer, interval, double precision, interval, text, integer, text, interval, interval, interval) is
$$Sets the defaults and policy of kind, replacing the whole previous row (a NULL argument
is the engine default, not "unchanged"). For tasks enqueued afterwards (enqueue,
enqueue_many, spawn, tick) that do not give their own: queue ('default'), priority (0),
concurrency_key (none), timeout (how long one attempt may run; none), max_attempts (1),
max_recoveries (3). At each failure of a task that does not set its own: backoff_base
(30 s), backoff_factor (2), backoff_max (1 h). The rules are enqueue's: a queue name of
1-100 letters, digits and _ . : / -; max_attempts >= 1, max_recoveries >= 0, backoff_base
and backoff_max 0-30 days (base not over max), backoff_factor 1-10, timeout more than 0
and at most 30 days, concurrency_key at most 1000 bytes. retain_succeeded and retain_failed
(0 or more): how long apply_retention keeps a finished run whose root is of this kind and
succeeded, or did not (failed, dead, timed_out, cancelled); NULL: conductor.settings'
retain_succeeded (7 days) and retain_failed (30 days). Raises QC101 for a kind enqueue
would refuse, QC104 for an invalid queue, QC106 for any other invalid value; then nothing
is stored. Idempotent; many callers at once.$$;

revoke execute on function conductor.configure_kind(text, integer, integer, interval, double precision, interval, text, integer, text, interval, interval, interval) from public;
grant execute on function conductor.configure_kind(text, integer, integer, interval, double precision, interval, text, integer, text, interval, interval, interval)
  to conductor_worker, conductor_admin;

commit;
