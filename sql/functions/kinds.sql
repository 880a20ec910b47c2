-- Deploy conductor:functions/kinds to pg
--
-- conductor.configure_kind(kind, ...): sets the retry policy of a kind, read by
-- enqueue (max_attempts, max_recoveries) and by fail (backoff) whenever the task
-- itself does not say. A worker calls it at start for the kinds it serves, so
-- a task enqueued from psql gets the same policy as one enqueued from Python.
-- The kind and the policy are checked by the rules enqueue applies
-- (conductor._spec_problem), with the same SQLSTATEs.

begin;
set local role conductor_owner;

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
declare
  -- the kind and its policy checked by the rules of a task (conductor._spec_problem)
  v_spec conductor._task_spec := row(
    configure_kind.kind, '{}', 'default', null, null, configure_kind.max_attempts, null, null, null,
    configure_kind.max_recoveries, configure_kind.backoff_base, configure_kind.backoff_factor,
    configure_kind.backoff_max, null);
  v_problem text := conductor._spec_problem(v_spec);
begin
  if v_problem is not null then
    perform conductor._raise_spec_problem(v_problem, v_spec);
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
each failure of a task that does not set its own. The rules are enqueue's: max_attempts
>= 1, max_recoveries >= 0, backoff_base and backoff_max 0-30 days (base not over max),
backoff_factor 1-10. Raises QC101 for a kind enqueue would refuse, QC106 for an invalid
policy. Idempotent; many callers at once.$$;

revoke execute on function conductor.configure_kind(text, integer, integer, interval, double precision, interval) from public;
grant execute on function conductor.configure_kind(text, integer, integer, interval, double precision, interval)
  to conductor_worker, conductor_admin;

commit;
