-- Deploy conductor:functions/internal to pg
-- (reworked after v0.2.0; the released body is sql/released/functions/internal@v0.2.0.sql)
--
-- The clock and the private helpers the API functions share. Nothing here is
-- granted to the application roles except conductor.now() and
-- conductor.version(), which read only conductor.settings (readable by all), and the
-- status lists, which read nothing.
--
--   conductor.now()                 the one clock: transaction time, or the test clock
--   conductor.version()             the schema's release, for drivers to check
--   conductor.unfinished_statuses() the statuses of a task not yet finished (queued,
--   conductor.finished_statuses()   running, waiting) and the terminal ones: the one
--                                   list of each, read by every function and driver
--   conductor._task_status(word)    a status word as conductor.task_status; QC105 naming it
--                                   and the statuses when it is none (NULL stays NULL)
--   conductor._task_spec            one task to enqueue (the shape enqueue_many reads)
--   conductor._max_payload_bytes()  the payload size limit (conductor.settings)
--   conductor._hidden_char_class()  the characters a name may not hold (control, format)
--   conductor._echo(value)          a bad value as an error message shows it: quoted, cut,
--                                   hidden characters escaped
--   conductor._time_range()         the times the engine accepts (finite, years 1-9999)
--   conductor._check_time(value, what, detail) raises QC106 unless value is in _time_range()
--   conductor._caller()             the role that called the API (not the definer)
--   conductor._caller_is_admin()    whether that role is a member of conductor_admin
--   conductor._check_owner(what, name, owner) raises QC208 unless the caller may
--                                   change a row another login declared
--   conductor._check_worker_owner(worker_id)   ... act as that worker
--   conductor._check_attempt_owners(attempt_ids) ... report on those attempts
--   conductor._backoff(...)         the delay before retry number n; never raises
--   conductor._refuse(attempt_id)   raises why an attempt no longer holds its task
--   conductor._held_task(attempt_id) the task an attempt holds, locked; else _refuse;
--                                   QC208 for an attempt of another login's worker
--
-- SQLSTATEs (class QC, one per condition a caller handles; docs/errors.md):
--   QC101 invalid kind         QC201 lease lost
--   QC102 invalid payload      QC202 task cancelled
--   QC103 payload too large    QC203 not found
--   QC104 invalid queue        QC204 invalid state
--   QC105 invalid status       QC205 dedupe conflict
--   QC106 invalid argument     QC206 already exists
--                              QC207 schedule held by an operator
--                              QC208 declared by another login
--
-- One rule, one place: the rules of a task (kind, payload, queue, run_at, retry
-- policy, keys) are conductor._spec_problem (functions/enqueue), which enqueue,
-- enqueue_many, configure_kind and the schedules all apply; the time rule is
-- _time_range() here. A message echoes a caller's value through _echo() only.

begin;
set local role conductor_owner;

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
  -- no fake time asked for, the common case: a condition without a query, which
  -- PL/pgSQL evaluates without starting an executor (2 us a call, not 10)
  if v_fake is null or v_fake = '' then
    return pg_catalog.now();
  end if;
  -- by the primary key: callers that disable seqscans must not plan (and JIT) a 1e10 scan
  if not (select s.fake_clock from conductor.settings s where s.one) then
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
as $$ select '0.3.0' $$;

comment on function conductor.version() is
  'The release of the deployed schema (semantic version). A driver compares it with the '
  'release it was built for and refuses to start against another, naming the upgrade command.';

-- conductor._task_spec is created by functions/internal@v0.1.0 and unchanged since.

-- The one list of the statuses a task has until it finishes, and of the
-- terminal ones (conductor.task_status, schema/conductor). IMMUTABLE without
-- arguments, so the planner folds a call to the constant array: a query
-- testing status = any (conductor.unfinished_statuses()) still matches a
-- partial index whose predicate names the same statuses. Those predicates
-- (and tasks' finished_at check) cannot call a function; a pgTAP test
-- (sql/tests/schema/status_lists_agree.sql) holds them to these lists, and
-- the two lists to the enum. plpgsql, not SQL: a SQL function that pins its
-- search_path runs as a fresh query on each call (0.1-0.4 ms), where a
-- trigger's WHEN or a custom plan folds it.
create or replace function conductor.unfinished_statuses() returns conductor.task_status[]
  language plpgsql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
begin
  return array['queued', 'running', 'waiting']::conductor.task_status[];
end
$$;

comment on function conductor.unfinished_statuses() is
$$The statuses of a task that has not finished: queued, running, waiting, in lifecycle order.
A task in one of them has no finished_at; a dedupe_key is unique among them. The one list
every function and driver reads (conductor.finished_statuses() is the rest of the enum).$$;

create or replace function conductor.finished_statuses() returns conductor.task_status[]
  language plpgsql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
begin
  return array['succeeded', 'failed', 'cancelled', 'timed_out', 'expired', 'dead']::conductor.task_status[];
end
$$;

comment on function conductor.finished_statuses() is
$$The terminal statuses of a task, every conductor.task_status not in
conductor.unfinished_statuses(), in the enum's order: succeeded, failed, cancelled,
timed_out, expired (not started by its deadline, schema/expiry), dead. A finished task never changes status again except through retry().$$;

create or replace function conductor._task_status(word text) returns conductor.task_status
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if _task_status.word is null then
    return null;
  end if;
  if not exists (select from pg_catalog.unnest(pg_catalog.enum_range(null::conductor.task_status)) s
                  where s::text = _task_status.word) then
    raise exception 'unknown status %: one of %', pg_catalog.quote_literal(_task_status.word),
      pg_catalog.array_to_string(pg_catalog.enum_range(null::conductor.task_status), ', ')
      using errcode = 'QC105';
  end if;
  return _task_status.word::conductor.task_status;
end
$$;

comment on function conductor._task_status(text) is
$$The status word as a conductor.task_status (NULL for NULL); raises QC105 naming the word and
every status when it is none. The one reading of a status a caller typed: list_tasks,
search_tasks and the bulk actions' filter.$$;

revoke execute on function conductor._task_status(text) from public;

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
create or replace function conductor._hidden_char_class() returns text
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select '\u0001-\u001f\u007f-\u009f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e'
         '\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd'
         '\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f'::text
$$;

comment on function conductor._hidden_char_class() is
$$The body of a regular expression bracket ([...]) matching the characters a name may not
hold because they are not seen or change how the text around them is shown: Unicode's
control (Cc: C0, DEL, C1), format (Cf: bidi controls such as U+202E, zero widths, U+FEFF,
tags) and line and paragraph separator (Zl, Zp) characters, as of Unicode 15. The kind rule
(conductor._spec_problem) refuses them; _echo shows them escaped.$$;


-- A refused value is shown with what cannot be seen escaped: a kind holding U+202E
-- would otherwise reverse the rest of the message wherever it is shown (psql, the
-- server log, a worker's log, the dashboard), and a newline would split it.
create or replace function conductor._echo(value text) returns text
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  with cut as (
    select case when pg_catalog.length(_echo.value) <= 100 then _echo.value
                else pg_catalog."left"(_echo.value, 100) end as v,
           '[' || conductor._hidden_char_class() || ']' as hidden
  ), shown as (
    select case
             when cut.v !~ cut.hidden then cut.v
             else (select pg_catalog.string_agg(
                            case when c.ch !~ cut.hidden then c.ch
                                 when pg_catalog.ascii(c.ch) <= 65535
                                 then '\u' || pg_catalog.lpad(pg_catalog.to_hex(pg_catalog.ascii(c.ch)), 4, '0')
                                 else '\U' || pg_catalog.lpad(pg_catalog.to_hex(pg_catalog.ascii(c.ch)), 8, '0') end,
                            '' order by c.n)
                     from pg_catalog.regexp_split_to_table(cut.v, '') with ordinality as c(ch, n))
           end as v
      from cut
  )
  -- quoted as quote_literal does, but plainly where escapes were written (quote_literal
  -- would double their backslashes and write E'...')
  select case
           when _echo.value is null then 'NULL'
           else case when shown.v = cut.v then pg_catalog.quote_literal(shown.v)
                     else '''' || pg_catalog.replace(shown.v, '''', '''''') || '''' end
                || case when pg_catalog.length(_echo.value) <= 100 then ''
                        else pg_catalog.format('…(%s bytes)', pg_catalog.octet_length(_echo.value)) end
         end
    from cut, shown
$$;

comment on function conductor._echo(text) is
  'A caller''s value as an error message shows it: NULL, or quoted, cut to its first 100 '
  'characters followed by …(N bytes) when longer, each character of _hidden_char_class() '
  'written as \uXXXX (\UXXXXXXXX above U+FFFF). Every message of the engine echoes through it.';

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
-- PL/pgSQL, not SQL: a SQL function that pins its search_path is neither
-- inlined nor its plan kept, so each transaction parsed and planned it again at
-- every place it is called (15-20 us each); PL/pgSQL keeps it compiled for the
-- session and evaluates the expression without an executor.
create or replace function conductor._caller() returns text
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  return coalesce(nullif(pg_catalog.current_setting('role'), 'none'), session_user::text);
end
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

-- Ownership, the one rule: every row that configures or identifies something
-- (a kind's policy, a rate limit, a worker registration, a schedule, a log)
-- records the login that declared it (conductor._caller()); another login may
-- not change it, only an admin may. A row stored before v0.3.0 has no owner
-- (NULL) and is claimed by the first login that declares it again: the code
-- that declared it does so at its next start.
create or replace function conductor._check_owner(what text, name text, owner text) returns void
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if _check_owner.owner is null or _check_owner.owner = conductor._caller() or conductor._caller_is_admin() then
    return;
  end if;
  raise exception '% % was declared by login %: only that login or an admin may change it',
    _check_owner.what, conductor._echo(_check_owner.name), conductor._echo(_check_owner.owner)
    using errcode = 'QC208',
          detail = pg_catalog.format('The caller is %s.', conductor._echo(conductor._caller())),
          hint = 'Declare it under a name of this login''s own, or have an admin (conductor_admin) change it.';
end
$$;

comment on function conductor._check_owner(text, text, text) is
$$Returns nothing when the caller (conductor._caller()) may change the row named name of
kind what (a kind, a rate limit, a worker, a schedule, ...) that owner declared: owner is
NULL (a row from before v0.3.0: the caller claims it), the caller, or the caller is a member
of conductor_admin. Raises QC208 naming what, name and owner otherwise. Locks nothing.$$;

-- A worker id is its registration's login's (conductor.workers.owner): the calls a worker
-- makes under its id (heartbeat, sleep, wake) and about its attempts (complete, fail,
-- ...; attempt ids are readable by every role) ask the caller to be that login.
create or replace function conductor._check_worker_owner(worker_id text) returns void
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
  set enable_seqscan = off
  set jit = off
as $$
declare
  v_owner text;
begin
  select w.owner into v_owner from conductor.workers w where w.id = _check_worker_owner.worker_id;
  perform conductor._check_owner('worker', _check_worker_owner.worker_id, v_owner);
end
$$;

comment on function conductor._check_worker_owner(text) is
$$Returns nothing when the caller may act as worker worker_id: no workers row, or its owner
passes conductor._check_owner (the caller, NULL, or the caller is an admin); raises QC208
naming the worker and its login otherwise. Reads the worker's row; locks nothing. Called by
heartbeat, sleep and wake.$$;

-- On the hot path (complete, complete_many): planned as _complete is, primary-key
-- probes whatever the tables' size was when the plan was made.
create or replace function conductor._check_attempt_owners(attempt_ids bigint[]) returns void
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set enable_seqscan = off
  set jit = off
  set enable_hashjoin = off
  set enable_mergejoin = off
as $$
declare
  v_caller text := conductor._caller();  -- once: the role setting is read per call
  v_worker text;
  v_owner text;
begin
  -- the attempts' workers (a batch has one), then their owners
  select w.id, w.owner into v_worker, v_owner
    from conductor.workers w
   where w.id = any (array(select distinct a.worker_id from conductor.attempts a
                            where a.id = any (_check_attempt_owners.attempt_ids)))
     and w.owner is not null
     and w.owner <> v_caller
   limit 1;
  if found then
    perform conductor._check_owner('worker', v_worker, v_owner);
  end if;
end
$$;

comment on function conductor._check_attempt_owners(bigint[]) is
$$Returns nothing when the caller may report on every attempt of attempt_ids: each one's
worker has no workers row, or one whose owner passes conductor._check_owner; raises QC208
naming the first other login's worker otherwise (an admin may report on any). Reads the
attempts and their workers' rows; locks nothing. Called by complete and complete_many.$$;

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
-- conductor._complete). The attempt's task id is a subquery, not a join: a plan
-- made on statistics that called both tables empty put a whole scan of
-- tasks_pkey outside the join (conductor._complete's map).
create or replace function conductor._held_task(attempt_id bigint) returns conductor.tasks
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_task conductor.tasks;
begin
  select t.* into v_task
    from conductor.tasks t
   where t.id = (select a.task_id from conductor.attempts a where a.id = _held_task.attempt_id)
     and t.attempt_id = _held_task.attempt_id
     and t.status::text = 'running'
     for no key update of t;
  if not found then
    perform conductor._refuse(_held_task.attempt_id);
  end if;
  -- attempt ids are readable by every role: only the login of the worker that holds the
  -- attempt (its registration's owner) may act on it
  perform conductor._check_worker_owner(v_task.claimed_by);
  return v_task;
end
$$;

comment on function conductor._held_task(bigint) is
$$The task attempt_id still holds (running, tasks.attempt_id = the attempt), its row locked
for no key update to the end of the transaction; else raises through _refuse (QC201, QC202,
QC203). Raises QC208 when the attempt's worker was registered by another login (its
workers row's owner; an admin may act on any). The fence of fail, save_step, spawn and
suspend.$$;

revoke execute on function conductor._held_task(bigint) from public;
revoke execute on function conductor._backoff(bigint, integer, interval, double precision, interval) from public;
revoke execute on function conductor._echo(text) from public;
revoke execute on function conductor._hidden_char_class() from public;
revoke execute on function conductor._time_range() from public;
revoke execute on function conductor._check_time(timestamptz, text, text) from public;
revoke execute on function conductor._caller() from public;
revoke execute on function conductor._caller_is_admin() from public;
revoke execute on function conductor._check_owner(text, text, text) from public;
revoke execute on function conductor._check_worker_owner(text) from public;
revoke execute on function conductor._check_attempt_owners(bigint[]) from public;
revoke execute on function conductor._refuse(bigint) from public;
revoke execute on function conductor._max_payload_bytes() from public;
revoke execute on function conductor.now() from public;
grant execute on function conductor.now() to conductor_client, conductor_worker, conductor_admin;
revoke execute on function conductor.version() from public;
grant execute on function conductor.version() to conductor_client, conductor_worker, conductor_admin;
revoke execute on function conductor.unfinished_statuses() from public;
grant execute on function conductor.unfinished_statuses() to conductor_client, conductor_worker, conductor_admin;
revoke execute on function conductor.finished_statuses() from public;
grant execute on function conductor.finished_statuses() to conductor_client, conductor_worker, conductor_admin;

commit;
