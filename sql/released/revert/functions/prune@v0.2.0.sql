-- Revert conductor:functions/prune from pg: back to its v0.1.0 body
--
-- The v0.1.0 deploy script (functions/prune@v0.1.0.sql), with create or replace, and
-- search_path pinned to pg_catalog, pg_temp instead of '': going back to v0.1.0's
-- bodies does not reopen the pg_temp escalation (issue 14).
--
-- Deleting old finished history, one bounded batch per call.
--
--   conductor.prune(older_than, include_failed, batch) -> bigint   admin only
--
-- Tables: conductor.tasks (read via tasks_finished, deleted), conductor.attempts,
-- conductor.steps, conductor.schedule_fires (read via
-- schedule_fires_task, an index this change owns).
--
-- What goes: tasks that finished (finished_at) before conductor.now() - older_than,
-- succeeded or cancelled, and also failed, dead and timed_out with include_failed;
-- with them their attempts, their steps, and the schedule fires that enqueued them.
-- What stays: every task of a run (root_id) that still has a task that may not
-- go (unfinished, finished too recently, or failed without include_failed),
-- root and children alike: runs go whole, so no child outlives its root.
--
-- Schedule fires: a fire whose due time lies before its schedule's next_due_at can
-- never fire again (tick only fires from next_due_at on), so its row is deleted
-- with its task; a fire not yet behind next_due_at (an operator moved the schedule
-- back) keeps its row, the unique key that stops a second fire, with task_id NULL.
--
-- Lock order: task rows (FOR UPDATE SKIP LOCKED, in finished_at order), then
-- attempts, steps, fires, as everywhere in conductor. Rows another transaction
-- holds (a retry, a cancel) are skipped and taken by a later call, so any number
-- of prune calls may run at once without waiting on each other or on the hot path.

begin;

-- The reworked prune deletes old events too, through this index of its own.
drop index conductor.events_emitted_at;

-- and through helpers it shares with apply_retention (functions/retention, reverted before)
drop function conductor._prune_events(timestamptz, integer);
drop function conductor._delete_tasks(bigint[]);

-- The fires of a batch of tasks, found without reading every fire ever made;
-- written once per fire by tick(), never on the hot path.
-- The index schedule_fires_task is created by functions/prune@v0.1.0 and unchanged since.

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
begin
  if prune.older_than is null or prune.older_than < interval '0' then
    raise exception 'invalid older_than %: it must be 0 or more', coalesce(prune.older_than::text, 'NULL')
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
  v_status := case when prune.include_failed
                   then array['succeeded', 'cancelled', 'failed', 'dead', 'timed_out']::conductor.task_status[]
                   else array['succeeded', 'cancelled']::conductor.task_status[] end;

  -- The batch: old finished tasks whose whole run may go: no task of the run
  -- (its root, id = root_id, or a non-root, tasks_run) is unfinished, too
  -- recent, or kept for its status (a failed child keeps its succeeded root).
  select pg_catalog.array_agg(v.id) into v_ids
    from (select t.id
            from conductor.tasks t
           where t.finished_at < v_cutoff
             and t.status = any (v_status)
             and not exists (select from conductor.tasks r
                              where r.id = t.root_id
                                and not (r.status = any (v_status) and r.finished_at < v_cutoff))
             and not exists (select from conductor.tasks c
                              where c.root_id = t.root_id and c.parent_id is not null
                                and not (c.status = any (v_status) and c.finished_at < v_cutoff))
           order by t.finished_at
           limit prune.batch
             for update of t skip locked) v;

  if v_ids is null then
    return 0;
  end if;

  delete from conductor.attempts a where a.task_id = any (v_ids);

  delete from conductor.steps s where s.task_id = any (v_ids);

  delete from conductor.schedule_fires f
   using conductor.schedules s
   where f.task_id = any (v_ids)
     and s.name = f.schedule_name
     and f.due_at < s.next_due_at;
  update conductor.schedule_fires f set task_id = null
   where f.task_id = any (v_ids);

  delete from conductor.tasks t where t.id = any (v_ids);
  return pg_catalog.cardinality(v_ids);
end
$$;

comment on function conductor.prune(interval, boolean, integer) is
$$Deletes at most batch (10000) finished tasks that finished before conductor.now() -
older_than, oldest first, with their attempts, steps and schedule fires; returns how many
tasks went. Succeeded and cancelled tasks go; failed, dead and timed_out ones only with
include_failed. Runs go whole: a task whose run (root_id) has a task that may not go
(unfinished, too recent, or failed without include_failed) stays, root and children alike. Call it again until it returns less than batch; each call is one short
transaction. Locks the rows it deletes, skipping rows others hold, so concurrent calls and
the hot path never wait on it. Raises QC106 for a NULL or negative older_than, a NULL
include_failed, or a batch outside 1..1000000.$$;

revoke execute on function conductor.prune(interval, boolean, integer) from public;
grant execute on function conductor.prune(interval, boolean, integer) to conductor_admin;

commit;
