-- Deploy conductor:functions/complete to pg
-- (reworked after v0.2.0; the released body is sql/released/functions/complete@v0.2.0.sql)
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
-- Never waiting long on a row another session holds. A client's cancel() or
-- emit_event() in a transaction it leaves open (a web request, say) locks task
-- rows until it ends, and a worker's report must not wait for that: one such
-- row would stall every result of the batch, and the worker's reports after it.
-- The engine's own transactions hold a task row for milliseconds too (a claim
-- whose scan met the task keeps the row locked to its commit although it did
-- not take it; a heartbeat), and a report must not bounce off those. So
-- _complete runs its statement with lock_timeout = 200 ms, in a subtransaction:
-- the common case is that one statement, as before (no extra lock, no extra
-- WAL). When a lock is not granted within 200 ms, the subtransaction is rolled
-- back (nothing of the batch stored yet), the held tasks that no other
-- transaction holds are locked FOR NO KEY UPDATE SKIP LOCKED, and their parents
-- too (a child's end locks its parent: the trigger tasks_child_finished), and
-- the statement runs again for those only, waiting on nothing. An attempt whose
-- task, or whose task's parent, another transaction still held is left as it
-- is: complete_many answers it 'locked' (the attempt still holds its task:
-- send the same result again later; nothing was stored), complete raises
-- 55P03. Sent again once the holder ended, it is stored, or refused as the
-- holder left it (cancelled). Any other lock not granted in 200 ms (a DDL on
-- the tables, say) raises 55P03 from the second run: the call is sent again.
-- The waiters of the finished tasks are deleted with SKIP LOCKED
-- (functions/notify). 200 ms is under deadlock_timeout, so a holder that waits
-- for a row of this batch (a cancel of the tree) goes on once this gives up.
-- (Locking every row first, SKIP LOCKED, in the one statement cost a Heap/LOCK
-- WAL record per task, 55 bytes, and about 15 % more server time per call;
-- the subtransaction costs 3 bytes per task and no measurable time: measured
-- with pg_walinspect over 20 000 claims and completes, issue 25.)
--
-- What cannot be stored fails only its own task: a result larger than
-- conductor.settings.max_result_bytes (bytes of its jsonb form, as enqueue
-- measures payloads) ends its task 'failed' at once, not retried, with
-- 'result not storable: ...' as the task's and the attempt's error, in the same
-- call that stores the others (a second statement, run only when a result is
-- over the limit: the common call starts one UPDATE of conductor.tasks, not
-- two); complete_many answers it 'failed', complete
-- warns (QC107). Not retried: the handler ran to the end and its effects are
-- done; running it again would redo them to produce the same result. (A result
-- the server cannot even parse, e.g. a string holding \u0000, fails the cast of
-- the jsonb[] parameter before any of this runs: the driver must not send it.)
--
-- Plans: _complete's statement is planned once per connection (a generic
-- plan) with sequential scans, hash and merge joins disabled, so the plan is
-- primary-key probes whatever the table's size was when it was made
-- (sql/tests/claim/cached_plans_stay_on_index_probes.sql stages it): planning
-- it afresh on every call cost more than executing it. (A generic plan that
-- could choose a scan went stale as the table grew, up to 200x slower:
-- bench/stale_plans.py.) Each scan of tasks and attempts is an index scan
-- bounded by the ids given (`id = any (...)`, a scalar subquery, or a lateral
-- subquery kept whole by offset 0), and no statement joins two tables: with a
-- join, a plan made while the statistics said a table was
-- empty over pages that still held rows (ANALYZE after a bulk delete or a prune
-- under a long transaction) took the table for one row and walked its whole
-- primary key as the outer side of the nested loop, every call reading every row
-- (87 ms for 25 results over 130,000 deleted rows; bench/HISTORY.md, issue 26's
-- ninth part). sql/tests/complete_many/
-- plans_made_on_emptied_tables_read_only_the_named_rows.sql stages that.
--
-- Finished tasks (succeeded, or failed for an unstorable result) are announced
-- on the channel 'conductor_done' (one notification per call) for clients
-- waiting for results.
--
-- Lock order: task rows, then their parents' rows (a child before its parent, as
-- cancel and the trigger), then attempt rows (as everywhere in conductor); each
-- wait at most 200 ms, the second run's task and parent rows with SKIP LOCKED.

begin;
set local role conductor_owner;

-- v0.1.0's _complete returned only the stored attempts; it now also returns the
-- attempts failed for an unstorable result (a new return type: drop, create).

create or replace function conductor._complete(
  attempt_ids bigint[], results jsonb[], out stored bigint[], out unstorable bigint[]
)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set enable_seqscan = off
  set jit = off
  set enable_hashjoin = off
  set enable_mergejoin = off
  set lock_timeout = '200ms'
as $$
declare
  v_now timestamptz := conductor.now();
  v_max integer;
  v_ids bigint[] := _complete.attempt_ids;
  v_results jsonb[] := _complete.results;
  v_tasks bigint[];
  v_skipping boolean := false;
  v_over boolean;  -- a result over max_result_bytes came
begin
  if pg_catalog.cardinality(_complete.results) is distinct from pg_catalog.cardinality(_complete.attempt_ids)
     and _complete.results is not null then
    raise exception 'complete_many got % attempt ids and % results; give one result per attempt, or NULL for none',
      pg_catalog.cardinality(_complete.attempt_ids), pg_catalog.cardinality(_complete.results)
      using errcode = 'QC106';
  end if;
  -- where s.one: an index scan, as enable_seqscan is off (a disabled seq scan costs
  -- 1e10 and would be compiled by JIT on every call)
  select s.max_result_bytes into v_max from conductor.settings s where s.one;

  -- Once, or twice when a row was held for over 200 ms (see the map).
  loop
    begin
      -- Every scan is one index scan bounded by ids (`id = any (...)`), and no
      -- statement joins two tables: the attempts' task ids by primary key, the tasks
      -- by primary key and fenced by attempt_id, the attempts finished by primary
      -- key; a result is found by its attempt's position in v_ids. A join let a plan
      -- made on statistics that called a table empty walk that table's whole primary
      -- key (see the map), and a redundant bound beside a join let a plan with
      -- good statistics probe the bound once per row of the other side.
      -- status::text, not status: a plain status = 'running' lets the planner scan
      -- the partial index tasks_running instead, which statistics call small but
      -- which, while a long transaction pins the xmin horizon, holds a dead entry
      -- for every task that ran since (measured: 340 ms per complete_many of 50
      -- after 3 minutes of pinning, bench/HISTORY.md, "Figures at 40636cf").
      -- A result over the limit is not stored: its task fails instead, under the
      -- same fence, in a second statement that runs only when the first saw one
      -- (v_over): an UPDATE of conductor.tasks opens and describes every index of
      -- the table when it starts, whether it changes a row or not.
      with finished as (
        update conductor.tasks t
           set status = 'succeeded',
               result = v_results[pg_catalog.array_position(v_ids, t.attempt_id)],
               error = null,
               lease_expires_at = null,
               finished_at = v_now
         where t.id = any (array(select a.task_id from conductor.attempts a where a.id = any (v_ids)))
           and t.attempt_id = any (v_ids)
           and t.status::text = 'running'
           and not coalesce(pg_catalog.pg_column_size(v_results[pg_catalog.array_position(v_ids, t.attempt_id)])
                            > v_max, false)
        returning t.attempt_id
      ), recorded as (
        update conductor.attempts a
           set outcome = 'succeeded', finished_at = v_now, error = null
         where a.id = any (array(select f.attempt_id from finished f))
        returning a.id, a.task_id
      )
      select pg_catalog.array_agg(r.id), pg_catalog.array_agg(r.task_id),
             (select pg_catalog.bool_or(pg_catalog.pg_column_size(x.result) > v_max)
                from pg_catalog.unnest(v_results) as x(result))
        into _complete.stored, v_tasks, v_over
        from recorded r;
      if v_over then
        with rejected as (
          update conductor.tasks t
             set status = 'failed',
                 error = pg_catalog.format('result not storable: %s bytes of jsonb, over the limit of %s bytes '
                                           '(conductor.settings.max_result_bytes)',
                                           pg_catalog.pg_column_size(v_results[pg_catalog.array_position(v_ids, t.attempt_id)]),
                                           v_max),
                 lease_expires_at = null,
                 finished_at = v_now
           where t.id = any (array(select a.task_id from conductor.attempts a where a.id = any (v_ids)))
             and t.attempt_id = any (v_ids)
             and t.status::text = 'running'
             and pg_catalog.pg_column_size(v_results[pg_catalog.array_position(v_ids, t.attempt_id)]) > v_max
          returning t.attempt_id, t.error
        ), recorded as (
          -- a rare path (results over the limit), so a join: by primary key, bounded
          update conductor.attempts a
             set outcome = 'failed', finished_at = v_now, error = f.error
            from rejected f
           where a.id = any (array(select r.attempt_id from rejected r))
             and a.id = f.attempt_id
          returning a.id, a.task_id
        )
        select pg_catalog.array_agg(r.id), v_tasks || pg_catalog.array_agg(r.task_id)
          into _complete.unstorable, v_tasks
          from recorded r;
      end if;
      exit;
    exception when lock_not_available or deadlock_detected then
      if v_skipping then
        raise;  -- a lock other than the tasks' rows: 55P03, the caller sends it again
      end if;
      -- Lock the held tasks no other transaction holds, then their parents (a child
      -- before its parent), skipping the rows others hold; go again with those only.
      with held as materialized (
        select t.attempt_id as id, pg_catalog.array_position(_complete.attempt_ids, t.attempt_id) as n, t.parent_id
          from conductor.tasks t
         where t.id = any (array(select a.task_id from conductor.attempts a where a.id = any (_complete.attempt_ids)))
           and t.attempt_id = any (_complete.attempt_ids)
           and t.status::text = 'running'
           for no key update of t skip locked
      ), parents as materialized (
        select p.id from conductor.tasks p
         where p.id = any (array(select held.parent_id from held))
           for no key update skip locked
      )
      select pg_catalog.array_agg(held.id order by held.n),
             pg_catalog.array_agg(_complete.results[held.n] order by held.n)
        into v_ids, v_results
        from held
       where held.parent_id is null or held.parent_id in (select parents.id from parents);
      exit when v_ids is null;
      v_skipping := true;
    end;
  end loop;

  perform conductor._notify_done(v_tasks);
  _complete.stored := coalesce(_complete.stored, '{}');
  _complete.unstorable := coalesce(_complete.unstorable, '{}');
end
$$;

comment on function conductor._complete(bigint[], jsonb[]) is
$$Finishes each of attempt_ids that still holds its task (running, tasks.attempt_id = it):
succeeded with results[i] (one statement), or failed for a result over
settings.max_result_bytes (a second one, only then). Returns their ids in stored and unstorable (the rest changed nothing) and
announces the finished tasks on conductor_done. Waits at most 200 ms for a lock
(lock_timeout); when a task row, or a task's parent row, stays held longer by another
transaction, that attempt is skipped (in neither array, still holding its task) and the
others are finished. Raises QC106 when results is not NULL and differs in length; 55P03
when another lock is not granted within 200 ms. Locks task rows, then their parents, then
attempt rows. Called by complete and complete_many; security definer.$$;

revoke execute on function conductor._complete(bigint[], jsonb[]) from public;

create or replace function conductor.complete(attempt_id bigint, result jsonb default null) returns void
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_done record;
  v_attempt conductor.attempts;
begin
  perform conductor._check_attempt_owners(array[complete.attempt_id]);
  v_done := conductor._complete(array[complete.attempt_id], array[complete.result]);
  if pg_catalog.cardinality(v_done.unstorable) > 0 then
    -- a warning, not an error: the task's failure must commit
    select a.* into v_attempt from conductor.attempts a where a.id = complete.attempt_id;
    raise warning 'task % failed: %', v_attempt.task_id, v_attempt.error
      using errcode = 'QC107',
            detail = pg_catalog.format('The result of attempt %s was not stored; the task is failed, not retried.',
                                       complete.attempt_id),
            hint = 'Store large data elsewhere and return a reference to it.';
  elsif pg_catalog.cardinality(v_done.stored) = 0 then
    select a.* into v_attempt
      from conductor.attempts a
     where a.id = complete.attempt_id
       -- a probe by primary key (a scalar subquery is never made a join: see the map)
       and (select t.status::text from conductor.tasks t where t.id = a.task_id and t.attempt_id = a.id) = 'running';
    if found then
      -- still held: its row (or its parent's) was another transaction's for over 200 ms
      raise exception 'task % is locked by another transaction; its result was not stored', v_attempt.task_id
        using errcode = '55P03',
              detail = pg_catalog.format('Attempt %s still holds the task; nothing changed.', complete.attempt_id),
              hint = 'Send the same complete again later (a client''s cancel or emit_event has not committed yet).';
    end if;
    perform conductor._refuse(complete.attempt_id);
  end if;
end
$$;

comment on function conductor.complete(bigint, jsonb) is
$$Finishes the task held by attempt_id as succeeded and stores result (any JSON, or NULL).
A result larger than conductor.settings.max_result_bytes (bytes of its jsonb form) is not
stored: the task fails at once (not retried), its error and the attempt's 'result not
storable: <size> bytes of jsonb, over the limit of <limit> bytes', and complete returns
normally with a WARNING (SQLSTATE QC107) so that the failure commits.
Raises QC201 (lease lost) when the attempt no longer holds its task, QC202 when the task
was cancelled, QC203 when the attempt does not exist; then nothing changes. Waits at most
200 ms for a task row (or its parent's) another transaction holds (a client's cancel or
emit_event left open), then raises 55P03 (lock_not_available): nothing changed, the attempt
still holds its task; send the same call again later.
Raises QC208 when another login registered the attempt's worker (attempt ids are readable
by every role; an admin may complete any), storing nothing.$$;

create or replace function conductor.complete_many(attempt_ids bigint[], results jsonb[] default null)
  returns table (attempt_id bigint, task_id bigint, state text)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_done record;
begin
  perform conductor._check_attempt_owners(complete_many.attempt_ids);
  v_done := conductor._complete(complete_many.attempt_ids, complete_many.results);
  if pg_catalog.cardinality(v_done.stored) = pg_catalog.cardinality(complete_many.attempt_ids) then
    return;  -- every one stored: the common case needs no second look
  end if;
  -- a new statement, a new snapshot: what the holder of a skipped row committed shows
  return query
  select given.id, a.task_id,
         case when given.id = any (v_done.unstorable) then 'failed'
              when a.outcome = 'cancelled' then 'cancelled'
              when a.outcome in ('succeeded', 'failed', 'released', 'suspended') then 'finished'
              when a.outcome is null and t.attempt_id = given.id and t.status::text = 'running' then 'locked'
              else 'lost' end
    from pg_catalog.unnest(complete_many.attempt_ids) as given(id)
    -- each row a probe by primary key, planned apart (offset 0 keeps the subquery
    -- whole): no plan can walk a table (conductor._complete's map)
    left join lateral (select x.task_id, x.outcome from conductor.attempts x
                        where x.id = given.id offset 0) a on true
    left join lateral (select y.attempt_id, y.status from conductor.tasks y
                        where y.id = a.task_id offset 0) t on true
   where given.id <> all (v_done.stored);
end
$$;

comment on function conductor.complete_many(bigint[], jsonb[]) is
$$Finishes a batch of held tasks in one call: results[i] belongs to attempt_ids[i]
(results NULL: no result for any). Each attempt is fenced on its own, so one lost lease
does not stop the others. Returns a row for each attempt whose result it did not store,
with state
  'failed'    the result is larger than conductor.settings.max_result_bytes: the task
              failed at once (not retried), its error and the attempt's 'result not
              storable: <size> bytes of jsonb, over the limit of <limit> bytes';
  'cancelled' the task was cancelled;
  'finished'  the attempt had already reported (e.g. a batch sent twice after a lost
              connection);
  'locked'    another transaction held the task's row, or its parent's, for over 200 ms
              (a client's cancel or emit_event not committed yet): nothing changed and
              the attempt still holds its task; keep the result, keep heartbeating the
              attempt, and send it again later (the rest of the batch is stored);
  'lost'      the lease expired and the task was taken back, or no such attempt,
as heartbeat does; an empty answer means all were stored. The worker discards the
result of every attempt answered, except 'locked'. Raises QC106 when the arrays differ in
length; 55P03 if a lock other than those rows is not granted within 200 ms (send the batch
again later). (A result that is not valid jsonb, such as a string holding \u0000, fails
the cast of the parameter before the call: the whole statement raises, nothing is stored;
the driver must not send one.)
Raises QC208, storing nothing, when another login registered the worker of one of the
attempts (an admin may complete any).$$;

revoke execute on function conductor.complete(bigint, jsonb) from public;
revoke execute on function conductor.complete_many(bigint[], jsonb[]) from public;
grant execute on function conductor.complete(bigint, jsonb) to conductor_worker, conductor_admin;
grant execute on function conductor.complete_many(bigint[], jsonb[]) to conductor_worker, conductor_admin;

commit;
