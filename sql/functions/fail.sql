-- Deploy conductor:functions/fail to pg
-- (reworked after v0.2.0; the released body is sql/released/functions/fail@v0.2.0.sql)
--
-- conductor.fail(attempt_id, error, retry_at, traceback, unknown_kind, retryable,
-- timed_out): the handler of a held task raised, or reached its time limit
-- (timed_out: the worker gives the reason, the engine writes the error, 'timed
-- out after N s' by conductor._timed_out_error, and records attempts.timed_out,
-- which heartbeat reads; no worker formats that text). The error and traceback
-- go into the attempt row; the task then
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
-- Lock order: the task row, then the attempt row. A task row another transaction
-- holds (a client's cancel or emit_event left open) is waited for 500 ms at most
-- (lock_timeout), then 55P03: nothing changed, the attempt still holds its task,
-- and the worker sends the same call again later; its other reports go on.

begin;
set local role conductor_owner;

-- timed_out came after v0.2.0: a new signature (callers name their arguments, so
-- every call of the old one still works)
drop function if exists conductor.fail(bigint, text, timestamptz, text, boolean, boolean);

create or replace function conductor.fail(
  attempt_id   bigint,
  error        text default null,
  retry_at     timestamptz default null,
  traceback    text default null,
  unknown_kind boolean default false,
  retryable    boolean default true,
  timed_out    boolean default false
) returns conductor.task_status
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
  set lock_timeout = '500ms'
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
  if fail.timed_out then
    v_error := conductor._timed_out_error(v_task.timeout);  -- the engine's words, whatever the worker's
  end if;

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
         -- queued again: it names no worker (the attempt row keeps who ran it); a finished
         -- task keeps the last one
         claimed_by = case when v_status = 'queued' then null else t.claimed_by end,
         finished_at = case when v_status = 'queued' then null else v_now end
   where t.id = v_task.id;

  update conductor.attempts a
     set outcome = 'failed', finished_at = v_now, error = v_error, traceback = fail.traceback,
         timed_out = fail.timed_out is true
   where a.id = fail.attempt_id;

  if v_status = 'queued' then
    perform conductor._notify_queue(v_task.queue);  -- due now or later: see the map
  else
    perform conductor._notify_done(array[v_task.id]);
  end if;
  return v_status;
end
$$;

comment on function conductor.fail(bigint, text, timestamptz, text, boolean, boolean, boolean) is
$$Records that the handler of the task held by attempt_id failed: error and traceback
are stored on the attempt (every attempt's error is kept). timed_out: the attempt reached
its time limit (the worker stopped it at claimed_at + timeout, or heartbeat answered
'timed_out'); the error is then the engine's own, 'timed out after N s' (N the task's
timeout in seconds as C's %g prints it; 'timed out' for a task without one), whatever error
says, and the attempt is recorded as timed out (attempts.timed_out), which heartbeat
answers 'timed_out'. error: NULL or empty stores 'error not given'. Returns the task's new status:
'queued' when attempts remain (due at retry_at if given, else after the backoff:
backoff_base * backoff_factor ^ (attempt - 1), at most backoff_max, less up to 20 % jitter;
each from the task, else its kind (configure_kind), else 30 s, 2 and 1 h), 'failed' when
none remain or when retryable is false (a result that could not be stored: a new attempt
would redo the handler's effects), 'dead' at once when unknown_kind (the worker has no
handler for the task's kind). retry_at: NULL, or a finite time from 0001-01-02 to
9999-12-30 UTC (one in the past means now). Raises QC106 for any other retry_at,
QC201 lease lost, QC202 cancelled, QC203 no such attempt; then nothing changes.
Waits at most 500 ms for the task's row when another transaction holds it (a client's
cancel or emit_event left open), then raises 55P03 (lock_not_available): nothing changed,
the attempt still holds its task; send the same call again later. Raises QC208 when
another login registered the attempt's worker (an admin may fail any).$$;

revoke execute on function conductor.fail(bigint, text, timestamptz, text, boolean, boolean, boolean) from public;
grant execute on function conductor.fail(bigint, text, timestamptz, text, boolean, boolean, boolean) to conductor_worker, conductor_admin;

commit;
