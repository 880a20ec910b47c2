-- Revert conductor:functions/internal from pg: back to its v0.1.0 body
--
-- The v0.1.0 deploy script (functions/internal@v0.1.0.sql), with create or replace, and
-- search_path pinned to pg_catalog, pg_temp instead of '': going back to v0.1.0's
-- bodies does not reopen the pg_temp escalation (issue 14).
--
-- The clock and the private helpers the API functions share. Nothing here is
-- granted to the application roles except conductor.now(), which reads no table.
--
--   conductor.now()                 the one clock: a session setting, else now()
--   conductor._task_spec            one task to enqueue (the shape enqueue_many reads)
--   conductor._max_payload_bytes()  the payload size limit
--   conductor._backoff(...)         the delay before retry number n
--   conductor._refuse(attempt_id)   raises why an attempt no longer holds its task
--   conductor._held_task(attempt_id) the task an attempt holds, locked; else _refuse
--
-- SQLSTATEs (class QC, one per condition a caller handles; docs/errors.md):
--   QC101 invalid kind         QC201 lease lost
--   QC102 invalid payload      QC202 task cancelled
--   QC103 payload too large    QC203 not found
--   QC104 invalid queue        QC204 invalid state
--   QC105 invalid status       QC205 dedupe conflict
--   QC106 invalid argument

begin;

-- functions added after v0.1.0
drop function conductor._echo(text);
drop function conductor._check_time(timestamptz, text, text);
drop function conductor._time_range();
drop function conductor._caller_is_admin();
drop function conductor._caller();
comment on function conductor._backoff(bigint, integer, interval, double precision, interval) is null;

drop function conductor.version();

create or replace function conductor.now() returns timestamptz
  language sql stable parallel safe
as $$
  select coalesce(nullif(pg_catalog.current_setting('conductor.fake_now', true), '')::timestamptz,
                  pg_catalog.now())
$$;

comment on function conductor.now() is
  'The clock every conductor function reads: the session setting conductor.fake_now when set '
  '(tests move time with SET conductor.fake_now = ''...''), else the transaction''s now().';

-- conductor._task_spec is created by functions/internal@v0.1.0 and unchanged since.

create or replace function conductor._max_payload_bytes() returns integer
  language sql stable parallel safe
as $$
  select coalesce(nullif(pg_catalog.current_setting('conductor.max_payload_bytes', true), '')::integer,
                  1048576)
$$;

comment on function conductor._max_payload_bytes() is
  'The largest payload enqueue accepts, in bytes of its stored jsonb form: 1 MiB, '
  'or the setting conductor.max_payload_bytes (ALTER DATABASE ... SET to change it for everyone).';

-- Delay before the retry that follows failed attempt number n: base * factor^(n-1),
-- at most max, less a jitter of up to 20 % derived from the task id and n. The
-- jitter is deterministic so a test can predict it, and differs between tasks so
-- a burst of failures does not come back as a burst.
create or replace function conductor._backoff(
  task_id bigint, n integer, base interval, factor double precision, max interval
) returns interval
  language sql immutable parallel safe
as $$
  select least(coalesce(_backoff.max, interval '1 hour'),
               coalesce(_backoff.base, interval '30 seconds')
                 * pg_catalog.power(coalesce(_backoff.factor, 2), greatest(_backoff.n - 1, 0)))
         * (1 - 0.2 * (pg_catalog.hashint8(_backoff.task_id * 1000 + _backoff.n)::bigint + 2147483648)
                      / 4294967296.0)
$$;

-- Called when an update fenced on attempt_id found nothing: says why.
create or replace function conductor._refuse(attempt_id bigint) returns void
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_attempt conductor.attempts;
begin
  select * into v_attempt from conductor.attempts a where a.id = _refuse.attempt_id;
  if not found then
    raise exception 'attempt % does not exist', _refuse.attempt_id
      using errcode = 'QC203';
  end if;
  if v_attempt.outcome = 'cancelled' then
    raise exception 'task % was cancelled; attempt % no longer holds it',
      v_attempt.task_id, v_attempt.id
      using errcode = 'QC202',
            hint = 'Stop working on the task; its result will not be stored.';
  end if;
  raise exception 'attempt % no longer holds task % (attempt outcome: %)',
    v_attempt.id, v_attempt.task_id, coalesce(v_attempt.outcome, 'superseded')
    using errcode = 'QC201',
          detail = 'The lease expired and the task was taken back, or the attempt already reported.',
          hint = 'Discard the result: another attempt owns the task now.';
end
$$;

-- The fence of every call a worker makes about one claim: the task the attempt
-- still holds (running, tasks.attempt_id = the attempt), locked; else raises.
-- status::text keeps the planner on the primary key, off tasks_running (see
-- conductor._complete).
create or replace function conductor._held_task(attempt_id bigint) returns conductor.tasks
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_task conductor.tasks;
begin
  select t.* into v_task
    from conductor.attempts a
    join conductor.tasks t on t.id = a.task_id and t.attempt_id = a.id and t.status::text = 'running'
   where a.id = _held_task.attempt_id
     for no key update of t;
  if not found then
    perform conductor._refuse(_held_task.attempt_id);
  end if;
  return v_task;
end
$$;

revoke execute on function conductor._held_task(bigint) from public;
revoke execute on function conductor._backoff(bigint, integer, interval, double precision, interval) from public;
revoke execute on function conductor._refuse(bigint) from public;
revoke execute on function conductor._max_payload_bytes() from public;
revoke execute on function conductor.now() from public;
grant execute on function conductor.now() to conductor_client, conductor_worker, conductor_admin;

-- v0.1.0 had no comment on these helpers (create or replace keeps the reworked one's)
comment on function conductor._held_task(bigint) is null;
comment on function conductor._refuse(bigint) is null;

commit;
