-- Deploy conductor:functions/release to pg
-- (reworked after v0.2.0; the released body is sql/released/functions/release@v0.2.0.sql)
--
-- conductor.release(attempt_id): a worker shutting down hands a held task back
-- at once. The task is queued again with its due time and place unchanged; the
-- attempt counts neither against max_attempts nor as a recovery.
--
-- The queue is notified (channel 'conductor', conductor._notify_queue) every
-- time. release keeps run_at, which claim took when it was due, so the task is
-- due again at once; were it ever due later (a clock set back), the
-- notification would still be right: a worker sleeping until the earliest due
-- task of its queues (conductor.next_due) recomputes its wake-up.
--
-- Lock order: the task row, then the attempt row. A task row another transaction
-- holds is waited for 500 ms at most (lock_timeout), then 55P03: nothing changed,
-- the attempt still holds its task (send it again, or leave it to the reaper).

begin;
set local role conductor_owner;

create or replace function conductor.release(attempt_id bigint) returns void
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
  set lock_timeout = '500ms'
as $$
declare
  v_now timestamptz := conductor.now();
  v_queue text;
begin
  perform conductor._check_attempt_owners(array[release.attempt_id]);
  update conductor.tasks t
     set status = 'queued',
         attempt = t.attempt - 1,
         lease_expires_at = null,
         claimed_by = null  -- a queued task names no worker (the attempt row keeps who ran it)
   where t.id = (select a.task_id from conductor.attempts a where a.id = release.attempt_id)  -- no join: see conductor._held_task
     and t.attempt_id = release.attempt_id
     and t.status::text = 'running'  -- off tasks_running: see conductor._complete
  returning t.queue into v_queue;
  if not found then
    perform conductor._refuse(release.attempt_id);
  end if;

  update conductor.attempts a
     set outcome = 'released', finished_at = v_now
   where a.id = release.attempt_id;

  perform conductor._notify_queue(v_queue);  -- due now, or later: see the map
end
$$;

comment on function conductor.release(bigint) is
$$Hands the task held by attempt_id back to its queue at once, counting neither an
attempt nor a recovery (a clean shutdown); the queued task names no worker (claimed_by
NULL; the attempt row, closed 'released', keeps its worker_id). Raises QC201 lease lost, QC202 cancelled,
QC203 no such attempt; then nothing changes. Waits at most 500 ms for the task's row when
another transaction holds it, then raises 55P03 (nothing changed; send it again later).
Raises QC208 when another login registered the attempt's worker (an admin may release any).$$;

revoke execute on function conductor.release(bigint) from public;
grant execute on function conductor.release(bigint) to conductor_worker, conductor_admin;

commit;
