-- Revert conductor:functions/retry from pg: back to its v0.2.0 bodies
--
-- conductor.retry(task_id, keep_steps): a person (or a client) puts a failed,
-- dead, timed-out or cancelled task back in its queue, due now, with fresh
-- counts (attempt and recoveries zero, error and result cleared). Its attempts
-- stay for forensics; its checkpointed steps stay too, so the run resumes
-- where it stopped, unless keep_steps => false.

begin;
set local role conductor_owner;

create or replace function conductor.retry(task_id bigint, keep_steps boolean default true) returns bigint
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_task conductor.tasks;
begin
  select t.* into v_task from conductor.tasks t where t.id = retry.task_id for update;
  if not found then
    raise exception 'task % does not exist', retry.task_id using errcode = 'QC203';
  end if;
  if v_task.status not in ('failed', 'dead', 'timed_out', 'cancelled') then
    raise exception 'task % is %; only a failed, dead, timed_out or cancelled task can be retried',
      retry.task_id, v_task.status
      using errcode = 'QC204';
  end if;

  begin
    update conductor.tasks t
       set status = 'queued', attempt = 0, recoveries = 0, run_at = v_now,
           error = null, result = null, finished_at = null, lease_expires_at = null,
           wait_for = null, wait_event = null, wait_until = null, wait_step = null
     where t.id = retry.task_id;
  exception when unique_violation then
    raise exception 'task % cannot be retried: another unfinished task holds its dedupe_key %',
      retry.task_id, pg_catalog.quote_literal(v_task.dedupe_key)
      using errcode = 'QC205';
  end;

  if not coalesce(retry.keep_steps, true) then
    delete from conductor.steps s where s.task_id = retry.task_id;
  end if;

  perform conductor._notify_queue(v_task.queue);
  return retry.task_id;
end
$$;

comment on function conductor.retry(bigint, boolean) is
$$Puts a failed, dead, timed_out or cancelled task back in its queue, due now, with
fresh counts; returns its id. Its checkpointed steps are kept (the run resumes after
them) unless keep_steps => false; kept spawn steps give the replay the same children
(retry those separately, or pass keep_steps => false for new ones). Raises QC203 when it does not exist, QC204 when it is in
another status, QC205 when another unfinished task holds its dedupe_key.$$;

revoke execute on function conductor.retry(bigint, boolean) from public;
grant execute on function conductor.retry(bigint, boolean) to conductor_client, conductor_admin;

drop function conductor.retryable_statuses();
drop function conductor._requeue_run(bigint, bigint[], text);

commit;
