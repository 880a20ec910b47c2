-- Revert conductor:functions/controls from pg: back to its v0.2.0 bodies
--
-- What an operator turns on and off for a whole queue or kind, across the fleet
-- (issue 17). The tables are schema/operations'; claim (functions/claim) obeys
-- them, next_due (functions/reap) wakes idle workers for them, stats() shows
-- them (functions/stats).
--
--   conductor.pause_queue(queue)     -> boolean   claim takes nothing from the
--                                                  queue; its tasks stay queued
--   conductor.resume_queue(queue)    -> boolean   claimable again; sleeping
--                                                  workers of the queue are woken
--   conductor.set_rate_limit(queue | kind, per_second, burst) -> void
--        at most per_second task starts per second across every worker, with
--        bursts of up to burst: a token bucket (conductor.rate_limits) that
--        claim draws one token from per task it starts; per_second NULL
--        removes the limit
--   conductor._check_control_target(scope, name)   a queue's or kind's name
--        rule: enqueue's (conductor._spec_problem), so QC104 and QC101 mean
--        what they mean there
--
-- Tables: conductor.paused_queues (one row per paused queue),
-- conductor.rate_limits (one row per limited queue or kind).
-- Locks: the one row written. A limit's bucket row is also locked by every
-- claim that draws from it (functions/claim), so set_rate_limit waits for a
-- claim in flight; call it in a transaction of its own (claim locks buckets in
-- (scope, name) order last, and a transaction holding one bucket while it
-- claims could wait on another claimer waiting for it).

begin;
set local role conductor_owner;

-- new after v0.2.0 (issue 30)
drop function conductor.set_queue_limit(text, integer);
-- set_rate_limit's per_key is new after v0.2.0 (issue 30); v0.2.0's comes back below
drop function conductor.set_rate_limit(text, text, double precision, double precision, boolean);

create or replace function conductor._check_control_target(scope text, name text) returns void
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  -- a task spec judged by enqueue's rules; the field not asked about takes a valid stand-in
  v_spec conductor._task_spec := row(
    case when _check_control_target.scope = 'kind' then _check_control_target.name else 'k' end, '{}',
    case when _check_control_target.scope = 'queue' then _check_control_target.name else 'default' end,
    null, null, null, null, null, null, null, null, null, null, null);
  v_problem text := conductor._spec_problem(v_spec, 2147483647);
begin
  if v_problem in ('kind', 'queue') then
    perform conductor._raise_spec_problem(v_problem, v_spec);
  end if;
end
$$;

comment on function conductor._check_control_target(text, text) is
$$Raises enqueue's error for name as a queue name (scope 'queue': QC104) or a kind name
(scope 'kind': QC101) that enqueue would refuse (conductor._spec_problem), NULL included;
for pause_queue, resume_queue and set_rate_limit.$$;

revoke execute on function conductor._check_control_target(text, text) from public;

create or replace function conductor.pause_queue(queue text) returns boolean
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform conductor._check_control_target('queue', pause_queue.queue);
  insert into conductor.paused_queues as p (queue, paused_at, paused_by)
  values (pause_queue.queue, conductor.now(), session_user)
  on conflict on constraint paused_queues_pkey do nothing;
  return found;
end
$$;

comment on function conductor.pause_queue(text) is
$$Pauses queue: claim takes none of its tasks, from any worker, until resume_queue; its tasks
stay queued and untouched (running ones finish as usual), enqueue still writes to it, reap's
unknown-kind sweep leaves it alone, and stats() shows it paused. Returns true when the queue
was running and is now paused, false when it was paused already (nothing changes). Records
when (conductor.now()) and who (session_user) in conductor.paused_queues. The queue need not
hold tasks. Raises QC104 for an invalid queue name (enqueue's rule). Locks the queue's
paused_queues row; any number of callers.$$;

create or replace function conductor.resume_queue(queue text) returns boolean
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform conductor._check_control_target('queue', resume_queue.queue);
  delete from conductor.paused_queues p where p.queue = resume_queue.queue;
  if not found then
    return false;
  end if;
  -- its tasks are claimable again: wake the workers sleeping on it (as an enqueue does)
  perform conductor._notify_queue(resume_queue.queue);
  return true;
end
$$;

comment on function conductor.resume_queue(text) is
$$Resumes queue paused by pause_queue: its tasks are claimed again, and workers sleeping on
it are notified as after an enqueue. Returns true when it was paused, false when it was not
(nothing changes). Raises QC104 for an invalid queue name. Any number of callers.$$;

create or replace function conductor.set_rate_limit(
  queue      text default null,
  kind       text default null,
  per_second double precision default null,
  burst      double precision default null
) returns void
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_scope text := case when set_rate_limit.queue is not null then 'queue' else 'kind' end;
  v_name text := coalesce(set_rate_limit.queue, set_rate_limit.kind);
  v_burst double precision := coalesce(set_rate_limit.burst, greatest(1, set_rate_limit.per_second));
begin
  if (set_rate_limit.queue is null) = (set_rate_limit.kind is null) then
    raise exception 'set_rate_limit needs exactly one of queue and kind, got %',
      case when set_rate_limit.queue is null then 'neither' else 'both' end
      using errcode = 'QC106',
            hint = 'A limit applies to a queue (set_rate_limit(queue => ...)) or to a kind (set_rate_limit(kind => ...)); set one of each for both.';
  end if;
  perform conductor._check_control_target(v_scope, v_name);

  if set_rate_limit.per_second is null then
    if set_rate_limit.burst is not null then
      raise exception 'invalid burst %: per_second NULL removes the limit and takes no burst', set_rate_limit.burst
        using errcode = 'QC106';
    end if;
    delete from conductor.rate_limits r where r.scope = v_scope and r.name = v_name;
    return;
  end if;
  -- NaN compares above every number, so it fails the upper bounds
  if not (set_rate_limit.per_second > 0 and set_rate_limit.per_second <= 1000000) then
    raise exception 'invalid per_second %: task starts per second, more than 0 and at most 1000000',
      set_rate_limit.per_second
      using errcode = 'QC106',
            hint = 'Less than one is fine: 0.1 is one start every 10 seconds. NULL removes the limit.';
  end if;
  if not (v_burst >= 1 and v_burst <= 1000000) then
    raise exception 'invalid burst %: the most starts at once, at least 1 and at most 1000000', v_burst
      using errcode = 'QC106',
            hint = 'NULL takes greatest(1, per_second).';
  end if;

  -- a new limit starts with a full bucket; a changed one keeps what it holds
  -- (refilled to now at the old rate), at most the new burst; the same limit
  -- set again (a worker restarting) writes nothing
  insert into conductor.rate_limits as r (scope, name, per_second, burst, tokens, refilled_at)
  values (v_scope, v_name, set_rate_limit.per_second, v_burst, v_burst, v_now)
  on conflict on constraint rate_limits_pkey do update
     set per_second = excluded.per_second,
         burst = excluded.burst,
         tokens = least(excluded.burst, conductor._tokens(r.per_second, r.burst, r.tokens, r.refilled_at, v_now)),
         refilled_at = greatest(r.refilled_at, v_now)
   where (r.per_second, r.burst) is distinct from (excluded.per_second, excluded.burst);
end
$$;

comment on function conductor.set_rate_limit(text, text, double precision, double precision) is
$$Limits how many tasks of queue, or of kind (exactly one of the two), start per second across
every worker: claim draws a token per task it starts from a bucket of at most burst tokens
(default greatest(1, per_second)) that refills at per_second; a task waits queued while
its bucket (its queue's or its kind's; both when both are limited) holds no whole token.
A new limit starts with a full bucket; changing one keeps the tokens it holds (at most the
new burst); setting the same values again changes nothing. per_second NULL removes the
limit (no error when there is none). Raises QC106 unless exactly one of queue and kind is
given, for per_second not in (0, 1000000], a burst not in [1, 1000000] or a burst without
per_second; QC104 for an invalid queue name, QC101 for an invalid kind name (enqueue's
rules). Workers sleeping until a token (next_due) are not woken: a raised limit takes
effect at their next claim. Locks the limit's row (waiting for a claim drawing from it);
call it in a transaction of its own.$$;

revoke execute on function conductor.pause_queue(text) from public;
grant execute on function conductor.pause_queue(text) to conductor_admin;
revoke execute on function conductor.resume_queue(text) from public;
grant execute on function conductor.resume_queue(text) to conductor_admin;
revoke execute on function conductor.set_rate_limit(text, text, double precision, double precision) from public;
grant execute on function conductor.set_rate_limit(text, text, double precision, double precision)
  to conductor_worker, conductor_admin;

commit;
