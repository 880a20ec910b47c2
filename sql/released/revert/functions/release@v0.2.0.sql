-- Revert conductor:functions/release from pg: back to its v0.1.0 body
--
-- The v0.1.0 deploy script (functions/release@v0.1.0.sql), with create or replace, and
-- search_path pinned to pg_catalog, pg_temp instead of '': going back to v0.1.0's
-- bodies does not reopen the pg_temp escalation (issue 14).
--
-- conductor.release(attempt_id): a worker shutting down hands a held task back
-- at once. The task is queued again with its due time and place unchanged; the
-- attempt counts neither against max_attempts nor as a recovery.
--
-- Lock order: the task row, then the attempt row.

begin;

create or replace function conductor.release(attempt_id bigint) returns void
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_task_id bigint;
  v_queue text;
  v_run_at timestamptz;
begin
  update conductor.tasks t
     set status = 'queued',
         attempt = t.attempt - 1,
         lease_expires_at = null
    from conductor.attempts a
   where a.id = release.attempt_id
     and t.id = a.task_id
     and t.attempt_id = a.id
     and t.status::text = 'running'  -- off tasks_running: see conductor._complete
  returning t.id, t.queue, t.run_at into v_task_id, v_queue, v_run_at;
  if not found then
    perform conductor._refuse(release.attempt_id);
  end if;

  update conductor.attempts a
     set outcome = 'released', finished_at = v_now
   where a.id = release.attempt_id;

  if v_run_at <= v_now then
    perform conductor._notify_queue(v_queue);
  end if;
end
$$;

comment on function conductor.release(bigint) is
$$Hands the task held by attempt_id back to its queue at once, counting neither an
attempt nor a recovery (a clean shutdown). Raises QC201 lease lost, QC202 cancelled,
QC203 no such attempt; then nothing changes.$$;

revoke execute on function conductor.release(bigint) from public;
grant execute on function conductor.release(bigint) to conductor_worker, conductor_admin;

commit;
