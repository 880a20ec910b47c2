-- Deploy conductor:functions/controls to pg
-- (reworked after v0.2.0; the released body is sql/released/functions/controls@v0.2.0.sql)
--
-- What an operator turns on and off for a whole queue or kind, across the fleet
-- (issue 17). The tables are schema/operations'; claim (functions/claim) obeys
-- them, next_due (functions/reap) wakes idle workers for them, stats() shows
-- them (functions/stats).
--
--   conductor.pause_queue(queue)     -> boolean   claim takes nothing from the
--                                                  queue; its tasks stay queued
--   conductor.resume_queue(queue)    -> boolean   claimable again; sleeping
--                                                  workers of the queue are woken
--   conductor.set_rate_limit(queue | kind, per_second, burst) -> void
--        at most per_second task starts per second across every worker, with
--        bursts of up to burst: a token bucket (conductor.rate_limits) that
--        claim draws one token from per task it starts; per_second NULL
--        removes the limit. The limit is its setter's (rate_limits.owner,
--        conductor._caller()): another login may not change or remove it
--        (QC208, conductor._check_owner), an admin may (and owns it then);
--        setting it exactly as stored is no change and succeeds for anyone,
--        claiming a limit set before v0.3.0 (owner NULL). A login without
--        conductor_admin sets no rate under conductor.settings.min_rate_limit
--        (1 a second, QC106): it may slow a queue, not stop it; stopping is
--        pause_queue's, an admin's. per_key => true: a bucket per value of
--        tasks.rate_key (issue 30, schema/rate_keys), conductor.rate_key_buckets
--   conductor.set_queue_limit(queue, max_running) -> void
--        at most max_running tasks of the queue running at once across every
--        worker (conductor.queue_limits, schema/queue_limits): claim starts no
--        more than max_running minus those running; max_running NULL removes
--        the cap. The same owner rule as a rate limit (QC208); a cap is at
--        least 1, so it slows a queue and never stops it (that is
--        pause_queue's, an admin's): a worker login may set any
--   conductor._check_control_target(scope, name)   a queue's or kind's name
--        rule: enqueue's (conductor._spec_problem), so QC104 and QC101 mean
--        what they mean there
--
-- Tables: conductor.paused_queues (one row per paused queue),
-- conductor.rate_limits (one row per limited queue or kind, with its owner),
-- conductor.queue_limits (one row per capped queue, with its owner),
-- conductor.settings (min_rate_limit, read).
-- Locks: the one row written. A limit's bucket row is also locked by every
-- claim that draws from it (functions/claim), so set_rate_limit waits for a
-- claim in flight; call it in a transaction of its own (claim locks buckets in
-- (scope, name) order last, and a transaction holding one bucket while it
-- claims could wait on another claimer waiting for it). The same holds for a
-- queue's cap row and set_queue_limit (claim locks cap rows before buckets).

begin;
set local role conductor_owner;

-- per_key is new after v0.2.0 (the last parameter, issue 30): the four-parameter
-- set_rate_limit goes, or a call naming only those four would match both
drop function if exists conductor.set_rate_limit(text, text, double precision, double precision);

create or replace function conductor._check_control_target(scope text, name text) returns void
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  -- a task spec judged by enqueue's rules; the field not asked about takes a valid stand-in
  v_spec conductor._task_spec := row(
    case when _check_control_target.scope = 'kind' then _check_control_target.name else 'k' end, '{}',
    case when _check_control_target.scope = 'queue' then _check_control_target.name else 'default' end,
    null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null)::conductor._task_spec;
  v_problem text := conductor._spec_problem(v_spec, 2147483647);
begin
  if v_problem in ('kind', 'queue') then
    perform conductor._raise_spec_problem(v_problem, v_spec);
  end if;
end
$$;

comment on function conductor._check_control_target(text, text) is
$$Raises enqueue's error for name as a queue name (scope 'queue': QC104) or a kind name
(scope 'kind': QC101) that enqueue would refuse (conductor._spec_problem), NULL included;
for pause_queue, resume_queue, set_rate_limit and set_queue_limit.$$;

revoke execute on function conductor._check_control_target(text, text) from public;

create or replace function conductor.pause_queue(queue text) returns boolean
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform conductor._check_control_target('queue', pause_queue.queue);
  insert into conductor.paused_queues as p (queue, paused_at, paused_by)
  values (pause_queue.queue, conductor.now(), conductor._caller())
  on conflict on constraint paused_queues_pkey do nothing;
  return found;
end
$$;

comment on function conductor.pause_queue(text) is
$$Pauses queue: claim takes none of its tasks, from any worker, until resume_queue; its tasks
stay queued and untouched (running ones finish as usual), enqueue still writes to it, reap's
unknown-kind sweep leaves it alone, and stats() shows it paused. Returns true when the queue
was running and is now paused, false when it was paused already (nothing changes). Records
when (conductor.now()) and who (conductor._caller(): the login, or the role it SET ROLE to)
in conductor.paused_queues. The queue need not
hold tasks. Raises QC104 for an invalid queue name (enqueue's rule). Locks the queue's
paused_queues row; any number of callers.$$;

create or replace function conductor.resume_queue(queue text) returns boolean
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform conductor._check_control_target('queue', resume_queue.queue);
  delete from conductor.paused_queues p where p.queue = resume_queue.queue;
  if not found then
    return false;
  end if;
  -- its tasks are claimable again: wake the workers sleeping on it (as an enqueue does)
  perform conductor._notify_queue(resume_queue.queue);
  return true;
end
$$;

comment on function conductor.resume_queue(text) is
$$Resumes queue paused by pause_queue: its tasks are claimed again, and workers sleeping on
it are notified as after an enqueue. Returns true when it was paused, false when it was not
(nothing changes). Raises QC104 for an invalid queue name. Any number of callers.$$;

create or replace function conductor.set_rate_limit(
  queue      text default null,
  kind       text default null,
  per_second double precision default null,
  burst      double precision default null,
  per_key    boolean default false
) returns void
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_scope text := case when set_rate_limit.queue is not null then 'queue' else 'kind' end;
  v_name text := coalesce(set_rate_limit.queue, set_rate_limit.kind);
  v_burst double precision := coalesce(set_rate_limit.burst, greatest(1, set_rate_limit.per_second));
  v_caller text := conductor._caller();
  v_old conductor.rate_limits;
  v_exists boolean;
  v_floor double precision;
begin
  if (set_rate_limit.queue is null) = (set_rate_limit.kind is null) then
    raise exception 'set_rate_limit needs exactly one of queue and kind, got %',
      case when set_rate_limit.queue is null then 'neither' else 'both' end
      using errcode = 'QC106',
            hint = 'A limit applies to a queue (set_rate_limit(queue => ...)) or to a kind (set_rate_limit(kind => ...)); set one of each for both.';
  end if;
  perform conductor._check_control_target(v_scope, v_name);

  if set_rate_limit.per_key is null then
    raise exception 'invalid per_key NULL: true (a bucket per rate_key) or false (one bucket)'
      using errcode = 'QC106';
  end if;
  if set_rate_limit.per_second is null then
    if set_rate_limit.burst is not null then
      raise exception 'invalid burst %: per_second NULL removes the limit and takes no burst', set_rate_limit.burst
        using errcode = 'QC106';
    end if;
    -- removing a limit that is not there is no error
    select r.* into v_old from conductor.rate_limits r
     where r.scope = v_scope and r.name = v_name
       for update;
    if found then
      perform conductor._check_owner(pg_catalog.format('the rate limit of %s', v_scope), v_name, v_old.owner);
      delete from conductor.rate_limits r where r.scope = v_scope and r.name = v_name;
      -- a per-key limit's buckets go with it
      delete from conductor.rate_key_buckets b where b.scope = v_scope and b.name = v_name;
    end if;
    return;
  end if;
  -- NaN compares above every number, so it fails the upper bounds
  if not (set_rate_limit.per_second > 0 and set_rate_limit.per_second <= 1000000) then
    raise exception 'invalid per_second %: task starts per second, more than 0 and at most 1000000',
      set_rate_limit.per_second
      using errcode = 'QC106',
            hint = 'Less than one is fine: 0.1 is one start every 10 seconds (under conductor.settings.min_rate_limit, for an admin only). NULL removes the limit.';
  end if;
  if not (v_burst >= 1 and v_burst <= 1000000) then
    raise exception 'invalid burst %: the most starts at once, at least 1 and at most 1000000', v_burst
      using errcode = 'QC106',
            hint = 'NULL takes greatest(1, per_second).';
  end if;

  -- at most twice round: a second time when another caller set the limit since the select
  loop
    select r.* into v_old from conductor.rate_limits r
     where r.scope = v_scope and r.name = v_name
       for update;
    v_exists := found;
    if v_exists then
      if (v_old.per_second, v_old.burst, v_old.per_key)
         is not distinct from (set_rate_limit.per_second, v_burst, set_rate_limit.per_key) then
        -- the same limit set again (a worker restarting) writes nothing, not even
        -- the tokens; a limit from before v0.3.0 becomes the caller's
        if v_old.owner is null then
          update conductor.rate_limits r set owner = v_caller where r.scope = v_scope and r.name = v_name;
        end if;
        return;
      end if;
      perform conductor._check_owner(pg_catalog.format('the rate limit of %s', v_scope), v_name, v_old.owner);
    end if;

    -- a new limit or a change: a login without conductor_admin slows, never stops
    select s.min_rate_limit into v_floor from conductor.settings s where s.one;
    if set_rate_limit.per_second < v_floor and not conductor._caller_is_admin() then
      raise exception 'invalid per_second % for % %: a login without conductor_admin sets at least % (conductor.settings.min_rate_limit)',
        set_rate_limit.per_second, v_scope, conductor._echo(v_name), v_floor
        using errcode = 'QC106',
              hint = 'Stopping a queue is pause_queue''s, an admin''s; an admin may also set a slower rate, or lower min_rate_limit.';
    end if;

    if v_exists then
      -- a changed limit keeps what its bucket holds (refilled to now at the old
      -- rate), at most the new burst
      update conductor.rate_limits r
         set per_second = set_rate_limit.per_second,
             burst = v_burst,
             -- switched between one bucket and a bucket per key: the new one starts full
             tokens = case when r.per_key <> set_rate_limit.per_key then v_burst
                           else least(v_burst, conductor._tokens(r.per_second, r.burst, r.tokens, r.refilled_at, v_now)) end,
             refilled_at = greatest(r.refilled_at, v_now),
             per_key = set_rate_limit.per_key,
             owner = v_caller
       where r.scope = v_scope and r.name = v_name;
      if v_old.per_key and not set_rate_limit.per_key then
        delete from conductor.rate_key_buckets b where b.scope = v_scope and b.name = v_name;
      end if;
      -- a per-key limit changed keeps what each key's bucket holds (at most the new
      -- burst at its next refill: conductor._tokens)
      return;
    end if;

    -- a new limit starts with a full bucket
    insert into conductor.rate_limits as r (scope, name, per_second, burst, tokens, refilled_at, owner, per_key)
    values (v_scope, v_name, set_rate_limit.per_second, v_burst, v_burst, v_now, v_caller, set_rate_limit.per_key)
    on conflict on constraint rate_limits_pkey do nothing;
    if found then
      return;
    end if;
    -- another caller set it since the select: the next select sees its row, and the
    -- call is judged against that row
  end loop;
end
$$;

comment on function conductor.set_rate_limit(text, text, double precision, double precision, boolean) is
$$Limits how many tasks of queue, or of kind (exactly one of the two), start per second across
every worker: claim draws a token per task it starts from a bucket of at most burst tokens
(default greatest(1, per_second)) that refills at per_second; a task waits queued while
its bucket (its queue's or its kind's; both when both are limited) holds no whole token.
A new limit starts with a full bucket; changing one keeps the tokens it holds (at most the
new burst); setting the same values again changes nothing. per_second NULL removes the
limit (no error when there is none). The limit records the caller (conductor._caller()) as
its owner: changing or removing a limit another login set raises QC208 unless the caller
is a member of conductor_admin (whose change makes it the admin's); setting it exactly as
stored succeeds for any caller, claiming a limit set before v0.3.0 (owner NULL). A caller
without conductor_admin sets no per_second under conductor.settings.min_rate_limit (1 a
second): a limit slows a queue, pause_queue (an admin's) stops it. Raises QC106 unless
exactly one of queue and kind is given, for per_second not in (0, 1000000] or under that
floor, a burst not in [1, 1000000] or a burst without per_second; QC104 for an invalid
queue name, QC101 for an invalid kind name (enqueue's rules). Workers sleeping until a
token (next_due) are not woken: a raised limit takes effect at their next claim. Locks the
limit's row (waiting for a claim drawing from it); call it in a transaction of its own.
per_key (default false): true makes it a limit per key: each distinct rate_key of the
queue's (kind's) tasks has a bucket of its own of per_second and burst (a row of
conductor.rate_key_buckets made full by the first claim that needs it, forgotten by reap()
once full again), and a task without a rate_key is not limited by it. A queue or kind has
one limit, of one bucket or per key: setting the other kind replaces it (the new buckets
start full). per_key NULL raises QC106.$$;

create or replace function conductor.set_queue_limit(
  queue       text,
  max_running integer default null
) returns void
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_caller text := conductor._caller();
  v_old conductor.queue_limits;
begin
  perform conductor._check_control_target('queue', set_queue_limit.queue);
  if set_queue_limit.max_running is not null
     and not (set_queue_limit.max_running between 1 and 1000000) then
    raise exception 'invalid max_running % for queue %: the most tasks of the queue running at once, 1 to 1000000',
      set_queue_limit.max_running, conductor._echo(set_queue_limit.queue)
      using errcode = 'QC106',
            hint = 'NULL removes the cap; stopping a queue is pause_queue''s, an admin''s.';
  end if;

  -- at most twice round: a second time when another caller set the cap since the select
  loop
    select l.* into v_old from conductor.queue_limits l
     where l.queue = set_queue_limit.queue
       for update;
    if found then
      if v_old.max_running is not distinct from set_queue_limit.max_running then
        -- the same cap set again (a worker restarting) writes nothing; one set before
        -- its owner was known becomes the caller's
        if v_old.owner is null then
          update conductor.queue_limits l set owner = v_caller where l.queue = set_queue_limit.queue;
        end if;
        return;
      end if;
      perform conductor._check_owner('the cap of queue', set_queue_limit.queue, v_old.owner);
      if set_queue_limit.max_running is null then
        delete from conductor.queue_limits l where l.queue = set_queue_limit.queue;
      else
        update conductor.queue_limits l
           set max_running = set_queue_limit.max_running, set_at = conductor.now(), owner = v_caller
         where l.queue = set_queue_limit.queue;
      end if;
      return;
    end if;
    if set_queue_limit.max_running is null then
      return;  -- removing a cap that is not there is no error
    end if;
    insert into conductor.queue_limits as l (queue, max_running, set_at, owner)
    values (set_queue_limit.queue, set_queue_limit.max_running, conductor.now(), v_caller)
    on conflict on constraint queue_limits_pkey do nothing;
    if found then
      return;
    end if;
    -- another caller set it since the select: the next select sees its row
  end loop;
end
$$;

comment on function conductor.set_queue_limit(text, integer) is
$$Caps queue: at most max_running of its tasks run at once across every worker, whatever
the number of workers and their concurrency. claim starts no more of its tasks than
max_running minus those running (status 'running'; a task waiting on children, an event or a
sleep holds no slot); the others wait queued, in order, and block no other queue. Lowering
a cap under what is running stops nothing: no new start until fewer run. max_running NULL
removes the cap (no error when there is none); setting the same value again changes nothing.
The cap records the caller (conductor._caller()) as its owner: changing or removing a cap
another login set raises QC208 unless the caller is a member of conductor_admin (whose change
makes it the admin's). Raises QC106 for max_running not in [1, 1000000], QC104 for an
invalid queue name. Workers sleeping on the queue are not woken: a raised cap takes effect
at their next claim (at most the poll interval). Locks the cap's row (waiting for a claim
starting the queue's tasks); call it in a transaction of its own.$$;

revoke execute on function conductor.pause_queue(text) from public;
grant execute on function conductor.pause_queue(text) to conductor_admin;
revoke execute on function conductor.resume_queue(text) from public;
grant execute on function conductor.resume_queue(text) to conductor_admin;
revoke execute on function conductor.set_rate_limit(text, text, double precision, double precision, boolean) from public;
grant execute on function conductor.set_rate_limit(text, text, double precision, double precision, boolean)
  to conductor_worker, conductor_admin;
revoke execute on function conductor.set_queue_limit(text, integer) from public;
grant execute on function conductor.set_queue_limit(text, integer) to conductor_worker, conductor_admin;

commit;
