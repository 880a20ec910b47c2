-- Revert conductor:functions/internal from pg: back to its v0.2.0 bodies
--
-- The clock and the private helpers the API functions share. Nothing here is
-- granted to the application roles except conductor.now() and
-- conductor.version(), which read only conductor.settings (readable by all).
--
--   conductor.now()                 the one clock: transaction time, or the test clock
--   conductor.version()             the schema's release, for drivers to check
--   conductor._task_spec            one task to enqueue (the shape enqueue_many reads)
--   conductor._max_payload_bytes()  the payload size limit (conductor.settings)
--   conductor._echo(value)          a bad value as an error message shows it: quoted, cut
--   conductor._time_range()         the times the engine accepts (finite, years 1-9999)
--   conductor._check_time(value, what, detail) raises QC106 unless value is in _time_range()
--   conductor._caller()             the role that called the API (not the definer)
--   conductor._caller_is_admin()    whether that role is a member of conductor_admin
--   conductor._backoff(...)         the delay before retry number n; never raises
--   conductor._refuse(attempt_id)   raises why an attempt no longer holds its task
--   conductor._held_task(attempt_id) the task an attempt holds, locked; else _refuse
--
-- SQLSTATEs (class QC, one per condition a caller handles; docs/errors.md):
--   QC101 invalid kind         QC201 lease lost
--   QC102 invalid payload      QC202 task cancelled
--   QC103 payload too large    QC203 not found
--   QC104 invalid queue        QC204 invalid state
--   QC105 invalid status       QC205 dedupe conflict
--   QC106 invalid argument     QC206 already exists
--                              QC207 schedule held by an operator
--
-- One rule, one place: the rules of a task (kind, payload, queue, run_at, retry
-- policy, keys) are conductor._spec_problem (functions/enqueue), which enqueue,
-- enqueue_many, configure_kind and the schedules all apply; the time rule is
-- _time_range() here. A message echoes a caller's value through _echo() only.

begin;
set local role conductor_owner;

drop function conductor._task_status(text);
drop function conductor.finished_statuses();
drop function conductor.unfinished_statuses();
drop function conductor._check_attempt_owners(bigint[]);
drop function conductor._check_worker_owner(text);
drop function conductor._check_owner(text, text, text);
-- v0.2.0's _echo, below, no longer calls it (a SQL function's body records no dependency)
drop function conductor._hidden_char_class();

-- plpgsql, not SQL: a SQL function that pins its search_path is neither inlined
-- nor its plan kept, and every API call reads the clock. The settings row is
-- read only when the session asks for a fake time, so the real clock costs one
-- setting lookup.
create or replace function conductor.now() returns timestamptz
  language plpgsql stable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_fake text := pg_catalog.current_setting('conductor.fake_now', true);
begin
  if v_fake is null or v_fake = ''
     -- by the primary key: callers that disable seqscans must not plan (and JIT) a 1e10 scan
     or not (select s.fake_clock from conductor.settings s where s.one) then
    return pg_catalog.now();
  end if;
  return v_fake::timestamptz;
end
$$;

comment on function conductor.now() is
  'The clock every conductor function reads: the transaction''s now(). Only when an admin has '
  'switched on conductor.settings.fake_clock (test databases) does the session setting '
  'conductor.fake_now move it; no caller can move the clock of a production database.';

create or replace function conductor.version() returns text
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$ select '0.2.0' $$;

comment on function conductor.version() is
  'The release of the deployed schema (semantic version). A driver compares it with the '
  'release it was built for and refuses to start against another, naming the upgrade command.';

-- conductor._task_spec is created by functions/internal@v0.1.0 and unchanged since.

create or replace function conductor._max_payload_bytes() returns integer
  language plpgsql stable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
begin
  return (select s.max_payload_bytes from conductor.settings s where s.one);
end
$$;

comment on function conductor._max_payload_bytes() is
  'The largest payload enqueue accepts, in bytes of its stored jsonb form: '
  'conductor.settings.max_payload_bytes (1 MiB unless an admin changed it).';

-- A caller's value as an error message shows it: quoted, at most its first 100
-- characters, then how long it was. A message never echoes a megabyte back.
create or replace function conductor._echo(value text) returns text
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select case
           when _echo.value is null then 'NULL'
           when pg_catalog.length(_echo.value) <= 100 then pg_catalog.quote_literal(_echo.value)
           else pg_catalog.quote_literal(pg_catalog."left"(_echo.value, 100))
                || pg_catalog.format('…(%s bytes)', pg_catalog.octet_length(_echo.value))
         end
$$;

comment on function conductor._echo(text) is
  'A caller''s value as an error message shows it: NULL, or quoted, cut to its first 100 '
  'characters followed by …(N bytes) when longer. Every message of the engine echoes through it.';

-- The times the engine stores: finite and inside the years 1-9999 with a day to spare
-- at each end, so that the time in any zone is a date every driver can read (Python's
-- datetime stops at 9999; an infinite run_at made stats() raise 22008).
create or replace function conductor._time_range() returns tstzrange
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select pg_catalog.tstzrange('0001-01-02 00:00:00+00', '9999-12-30 00:00:00+00', '[]')
$$;

comment on function conductor._time_range() is
  'The times the engine accepts (run_at, retry_at): finite, from 0001-01-02 to 9999-12-30 UTC.';

create or replace function conductor._check_time(value timestamptz, what text, detail text default null)
  returns void
  language plpgsql stable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_message text;
begin
  if _check_time.value is null or _check_time.value <@ conductor._time_range() then
    return;
  end if;
  v_message := pg_catalog.format('invalid %s %s: a time is finite, from 0001-01-02 to 9999-12-30 UTC',
                                 _check_time.what, _check_time.value);
  if _check_time.detail is null then
    raise exception using errcode = 'QC106', message = v_message,
      hint = 'Pass NULL for now; a time in the past also means now.';
  end if;
  raise exception using errcode = 'QC106', message = v_message, detail = _check_time.detail,
    hint = 'Pass NULL for now; a time in the past also means now.';
end
$$;

comment on function conductor._check_time(timestamptz, text, text) is
  'Raises QC106 naming what and the value (detail: where it came from) unless value is NULL or '
  'within conductor._time_range().';

-- The role that called the API. Inside a SECURITY DEFINER function current_user is
-- the owner, so the caller is read from PostgreSQL's own role setting: the role
-- the session SET ROLE to, else the login (session_user). That setting is not
-- one a caller may set freely: SET ROLE is refused unless the login is a member
-- of the role, so a worker login cannot pass for an admin; a superuser's session
-- that SET ROLE to a worker counts as that worker (how the tests attack).
create or replace function conductor._caller() returns text
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select coalesce(nullif(pg_catalog.current_setting('role'), 'none'), session_user::text)
$$;

comment on function conductor._caller() is
  'The role that called the API function: the role the session SET ROLE to, else the login. '
  'PostgreSQL lets a session SET ROLE only to roles its login is a member of.';

create or replace function conductor._caller_is_admin() returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select pg_catalog.pg_has_role(conductor._caller(), 'conductor_admin', 'member')
$$;

comment on function conductor._caller_is_admin() is
  'Whether the calling role (conductor._caller()) is a member of conductor_admin; superusers are.';

-- Delay before the retry that follows failed attempt number n: base * factor^(n-1),
-- at most max, less a jitter of up to 20 % derived from the task id and n. The
-- jitter is deterministic so a test can predict it, and differs between tasks so
-- a burst of failures does not come back as a burst.
--
-- It never raises: it runs inside fail(), where an error would leave a task
-- that can never fail again. A policy stored before enqueue and configure_kind
-- checked it (v0.1.0 took a factor NaN or a base of a million years) is clamped
-- to what they accept now (factor 1-10, base and max 0-30 days), and the power
-- is taken only while it stays under max (in logarithms), so it cannot overflow.
create or replace function conductor._backoff(
  task_id bigint, n integer, base interval, factor double precision, max interval
) returns interval
  language plpgsql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_base interval := least(greatest(coalesce(_backoff.base, interval '30 seconds'), interval '0'), interval '30 days');
  v_max interval := least(greatest(coalesce(_backoff.max, interval '1 hour'), interval '0'), interval '30 days');
  v_factor double precision := coalesce(_backoff.factor, 2);
  v_exponent bigint := greatest(coalesce(_backoff.n, 1)::bigint - 1, 0);
  v_delay interval;
begin
  if v_factor = 'NaN' or v_factor < 1 then
    v_factor := 1;
  elsif v_factor > 10 then
    v_factor := 10;
  end if;
  if v_base = interval '0' or v_max = interval '0' then
    v_delay := interval '0';
  elsif v_exponent * pg_catalog.ln(v_factor)
        >= pg_catalog.ln(pg_catalog.date_part('epoch', v_max) / pg_catalog.date_part('epoch', v_base)) then
    v_delay := v_max;
  else
    v_delay := least(v_max, v_base * pg_catalog.power(v_factor, v_exponent));
  end if;
  return v_delay
         * (1 - 0.2 * (pg_catalog.hashint8(((_backoff.task_id::numeric * 1000 + coalesce(_backoff.n, 1))
                                             % 9223372036854775807)::bigint)::bigint + 2147483648)
                      / 4294967296.0);
end
$$;

comment on function conductor._backoff(bigint, integer, interval, double precision, interval) is
  'The delay before the retry after failed attempt n: base * factor^(n-1), at most max, less a '
  'deterministic jitter of up to 20 %; NULL takes 30 s, 2 and 1 h. Clamps a stored policy to '
  'factor 1-10, base and max 0-30 days. Never raises.';

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

comment on function conductor._refuse(bigint) is
$$Always raises, saying why attempt_id no longer holds its task: QC203 no such attempt, QC202
its task was cancelled, else QC201 lease lost (taken back, or the attempt already reported).
Called when an update fenced on the attempt found nothing: _held_task, complete, release.
Reads only; no locks.$$;

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

comment on function conductor._held_task(bigint) is
$$The task attempt_id still holds (running, tasks.attempt_id = the attempt), its row locked
for no key update to the end of the transaction; else raises through _refuse (QC201, QC202,
QC203). The fence of fail, save_step, spawn and suspend.$$;

revoke execute on function conductor._held_task(bigint) from public;
revoke execute on function conductor._backoff(bigint, integer, interval, double precision, interval) from public;
revoke execute on function conductor._echo(text) from public;
revoke execute on function conductor._time_range() from public;
revoke execute on function conductor._check_time(timestamptz, text, text) from public;
revoke execute on function conductor._caller() from public;
revoke execute on function conductor._caller_is_admin() from public;
revoke execute on function conductor._refuse(bigint) from public;
revoke execute on function conductor._max_payload_bytes() from public;
revoke execute on function conductor.now() from public;
grant execute on function conductor.now() to conductor_client, conductor_worker, conductor_admin;
revoke execute on function conductor.version() from public;
grant execute on function conductor.version() to conductor_client, conductor_worker, conductor_admin;

commit;
