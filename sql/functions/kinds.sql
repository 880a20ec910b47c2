-- Deploy conductor:functions/kinds to pg
-- (reworked after v0.2.0; the released body is sql/released/functions/kinds@v0.2.0.sql)
--
-- conductor.configure_kind(kind, ...): a kind's defaults and policy, so that a
-- task enqueued from psql, a trigger or a worker in another language gets what
-- the Python registry would give it. One row of conductor.kinds per kind:
--   queue, priority, concurrency_key, timeout, max_attempts, max_recoveries,
--   concurrency_limit (for the kind's keyed tasks, whoever gives the key)
--   expires_in (issue 30: how long a task may wait after it is due for its first start)
--       read by enqueue, enqueue_many, spawn and tick (conductor._enqueue) for
--       a task that does not give its own
--   backoff_base, backoff_factor, backoff_max
--       read by fail at each failure of a task that does not set its own
--   retain_succeeded, retain_failed
--       read by apply_retention (functions/retention) for a run whose root is
--       of this kind; NULL: the settings' (conductor.settings.retain_*)
--   owner
--       the login (conductor._caller()) that last changed the row (issue 25)
-- A worker calls it at start for the kinds it serves. Each call replaces the
-- whole row: a NULL argument is the engine's default, not "keep".
-- The values are checked by the rules of a task (conductor._spec_problem,
-- the same SQLSTATEs as enqueue): QC101 kind, QC104 queue (when given), QC106
-- the rest (a negative retention among them).
--
-- Ownership (the one rule, conductor._check_owner): a kind's row is its
-- owner's. Another login's call that would change it raises QC208, an admin's
-- changes it and makes it the admin's (the code that declared it then logs
-- QC208 at its next start and keeps the admin's policy); a call equal to the
-- stored row is no change and succeeds for anyone, claiming a row stored
-- before v0.3.0 (owner NULL). A login without conductor_admin gives no
-- retention under conductor.settings.min_retention (QC106) when it creates or
-- changes a row; apply_retention applies that floor again to rows no admin
-- wrote (functions/retention).
--
-- Locks: the kind's row (FOR UPDATE, or the insert of a new one). Many callers
-- at once: two first declarations of one kind meet on its primary key, and the
-- second compares with what the first stored.

begin;
set local role conductor_owner;

-- expires_in is new after v0.2.0 (the last parameter, issue 30): v0.2.0's
-- twelve-parameter configure_kind goes, or a call naming only those twelve would
-- match both.
drop function if exists conductor.configure_kind(text, integer, integer, interval, double precision, interval, text,
                                                 integer, text, interval, interval, interval);

-- queue, priority, concurrency_key, timeout, retain_succeeded and retain_failed are
-- new: v0.1.0's six-parameter configure_kind goes, or a call naming only those six
-- would match both. concurrency_limit is new after v0.2.0 (issue 30, the last
-- parameter): v0.2.0's twelve-parameter configure_kind goes for the same reason.
drop function if exists conductor.configure_kind(text, integer, integer, interval, double precision, interval, text,
                                                 integer, text, interval, interval, interval);

create or replace function conductor.configure_kind(
  kind            text,
  max_attempts    integer default null,
  max_recoveries  integer default null,
  backoff_base    interval default null,
  backoff_factor  double precision default null,
  backoff_max     interval default null,
  queue           text default null,
  priority        integer default null,
  concurrency_key text default null,
  timeout         interval default null,
  retain_succeeded interval default null,
  retain_failed   interval default null,
  concurrency_limit integer default null,
  expires_in      interval default null
) returns void
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now    timestamptz := conductor.now();
  v_caller text := conductor._caller();
  -- checked by the rules of a task (conductor._spec_problem); a queue not given is valid,
  -- and so is a limit without the kind's own key (the key may come with each task: a
  -- stand-in key, which the limit's messages do not show)
  v_spec conductor._task_spec := row(
    configure_kind.kind, '{}', coalesce(configure_kind.queue, 'default'), configure_kind.priority, null,
    configure_kind.max_attempts, null,
    coalesce(configure_kind.concurrency_key, case when configure_kind.concurrency_limit is not null then '' end),
    null, configure_kind.max_recoveries,
    configure_kind.backoff_base, configure_kind.backoff_factor, configure_kind.backoff_max,
    configure_kind.timeout, null, configure_kind.concurrency_limit, null, configure_kind.expires_in, null)::conductor._task_spec;
  v_problem text := conductor._spec_problem(v_spec);
  v_old    conductor.kinds;
  v_floor  interval;
  v_exists boolean;
begin
  if v_problem is not null then
    perform conductor._raise_spec_problem(v_problem, v_spec);
  end if;
  if configure_kind.retain_succeeded < interval '0' or configure_kind.retain_failed < interval '0' then
    raise exception 'invalid retention for kind %: retain_succeeded % and retain_failed % must be 0 or more',
      conductor._echo(configure_kind.kind), coalesce(configure_kind.retain_succeeded::text, 'NULL'),
      coalesce(configure_kind.retain_failed::text, 'NULL')
      using errcode = 'QC106', hint = 'Pass an interval such as ''7 days'', or NULL for the settings'' retention.';
  end if;

  -- at most twice round: a second time when another caller declared the kind since the select
  loop
    select k.* into v_old from conductor.kinds k where k.kind = configure_kind.kind for update;
    v_exists := found;
    if v_exists then
      if (v_old.max_attempts, v_old.max_recoveries, v_old.backoff_base, v_old.backoff_factor, v_old.backoff_max,
          v_old.queue, v_old.priority, v_old.concurrency_key, v_old.timeout, v_old.retain_succeeded,
          v_old.retain_failed, v_old.concurrency_limit, v_old.expires_in)
         is not distinct from
         (configure_kind.max_attempts, configure_kind.max_recoveries, configure_kind.backoff_base,
          configure_kind.backoff_factor, configure_kind.backoff_max, configure_kind.queue, configure_kind.priority,
          configure_kind.concurrency_key, configure_kind.timeout, configure_kind.retain_succeeded,
          configure_kind.retain_failed, configure_kind.concurrency_limit, configure_kind.expires_in) then
        -- a worker restarting writes what is there: no change, no new row version;
        -- a row from before v0.3.0 becomes the caller's
        if v_old.owner is null then
          update conductor.kinds k set owner = v_caller where k.kind = configure_kind.kind;
        end if;
        return;
      end if;
      perform conductor._check_owner('kind', configure_kind.kind, v_old.owner);
    end if;

    -- a new row or a change: a login without conductor_admin keeps at least the floor
    select s.min_retention into v_floor from conductor.settings s where s.one;
    if (configure_kind.retain_succeeded < v_floor or configure_kind.retain_failed < v_floor)
       and not conductor._caller_is_admin() then
      raise exception 'invalid retention for kind %: retain_succeeded % and retain_failed % must be at least % (conductor.settings.min_retention) for a login without conductor_admin',
        conductor._echo(configure_kind.kind), coalesce(configure_kind.retain_succeeded::text, 'NULL'),
        coalesce(configure_kind.retain_failed::text, 'NULL'), v_floor
        using errcode = 'QC106',
              hint = 'Pass a longer retention, or NULL for the settings''; an admin may set less, or lower min_retention.';
    end if;

    if v_exists then
      update conductor.kinds k
         set max_attempts = configure_kind.max_attempts, max_recoveries = configure_kind.max_recoveries,
             backoff_base = configure_kind.backoff_base, backoff_factor = configure_kind.backoff_factor,
             backoff_max = configure_kind.backoff_max, queue = configure_kind.queue,
             priority = configure_kind.priority, concurrency_key = configure_kind.concurrency_key,
             timeout = configure_kind.timeout, retain_succeeded = configure_kind.retain_succeeded,
             retain_failed = configure_kind.retain_failed, concurrency_limit = configure_kind.concurrency_limit,
             expires_in = configure_kind.expires_in,
             updated_at = v_now, owner = v_caller
       where k.kind = configure_kind.kind;
      return;
    end if;

    insert into conductor.kinds as k
           (kind, max_attempts, max_recoveries, backoff_base, backoff_factor, backoff_max,
            queue, priority, concurrency_key, timeout, retain_succeeded, retain_failed, concurrency_limit,
            expires_in, updated_at, owner)
    values (configure_kind.kind, configure_kind.max_attempts, configure_kind.max_recoveries,
            configure_kind.backoff_base, configure_kind.backoff_factor, configure_kind.backoff_max,
            configure_kind.queue, configure_kind.priority, configure_kind.concurrency_key,
            configure_kind.timeout, configure_kind.retain_succeeded, configure_kind.retain_failed,
            configure_kind.concurrency_limit, configure_kind.expires_in, v_now, v_caller)
    on conflict on constraint kinds_pkey do nothing;
    if found then
      return;
    end if;
    -- another caller declared it since the select (workers starting together): the
    -- insert waited for its commit, and the next select sees its row: the call is
    -- judged against that row, as if it had been there
  end loop;
end
$$;

comment on function conductor.configure_kind(text, integer, integer, interval, double precision, interval, text, integer, text, interval, interval, interval, integer, interval) is
$$Sets the defaults and policy of kind, replacing the whole previous row (a NULL argument
is the engine default, not "unchanged"). For tasks enqueued afterwards (enqueue,
enqueue_many, spawn, tick) that do not give their own: queue ('default'), priority (0),
concurrency_key (none), timeout (how long one attempt may run; none), expires_in (how long
a task may wait after it is due for its first start, then it ends 'expired'; none), max_attempts (1),
max_recoveries (3: the third lost worker ends the task), concurrency_limit (for a task with a
concurrency_key, the kind's or its own: how many of its key may run at once, 1-10000; 1).
At each failure of a task that does not set its own: backoff_base
(30 s), backoff_factor (2), backoff_max (1 h). The rules are enqueue's: a queue name of
1-100 letters, digits and _ . : / -; max_attempts >= 1, max_recoveries >= 0, backoff_base
and backoff_max 0-30 days (base not over max), backoff_factor 1-10, timeout and expires_in
more than 0 and at most 30 days, concurrency_key at most 1000 bytes. retain_succeeded and retain_failed
(0 or more): how long apply_retention keeps a finished run whose root is of this kind and
succeeded, or did not (failed, dead, timed_out, expired, cancelled); NULL: conductor.settings'
retain_succeeded (7 days) and retain_failed (30 days); a login without conductor_admin gives
none under conductor.settings.min_retention (1 day). The row records the caller
(conductor._caller()) as its owner: a call that would change a row another login owns
raises QC208 unless the caller is a member of conductor_admin, whose change makes the row
its own; a call equal to the stored row changes nothing and succeeds for any caller (a
worker restarting), claiming a row stored before v0.3.0 (owner NULL). Raises QC101 for a
kind enqueue would refuse, QC104 for an invalid queue, QC106 for any other invalid value
or a retention under the floor; then nothing is stored. Locks the kind's row. Idempotent;
many callers at once.$$;

revoke execute on function conductor.configure_kind(text, integer, integer, interval, double precision, interval, text, integer, text, interval, interval, interval, integer, interval) from public;
grant execute on function conductor.configure_kind(text, integer, integer, interval, double precision, interval, text, integer, text, interval, interval, interval, integer, interval)
  to conductor_worker, conductor_admin;

commit;
