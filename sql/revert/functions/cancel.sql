-- Revert conductor:functions/cancel from pg: back to its v0.2.0 body (the v0.2.0 deploy
-- script, functions/cancel@v0.2.0.sql), which spells out the unfinished statuses
--
-- conductor.cancel(task_id): cancels a task and every unfinished descendant in
-- one statement. Queued and waiting ones never run; a running one's attempt is
-- closed as 'cancelled', so its worker learns it at the next heartbeat and
-- cannot store a result. A cancelled task is never retried automatically.
--
-- Lock order: the tree's task rows in descending id, children before parents
-- (taken before any change, so two overlapping cancels queue up instead of
-- deadlocking, and a child finishing, which then locks its parent, never
-- waits in a cycle with a cancel), then attempt rows.

begin;
set local role conductor_owner;

create or replace function conductor.cancel(task_id bigint) returns integer
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_ids bigint[];
begin
  if not exists (select from conductor.tasks t where t.id = cancel.task_id) then
    raise exception 'task % does not exist', cancel.task_id using errcode = 'QC203';
  end if;

  with recursive tree as (
    select cancel.task_id as id
    union all
    select c.id from conductor.tasks c join tree on c.parent_id = tree.id
  ), locked as (
    select t.id from conductor.tasks t
     where t.id in (select tree.id from tree)
       and t.status in ('queued', 'running', 'waiting')
     order by t.id desc
       for no key update
  ), cancelled as (
    update conductor.tasks t
       set status = 'cancelled',
           lease_expires_at = null,
           finished_at = v_now,
           error = coalesce(t.error, 'cancelled'),
           wait_for = null, wait_event = null, wait_until = null, wait_step = null
      from locked
     where t.id = locked.id
    returning t.id, t.attempt_id
  ), closed as (
    update conductor.attempts a
       set outcome = 'cancelled', finished_at = v_now
      from cancelled c
     where a.id = c.attempt_id and a.outcome is null
  )
  select pg_catalog.array_agg(c.id) into v_ids from cancelled c;

  perform conductor._notify_done(v_ids);
  return coalesce(pg_catalog.cardinality(v_ids), 0);
end
$$;

comment on function conductor.cancel(bigint) is
$$Cancels task_id and all its unfinished descendants; returns how many it cancelled
(0 when all were already finished). Running ones learn it from their next heartbeat
(state 'cancelled'); their complete or fail is refused with QC202. Never retried
automatically. Raises QC203 when the task does not exist.$$;

revoke execute on function conductor.cancel(bigint) from public;
grant execute on function conductor.cancel(bigint) to conductor_client, conductor_admin;

drop function conductor._cancel_trees(bigint[], text);

commit;
