-- Revert conductor:functions/fail from pg: back to its v0.2.0 bodies
--
-- conductor.fail(attempt_id, error, retry_at, traceback, unknown_kind, retryable):
-- the handler of a held task raised. The error and traceback go into the
-- attempt row; the task then
--   - is dead at once when unknown_kind (no handler for its kind on the worker),
--   - is failed at once when not retryable (the handler finished, but its
--     result could not be stored: running it again would redo its effects
--     for the same result),
--   - goes back to the queue when attempts remain (max_attempts opt-in), due at
--     retry_at if the handler asked for one, else after the backoff
--     (conductor._backoff: 30 s doubling, at most 1 h, up to 20 % jitter; it
--     never raises, whatever policy v0.1.0 stored),
--   - is failed otherwise.
-- Returns the task's new status. Recoveries are untouched: a failure is not a
-- lost worker.
--
-- A requeued task notifies its queue (channel 'conductor', conductor._notify_queue)
-- whether it is due now or later: a worker sleeping until the earliest due task
-- of its queues (conductor.next_due) recomputes its wake-up, so a retry after
-- its backoff or retry_at starts on time rather than at the next poll.
--
-- Lock order: the task row, then the attempt row.

begin;
set local role conductor_owner;

drop function if exists conductor.fail(bigint, text, timestamptz, text, boolean, boolean, boolean);

create or replace function conductor.fail(
  attempt_id   bigint,
  error        text,
  retry_at     timestamptz default null,
  traceback    text default null,
  unknown_kind boolean default false,
  retryable    boolean default true
) returns conductor.task_status
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_task conductor.tasks;
  v_kind conductor.kinds;
  v_status conductor.task_status;
  v_error text := coalesce(nullif(fail.error, ''), 'error not given');
  v_run_at timestamptz;
begin
  perform conductor._check_time(fail.retry_at, 'retry_at');
  v_task := conductor._held_task(fail.attempt_id);

  if fail.unknown_kind then
    v_status := 'dead';
    v_error := pg_catalog.format('no handler for kind %s on worker %s: %s',
                                 pg_catalog.quote_literal(v_task.kind), v_task.claimed_by, v_error);
  elsif v_task.attempt < v_task.max_attempts and fail.retryable is not false then
    v_status := 'queued';
    select k.* into v_kind from conductor.kinds k where k.kind = v_task.kind;
    v_run_at := greatest(v_now, coalesce(fail.retry_at,
      v_now + conductor._backoff(v_task.id, v_task.attempt,
                                 coalesce(v_task.backoff_base, v_kind.backoff_base),
                                 coalesce(v_task.backoff_factor, v_kind.backoff_factor),
                                 coalesce(v_task.backoff_max, v_kind.backoff_max))));
  else
    v_status := 'failed';
  end if;

  update conductor.tasks t
     set status = v_status,
         error = v_error,
         run_at = coalesce(v_run_at, t.run_at),
         lease_expires_at = null,
         finished_at = case when v_status = 'queued' then null else v_now end
   where t.id = v_task.id;

  update conductor.attempts a
     set outcome = 'failed', finished_at = v_now, error = v_error, traceback = fail.traceback
   where a.id = fail.attempt_id;

  if v_status = 'queued' then
    perform conductor._notify_queue(v_task.queue);  -- due now or later: see the map
  else
    perform conductor._notify_done(array[v_task.id]);
  end if;
  return v_status;
end
$$;

comment on function conductor.fail(bigint, text, timestamptz, text, boolean, boolean) is
$$Records that the handler of the task held by attempt_id failed: error and traceback
are stored on the attempt (every attempt's error is kept). Returns the task's new status:
'queued' when attempts remain (due at retry_at if given, else after the backoff:
backoff_base * backoff_factor ^ (attempt - 1), at most backoff_max, less up to 20 % jitter;
each from the task, else its kind (configure_kind), else 30 s, 2 and 1 h), 'failed' when
none remain or when retryable is false (a result that could not be stored: a new attempt
would redo the handler's effects), 'dead' at once when unknown_kind (the worker has no
handler for the task's kind). retry_at: NULL, or a finite time from 0001-01-02 to
9999-12-30 UTC (one in the past means now). Raises QC106 for any other retry_at,
QC201 lease lost, QC202 cancelled, QC203 no such attempt; then nothing changes.$$;

revoke execute on function conductor.fail(bigint, text, timestamptz, text, boolean, boolean) from public;
grant execute on function conductor.fail(bigint, text, timestamptz, text, boolean, boolean) to conductor_worker, conductor_admin;

commit;
