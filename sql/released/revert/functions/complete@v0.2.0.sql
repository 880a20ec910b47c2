-- Revert conductor:functions/complete from pg: back to its v0.1.0 body
--
-- The v0.1.0 deploy script (functions/complete@v0.1.0.sql), with create or replace, and
-- search_path pinned to pg_catalog, pg_temp instead of '': going back to v0.1.0's
-- bodies does not reopen the pg_temp escalation (issue 14).
--
-- Finishing a held task with a result.
--
--   conductor.complete(attempt_id, result)               -> void, raises when not held
--   conductor.complete_many(attempt_ids, results)        -> the attempts refused, with why
--
-- Both go through conductor._complete, which finishes every given attempt that
-- still holds its task (status running, tasks.attempt_id = the attempt) in one
-- statement and returns the ones it finished. The fence and the update are the
-- same statement, so a zombie worker whose lease was taken back changes nothing.
-- complete_many looks at the refused ones only when there are any.
--
-- Plans: _complete's statement is planned once per connection (a generic
-- plan) with sequential scans, hash and merge joins disabled, so the plan is
-- primary-key probes whatever the table's size was when it was made
-- (sql/tests/claim/cached_plans_stay_on_index_probes.sql stages it): planning
-- it afresh on every call cost more than executing it. (A generic plan that
-- could choose a scan went stale as the table grew, up to 200x slower:
-- bench/stale_plans.py.)
--
-- Finished tasks are announced on the channel 'conductor_done' (one
-- notification per call) for clients waiting for results.
--
-- Lock order: task rows, then attempt rows (as everywhere in conductor).

begin;

-- The reworked _complete returns (stored, unstorable); v0.1.0's returns bigint[].
drop function conductor._complete(bigint[], jsonb[]);

create or replace function conductor._complete(attempt_ids bigint[], results jsonb[])
  returns bigint[]
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set enable_seqscan = off
  set enable_hashjoin = off
  set enable_mergejoin = off
as $$
declare
  v_now timestamptz := conductor.now();
  v_done bigint[];
  v_tasks bigint[];
begin
  if pg_catalog.cardinality(_complete.results) is distinct from pg_catalog.cardinality(_complete.attempt_ids)
     and _complete.results is not null then
    raise exception 'complete_many got % attempt ids and % results; give one result per attempt, or NULL for none',
      pg_catalog.cardinality(_complete.attempt_ids), pg_catalog.cardinality(_complete.results)
      using errcode = 'QC106';
  end if;

  -- The given attempts are looked up by primary key first (materialized), and
  -- their tasks then by primary key: the plan never starts from the running set.
  -- status::text, not status: a plain status = 'running' lets the planner scan
  -- the partial index tasks_running instead, which statistics call small but
  -- which, while a long transaction pins the xmin horizon, holds a dead entry
  -- for every task that ran since (measured: 340 ms per complete_many of 50
  -- after 3 minutes of pinning, bench/RESULTS.md).
  with given as materialized (
    select a.id, a.task_id, _complete.results[g.n] as result
      from pg_catalog.unnest(_complete.attempt_ids) with ordinality as g(id, n)
      join conductor.attempts a on a.id = g.id
  ), finished as (
    update conductor.tasks t
       set status = 'succeeded',
           result = given.result,
           error = null,
           lease_expires_at = null,
           finished_at = v_now
      from given
     where t.id = given.task_id
       and t.attempt_id = given.id
       and t.status::text = 'running'
    returning t.attempt_id
  ), recorded as (
    update conductor.attempts a
       set outcome = 'succeeded', finished_at = v_now
      from finished f
     where a.id = f.attempt_id
    returning a.id, a.task_id
  )
  select pg_catalog.array_agg(r.id), pg_catalog.array_agg(r.task_id) into v_done, v_tasks from recorded r;

  perform conductor._notify_done(v_tasks);
  return coalesce(v_done, '{}');
end
$$;

revoke execute on function conductor._complete(bigint[], jsonb[]) from public;

create or replace function conductor.complete(attempt_id bigint, result jsonb default null) returns void
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if pg_catalog.cardinality(conductor._complete(array[complete.attempt_id], array[complete.result])) = 0 then
    perform conductor._refuse(complete.attempt_id);
  end if;
end
$$;

comment on function conductor.complete(bigint, jsonb) is
$$Finishes the task held by attempt_id as succeeded and stores result (any JSON, or NULL).
Raises QC201 (lease lost) when the attempt no longer holds its task, QC202 when the task
was cancelled, QC203 when the attempt does not exist; then nothing changes.$$;

create or replace function conductor.complete_many(attempt_ids bigint[], results jsonb[] default null)
  returns table (attempt_id bigint, task_id bigint, state text)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_done bigint[] := conductor._complete(complete_many.attempt_ids, complete_many.results);
begin
  if pg_catalog.cardinality(v_done) = pg_catalog.cardinality(complete_many.attempt_ids) then
    return;  -- every one stored: the common case needs no second look
  end if;
  return query
  select given.id, a.task_id,
         case when a.outcome = 'cancelled' then 'cancelled'
              when a.outcome in ('succeeded', 'failed', 'released', 'suspended') then 'finished'
              else 'lost' end
    from pg_catalog.unnest(complete_many.attempt_ids) as given(id)
    left join conductor.attempts a on a.id = given.id
   where given.id <> all (v_done);
end
$$;

comment on function conductor.complete_many(bigint[], jsonb[]) is
$$Finishes a batch of held tasks in one statement: results[i] belongs to attempt_ids[i]
(results NULL: no result for any). Each attempt is fenced on its own, so one lost lease
does not stop the others. Returns a row for each attempt it refused, state 'cancelled',
'finished' (it had already reported, e.g. a batch sent twice after a lost connection) or
'lost', as heartbeat does; an empty answer means all were stored.
Raises QC106 when the arrays differ in length.$$;

revoke execute on function conductor.complete(bigint, jsonb) from public;
revoke execute on function conductor.complete_many(bigint[], jsonb[]) from public;
grant execute on function conductor.complete(bigint, jsonb) to conductor_worker, conductor_admin;
grant execute on function conductor.complete_many(bigint[], jsonb[]) to conductor_worker, conductor_admin;

commit;
