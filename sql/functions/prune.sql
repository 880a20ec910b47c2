-- Deploy conductor:functions/prune to pg
-- (reworked after v0.2.0; the released body is sql/released/functions/prune@v0.2.0.sql)
--
-- Deleting old finished history, one bounded batch per call.
--
--   conductor.prune(older_than, include_failed, batch) -> bigint   admin only
--   conductor._prune_events(cutoff, batch) -> bigint    old events no task waits for
--   conductor._delete_tasks(ids)                       tasks with attempts, steps, fires
--
-- The two helpers are granted to nobody; apply_retention (functions/retention)
-- deletes through them too, so both forget history the same way.
--
-- Tables: conductor.tasks (read via tasks_finished, deleted), conductor.attempts,
-- conductor.steps, conductor.schedule_fires (read via
-- schedule_fires_task, an index this change owns), conductor.events (read via
-- events_emitted_at, an index this change owns since its rework).
--
-- What goes: tasks that finished (finished_at) before conductor.now() - older_than,
-- succeeded or cancelled, and also failed, dead, timed_out and expired (work
-- that did not run, worth a look or a retry) with include_failed;
-- with them their attempts, their steps, and the schedule fires that enqueued them.
-- What stays: every task of a run (root_id) that still has a task that may not
-- go (unfinished, finished too recently, or failed without include_failed),
-- root and children alike: runs go whole, so no child outlives its root.
--
-- Schedule fires: a fire whose due time lies before its schedule's next_due_at can
-- never fire again (tick only fires from next_due_at on), so its row is deleted
-- with its task; a fire not yet behind next_due_at (an operator moved the schedule
-- back) keeps its row, the unique key that stops a second fire, with task_id NULL.
-- A manual fire (fire_schedule) is never a unique key: it goes with its task.
-- Handler log lines (attempt_logs) go with their attempts (on delete cascade).
--
-- Events: an event emitted before the cutoff goes, unless a task waits for it
-- (emit_event wakes every waiter, so none should; the check costs one probe of
-- tasks_waiting_event) or it is still pending (functions/runs: the reaper has not
-- yet seen every suspend that could have missed its emit end, and would wake it). Its waiters have its payload in their checkpoints; what
-- is lost is only "emitted before anyone waits": a task that first waits for
-- the name after the event was pruned waits for the next emit. Each call takes
-- at most batch events too, and the answer counts tasks and events, so "call
-- again until it returns less than batch" empties both.
--
-- Lock order: event rows (FOR UPDATE SKIP LOCKED: an event being emitted right now
-- is skipped; emit_event and suspend take no advisory lock since v0.3.0, so none is
-- tried). Then task rows (FOR UPDATE SKIP LOCKED, in finished_at order), then
-- attempts, steps, fires, as everywhere in conductor. Rows another transaction
-- holds (a retry, a cancel) are skipped and taken by a later call, so any number
-- of prune calls may run at once without waiting on each other or on the hot path.

begin;
set local role conductor_owner;

-- The fires of a batch of tasks, found without reading every fire ever made;
-- written once per fire by tick(), never on the hot path.
-- The index schedule_fires_task is created by functions/prune@v0.1.0 and unchanged since.

-- Old events are found through events_emitted_at (one row per event name), an index
-- functions/prune@v0.2.0 created and this change keeps.

create or replace function conductor._prune_events(cutoff timestamptz, batch integer) returns bigint
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  -- Old events no task waits for and the reaper has confirmed (not pending)
  with doomed as (
    select e.name
      from conductor.events e
     where e.emitted_at < _prune_events.cutoff
       and not e.pending
       and not exists (select from conductor.tasks t
                        where t.status = 'waiting' and t.wait_for = 'event' and t.wait_event = e.name)
     order by e.emitted_at
     limit _prune_events.batch
       for update of e skip locked
  ), gone as (
    delete from conductor.events e
     using doomed d
     where e.name = d.name
    returning 1
  )
  select pg_catalog.count(*) from gone
$$;

comment on function conductor._prune_events(timestamptz, integer) is
$$Deletes at most batch events emitted before cutoff, oldest first, that no waiting task
waits for and that are no longer pending (the reaper may still wake a waiter of a pending
one), skipping rows others hold (never waits); returns how many went.
Used by prune and apply_retention.$$;

revoke execute on function conductor._prune_events(timestamptz, integer) from public;

create or replace function conductor._delete_tasks(ids bigint[]) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_graphs bigint[];  -- the graphs (schema/graphs) of the deleted tasks
begin
  delete from conductor.attempts a where a.task_id = any (_delete_tasks.ids);

  delete from conductor.steps s where s.task_id = any (_delete_tasks.ids);

  -- what issue 31 keeps beside a run: its source if a fork, its published state, its updates
  delete from conductor.forks f where f.task_id = any (_delete_tasks.ids);
  delete from conductor.run_states r where r.task_id = any (_delete_tasks.ids);
  delete from conductor.updates u where u.task_id = any (_delete_tasks.ids);

  -- a fire behind next_due_at can never fire again, and a manual fire never
  -- holds a due time: both go; any other keeps its row (the unique key)
  delete from conductor.schedule_fires f
   using conductor.schedules s
   where f.task_id = any (_delete_tasks.ids)
     and s.name = f.schedule_name
     and (f.manual or f.due_at < s.next_due_at);
  update conductor.schedule_fires f set task_id = null
   where f.task_id = any (_delete_tasks.ids);

  -- a graph member's node and edges go with it (graph() and dependency_results leave it
  -- out); the graph's own row with its last member (tasks.graph_id)
  delete from conductor.graph_edges e
   where e.task_id = any (_delete_tasks.ids) or e.dependency_id = any (_delete_tasks.ids);
  delete from conductor.graph_nodes n where n.task_id = any (_delete_tasks.ids);

  with gone as (
    delete from conductor.tasks t where t.id = any (_delete_tasks.ids) returning t.graph_id
  )
  select pg_catalog.array_agg(distinct g.graph_id) filter (where g.graph_id is not null) into v_graphs from gone g;
  if v_graphs is not null then
    delete from conductor.graphs g
     where g.id = any (v_graphs)
       and not exists (select from conductor.tasks t where t.graph_id = g.id);
  end if;
end
$$;

comment on function conductor._delete_tasks(bigint[]) is
$$Deletes the tasks ids with their attempts (and so their log lines), their steps, their
conductor.forks, run_states and updates rows, their graph nodes and edges (and a graph
whose last member goes), and the schedule fires that enqueued them (a fire not yet behind its schedule's next_due_at keeps
its row, task_id NULL). The caller holds the task rows (FOR UPDATE) and makes sure runs go
whole. Used by prune and apply_retention.$$;

revoke execute on function conductor._delete_tasks(bigint[]) from public;

create or replace function conductor.prune(
  older_than     interval,
  include_failed boolean default false,
  batch          integer default 10000
) returns bigint
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now    timestamptz := conductor.now();
  v_cutoff timestamptz;
  v_ids    bigint[];
  v_status conductor.task_status[];
  v_events bigint;
begin
  if prune.older_than is null or prune.older_than < interval '0' then
    raise exception 'invalid older_than %: it must be 0 or more', coalesce(prune.older_than::text, 'NULL')
      using errcode = 'QC106', hint = 'Pass an interval such as ''7 days''.';
  end if;
  -- the cutoff is a time every driver can read, from 0001-01-02 UTC (conductor._time_range()
  -- of functions/internal); the first test keeps now - older_than from overflowing (22008)
  if prune.older_than > interval '5000 years' then
    raise exception 'invalid older_than %: the cutoff must be on or after 0001-01-02 UTC', prune.older_than
      using errcode = 'QC106', hint = 'Pass an interval such as ''7 days''.';
  end if;
  if v_now - prune.older_than < timestamptz '0001-01-02 00:00:00+00' then
    raise exception 'invalid older_than %: the cutoff must be on or after 0001-01-02 UTC', prune.older_than
      using errcode = 'QC106', hint = 'Pass an interval such as ''7 days''.';
  end if;
  if prune.include_failed is null then
    raise exception 'invalid include_failed NULL: pass true or false' using errcode = 'QC106';
  end if;
  if prune.batch is null or prune.batch < 1 or prune.batch > 1000000 then
    raise exception 'invalid batch %: between 1 and 1000000', coalesce(prune.batch::text, 'NULL')
      using errcode = 'QC106';
  end if;

  v_cutoff := v_now - prune.older_than;

  v_events := conductor._prune_events(v_cutoff, prune.batch);

  v_status := case when prune.include_failed
                   then conductor.finished_statuses()
                   else array['succeeded', 'cancelled']::conductor.task_status[] end;

  -- The batch: old finished tasks whose whole run may go: no task of the run
  -- (its root, id = root_id, or a non-root, tasks_run) is unfinished, too
  -- recent, kept for its status (a failed child keeps its succeeded root), or
  -- holding its dedupe_key for a period not yet over (issue 30: a window's
  -- finished holder is the key's arbiter until dedupe_until; 'infinity', no
  -- window, holds until pruned).
  select pg_catalog.array_agg(v.id) into v_ids
    from (select t.id
            from conductor.tasks t
           where t.finished_at < v_cutoff
             and t.status = any (v_status)
             and not exists (select from conductor.tasks r
                              where r.id = t.root_id
                                and not (r.status = any (v_status) and r.finished_at < v_cutoff
                                         and not coalesce(r.dedupe_until > v_now and pg_catalog.isfinite(r.dedupe_until)
                                                          and r.status = any (r.dedupe_states), false)))
             and not exists (select from conductor.tasks c
                              where c.root_id = t.root_id and c.parent_id is not null
                                and not (c.status = any (v_status) and c.finished_at < v_cutoff
                                         and not coalesce(c.dedupe_until > v_now and pg_catalog.isfinite(c.dedupe_until)
                                                          and c.status = any (c.dedupe_states), false)))
           order by t.finished_at
           limit prune.batch
             for update of t skip locked) v;

  if v_ids is null then
    return v_events;
  end if;

  perform conductor._delete_tasks(v_ids);
  return pg_catalog.cardinality(v_ids) + v_events;
end
$$;

comment on function conductor.prune(interval, boolean, integer) is
$$Deletes at most batch (10000) finished tasks that finished before conductor.now() -
older_than, oldest first, with their attempts, steps and schedule fires, and at most batch
events emitted before that time that no task waits for; returns how many tasks and events
went. Succeeded and cancelled tasks go; failed, dead, timed_out and expired ones only with
include_failed. Runs go whole: a task whose run (root_id) has a task that may not go
(unfinished, too recent, failed without include_failed, or holding its dedupe_key for a
dedupe_window not yet over: dedupe_until after now) stays, root and children alike.
A pruned event no longer counts for a task that waits for its name later (it waits for the
next emit); its earlier waiters keep its payload in their checkpoints.
Call it again until it returns less than batch; each call is one short
transaction. Locks the rows it deletes, skipping rows others hold, so concurrent calls and
the hot path never wait on it. Raises QC106 for a NULL or negative older_than or one
reaching back before 0001-01-02 UTC, a NULL
include_failed, or a batch outside 1..1000000.$$;

revoke execute on function conductor.prune(interval, boolean, integer) from public;
grant execute on function conductor.prune(interval, boolean, integer) to conductor_admin;

commit;
