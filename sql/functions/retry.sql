-- Deploy conductor:functions/retry to pg
--
-- conductor.retry(task_id): a person (or a client) puts a failed, dead,
-- timed-out or cancelled task back in its queue, due now, with fresh counts
-- (attempt and recoveries zero, error and result cleared). Its attempts stay
-- for forensics.

begin;

create function conductor.retry(task_id bigint) returns bigint
  language plpgsql volatile
  security definer
  set search_path = ''
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
           error = null, result = null, finished_at = null, lease_expires_at = null
     where t.id = retry.task_id;
  exception when unique_violation then
    raise exception 'task % cannot be retried: another unfinished task holds its dedupe_key %',
      retry.task_id, pg_catalog.quote_literal(v_task.dedupe_key)
      using errcode = 'QC205';
  end;

  perform conductor._notify_queue(v_task.queue);
  return retry.task_id;
end
$$;

comment on function conductor.retry(bigint) is
$$Puts a failed, dead, timed_out or cancelled task back in its queue, due now, with
fresh counts; returns its id. Raises QC203 when it does not exist, QC204 when it is in
another status, QC205 when another unfinished task holds its dedupe_key.$$;

revoke execute on function conductor.retry(bigint) from public;
grant execute on function conductor.retry(bigint) to conductor_client, conductor_admin;

commit;
