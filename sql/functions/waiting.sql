-- Deploy conductor:functions/waiting to pg
--
-- Why a queued task is not running (issue 29): what claim would have to get past
-- to take it, said by the engine, so every client shows the same answer.
--
--   conductor._wait_reasons(queue, kind, run_at, concurrency_key, at, live_since,
--                           concurrency_limit, rate_key, code_version)
--        the one rule: what keeps a queued task of that queue, kind, run_at, key and
--        limit from being claimed at time at, in this order, one row each:
--          queue_paused     its queue is paused (pause_queue)
--          due_later        its run_at is after at
--          no_worker        no worker seen since live_since serves its queue and
--                           kind (conductor._serves, reap's rule)
--          code_version     the run started on a code version (tasks.code_version)
--                           that no such worker replays (its registration's
--                           metadata code_versions, written by the drivers)
--          rate_limited     (due tasks) its queue's or kind's bucket holds no whole
--                           token (conductor._tokens, claim's rule); one row a bucket
--          queue_cap        (due tasks) its queue runs as many tasks as its cap
--                           (set_queue_limit; claim's count: status 'running')
--          concurrency_key  (due tasks) as many tasks of its key run as its
--                           concurrency_limit (NULL: 1) allows: "2 of 2 running" 
--        no row: nothing keeps it back (ready)
--   conductor.why_waiting(task_ids)      per queued task, its reasons with a detail a
--        person reads; a ready one says how many due tasks of its queue come first; a
--        debounced one (tasks.debounce_until) that it waits for quiet, and until when;
--        one with a deadline to start says when it expires (reason 'expires', last)
--   conductor.waiting_reasons(queue)     per queue, how many queued tasks wait for
--        each reason (each task counted once, under its first)
--
-- Live: seen within conductor.settings.unknown_kind_after (5 minutes when NULL), as
-- unrunnable() counts it. Tables read: tasks, paused_queues, rate_limits, queue_limits,
-- workers, settings. Reads only, no locks: any number of callers, any client (conductor.tasks is
-- readable by every role).

begin;
set local role conductor_owner;

-- rate_key is new (issue 30, schema/rate_keys): the seven-parameter rule goes
drop function if exists conductor._wait_reasons(text, text, timestamptz, text, timestamptz, timestamptz, integer);
-- code_version is new (issue 31, schema/code_versions): the eight-parameter rule goes
drop function if exists conductor._wait_reasons(text, text, timestamptz, text, timestamptz, timestamptz, integer, text);

create or replace function conductor._wait_reasons(
  queue text, kind text, run_at timestamptz, concurrency_key text,
  at timestamptz, live_since timestamptz, concurrency_limit integer default null, rate_key text default null,
  code_version text default null)
  returns table (reason text, detail text, until_at timestamptz, holder_id bigint)
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_paused conductor.paused_queues;
  v_bucket record;
  v_cap record;  -- the queue's cap and its running tasks
  v_holder bigint;
  v_running bigint;
begin
  select p.* into v_paused from conductor.paused_queues p where p.queue = _wait_reasons.queue;
  if found then
    return query select 'queue_paused'::text,
      pg_catalog.format('queue %s is paused (since %s, by %s)', conductor._echo(_wait_reasons.queue),
                        v_paused.paused_at, conductor._echo(v_paused.paused_by)),
      null::timestamptz, null::bigint;
  end if;

  if _wait_reasons.run_at > _wait_reasons.at then
    return query select 'due_later'::text,
      pg_catalog.format('due at %s', _wait_reasons.run_at), _wait_reasons.run_at, null::bigint;
  end if;

  if not exists (select from conductor.workers w
                  where w.last_seen_at >= _wait_reasons.live_since
                    and conductor._serves(w.queues, w.kinds, w.roles, _wait_reasons.queue, _wait_reasons.kind)) then
    return query select 'no_worker'::text,
      pg_catalog.format('no worker seen since %s serves kind %s on queue %s', _wait_reasons.live_since,
                        conductor._echo(_wait_reasons.kind), conductor._echo(_wait_reasons.queue)),
      null::timestamptz, null::bigint;
  end if;

  -- a run recorded under a code version (schema/code_versions) goes only to a worker that
  -- replays it; a worker's registration names the versions it claims with (metadata
  -- code_versions, written by the drivers: docs/protocol.md)
  if _wait_reasons.code_version is not null
     and not exists (select from conductor.workers w
                      where w.last_seen_at >= _wait_reasons.live_since
                        and conductor._serves(w.queues, w.kinds, w.roles, _wait_reasons.queue, _wait_reasons.kind)
                        and pg_catalog.jsonb_typeof(w.metadata -> 'code_versions') = 'array'
                        and w.metadata -> 'code_versions' ? _wait_reasons.code_version) then
    return query select 'code_version'::text,
      pg_catalog.format('no worker seen since %s that serves kind %s on queue %s replays code version %s, '
                        'which the run started on', _wait_reasons.live_since, conductor._echo(_wait_reasons.kind),
                        conductor._echo(_wait_reasons.queue), conductor._echo(_wait_reasons.code_version)),
      null::timestamptz, null::bigint;
  end if;

  if _wait_reasons.run_at > _wait_reasons.at then
    return;  -- a bucket or a key keeps back a due task only
  end if;

  for v_bucket in
    select r.scope, r.name, r.per_second, r.burst, r.per_key,
           case when not r.per_key
                then conductor._tokens(r.per_second, r.burst, r.tokens, r.refilled_at, _wait_reasons.at)
                -- a key's bucket (schema/rate_keys): a missing row is a full one
                else coalesce((select conductor._tokens(r.per_second, r.burst, b.tokens, b.refilled_at, _wait_reasons.at)
                                 from conductor.rate_key_buckets b
                                where b.scope = r.scope and b.name = r.name and b.key = _wait_reasons.rate_key),
                              r.burst) end as tokens
      from conductor.rate_limits r
     where ((r.scope = 'queue' and r.name = _wait_reasons.queue)
            or (r.scope = 'kind' and r.name = _wait_reasons.kind))
       and (not r.per_key or _wait_reasons.rate_key is not null)  -- no key: no per-key limit applies
     order by r.scope desc
  loop
    -- claim's rule: a start needs a whole token, counted as floor(tokens + 1e-9)
    if v_bucket.tokens + 1e-9 < 1 then
      return query select 'rate_limited'::text,
        pg_catalog.format('the rate limit of %s %s%s (%s a second, burst %s) has no token until %s',
                          v_bucket.scope, conductor._echo(v_bucket.name),
                          case when v_bucket.per_key
                               then pg_catalog.format(' for rate_key %s', conductor._echo(_wait_reasons.rate_key))
                               else '' end,
                          v_bucket.per_second, v_bucket.burst,
                          _wait_reasons.at + (1 - v_bucket.tokens) / v_bucket.per_second * interval '1 second'),
        _wait_reasons.at + (1 - v_bucket.tokens) / v_bucket.per_second * interval '1 second', null::bigint;
    end if;
  end loop;

  select l.max_running,
         (select pg_catalog.count(*) from conductor.tasks r
           where r.status = 'running' and r.queue = l.queue) as running
    into v_cap
    from conductor.queue_limits l where l.queue = _wait_reasons.queue;
  if found and v_cap.running >= v_cap.max_running then
    return query select 'queue_cap'::text,
      pg_catalog.format('queue cap reached (%s of %s running in queue %s)',
                        v_cap.running, v_cap.max_running, conductor._echo(_wait_reasons.queue)),
      null::timestamptz, null::bigint;
  end if;

  if _wait_reasons.concurrency_key is not null then
    -- claim's rule: fewer of its key running than its limit (counted up to the limit)
    select pg_catalog.count(*), pg_catalog.min(r.id) into v_running, v_holder
      from (select r.id from conductor.tasks r
             where r.status = 'running' and r.concurrency_key = _wait_reasons.concurrency_key
             limit coalesce(_wait_reasons.concurrency_limit, 1)) r;
    if v_running >= coalesce(_wait_reasons.concurrency_limit, 1) then
      return query select 'concurrency_key'::text,
        pg_catalog.format('%s of %s running for concurrency key %s (task %s among them)',
                          v_running, coalesce(_wait_reasons.concurrency_limit, 1),
                          conductor._echo(_wait_reasons.concurrency_key), v_holder),
        null::timestamptz, v_holder;
    end if;
  end if;
end
$$;

comment on function conductor._wait_reasons(text, text, timestamptz, text, timestamptz, timestamptz, integer, text, text) is
$$What keeps a queued task of queue, kind, run_at and concurrency_key from being claimed at
time at, one row per reason in this order: queue_paused (paused_queues), due_later (run_at
after at; until_at the run_at), no_worker (no worker seen since live_since serves queue
and kind, conductor._serves), then for a due task only rate_limited (a bucket of its queue
or its kind, or its rate_key's bucket under a per-key limit of either, holds no whole
token at at, conductor._tokens; until_at when the next comes; one row per bucket, the
queue's first), queue_cap (its queue runs max_running tasks or more,
set_queue_limit; the detail says how many of how many) and concurrency_key (as many tasks of the key run as
concurrency_limit, NULL: 1, allows: "2 of 2 running for concurrency key 'x' (task n among
them)"; holder_id names the running task of the key with the lowest id). No row: the task is ready. detail is a sentence for a person, every
name in it through conductor._echo. The one rule of why_waiting and waiting_reasons. A
few index probes (the paused row, the live workers, the buckets, the cap and its queue's
running tasks through tasks_running, tasks_running_keyed); no locks.$$;

revoke execute on function conductor._wait_reasons(text, text, timestamptz, text, timestamptz, timestamptz, integer, text, text) from public;

create or replace function conductor.why_waiting(task_ids bigint[])
  returns table (task_id bigint, reason text, detail text, until_at timestamptz, holder_id bigint, ahead bigint)
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
  -- by id and through the ready indexes, whatever the planner guesses of a small table
  set enable_seqscan = off
  set jit = off
as $$
declare
  v_now timestamptz := conductor.now();
  v_live_since timestamptz;
  v_task conductor.tasks;
  v_ahead bigint;
begin
  select v_now - coalesce(s.unknown_kind_after, interval '5 minutes') into v_live_since
    from conductor.settings s where s.one;

  for v_task in
    select t.* from conductor.tasks t
     where t.id = any (why_waiting.task_ids) and t.status = 'queued'
     order by t.id
  loop
    return query
    select v_task.id, w.reason,
           -- a debounced task (issue 30) waits for quiet: its key's next enqueue moves run_at
           case when w.reason = 'due_later' and v_task.debounce_until is not null and v_task.dedupe_key is not null
                then pg_catalog.format('debounced: due at %s once quiet; an enqueue of dedupe_key %s before then '
                                       'moves it later, %s', v_task.run_at, conductor._echo(v_task.dedupe_key),
                                       case when pg_catalog.isfinite(v_task.debounce_until)
                                            then pg_catalog.format('at the latest to %s', v_task.debounce_until)
                                            else 'with no latest time (no debounce_max)' end)
                else w.detail end,
           w.until_at, w.holder_id, null::bigint
      from conductor._wait_reasons(v_task.queue, v_task.kind, v_task.run_at, v_task.concurrency_key,
                                   v_now, v_live_since, v_task.concurrency_limit, v_task.rate_key,
                                   v_task.code_version) w;
    if not found then
      -- ready: the due tasks of its queue that claim takes first, counted up to 1000
      select pg_catalog.count(*) into v_ahead
        from (select from conductor.tasks o
               where o.status = 'queued' and o.queue = v_task.queue and o.run_at <= v_now
                 and (o.priority > v_task.priority
                      or (o.priority = v_task.priority and (o.run_at, o.id) < (v_task.run_at, v_task.id)))
               limit 1000) a;
      return query select v_task.id, 'ready'::text,
        case when v_ahead = 0 then pg_catalog.format('ready: next in line on queue %s', conductor._echo(v_task.queue))
             else pg_catalog.format('ready: %s%s due tasks of queue %s come first (higher priority or earlier run_at)',
                                    case when v_ahead >= 1000 then 'at least ' else '' end, v_ahead,
                                    conductor._echo(v_task.queue)) end,
        null::timestamptz, null::bigint, v_ahead;
    end if;
    -- not a reason it waits, but how long it may: its deadline to start (schema/expiry)
    if v_task.expires_at is not null then
      return query select v_task.id, 'expires'::text,
        pg_catalog.format('expires at %s unless a worker starts it by then', v_task.expires_at),
        v_task.expires_at, null::bigint, null::bigint;
    end if;
  end loop;
end
$$;

comment on function conductor.why_waiting(bigint[]) is
$$Why each queued task of task_ids is not running, by task id, one row per reason in the
order conductor._wait_reasons gives them: queue_paused (its queue is paused), due_later
(until_at: its run_at; for a debounced task the detail says it waits for quiet, and the
latest its run_at may move to, tasks.debounce_until), no_worker (no worker seen within
conductor.settings.unknown_kind_after, 5 minutes when NULL, serves its queue and kind),
code_version (the run started on a code version, tasks.code_version, that no such worker
replays: none lists it in its registration's metadata code_versions), and
for a due task rate_limited (its queue's or kind's bucket, or its rate_key's under a per-key
limit, holds no whole token; until_at:
when the next comes; one row per dry bucket), queue_cap (its queue runs as many tasks as its
cap, set_queue_limit: 'queue cap reached (20 of 20 running in queue ...)') and concurrency_key (as many tasks of its key
run as its concurrency_limit allows; detail: "N of limit running for concurrency key X";
holder_id: one of them, the lowest id). A task with none of these is ready: one row reason 'ready' with
ahead, the due tasks of its queue that claim takes first (higher priority, or the same and
an earlier run_at or lower id), counted up to 1000 (1000: at least that many). A task with a
deadline to start (expires_in, schema/expiry) also answers, last, a row reason 'expires'
(until_at: its expires_at, after which reap() ends it 'expired'). detail is a
sentence for a person (names quoted and cut by conductor._echo, times in the session's
TimeZone). Tasks that do not exist or are not queued answer no row. Cost per task: a few
index probes, and for a ready one at most 1000 entries of tasks_ready_by_queue. Reads
only, no locks; any number of callers.$$;

create or replace function conductor.waiting_reasons(queue text default null)
  returns table (queue text, reason text, tasks bigint, oldest_run_at timestamptz)
  language sql stable
  security definer
  set search_path = pg_catalog, pg_temp
  -- the queued rows through the ready indexes: a sequential scan, which the planner takes
  -- once the backlog is a fair share of the table, would read the finished history
  set enable_seqscan = off
  set jit = off
as $$
  with clock as (
    select conductor.now() as now,
           conductor.now() - coalesce(s.unknown_kind_after, interval '5 minutes') as live_since
      from conductor.settings s where s.one
  ), groups as (
    -- tasks alike for every reason: one call of the rule per group, not per task
    select t.queue, t.kind, t.concurrency_key, t.concurrency_limit, t.rate_key, t.code_version,
           t.run_at > c.now as later,
           pg_catalog.count(*) as tasks, pg_catalog.min(t.run_at) as oldest_run_at
      from conductor.tasks t cross join clock c
     where t.status = 'queued'
       and (waiting_reasons.queue is null or t.queue = waiting_reasons.queue)
     group by t.queue, t.kind, t.concurrency_key, t.concurrency_limit, t.rate_key, t.code_version,
              t.run_at > c.now
  )
  select g.queue, coalesce(r.reason, 'ready'), pg_catalog.sum(g.tasks)::bigint, pg_catalog.min(g.oldest_run_at)
    from groups g
   cross join clock c
    left join lateral (
      select w.reason
        from conductor._wait_reasons(g.queue, g.kind, g.oldest_run_at, g.concurrency_key, c.now, c.live_since,
                                     g.concurrency_limit, g.rate_key, g.code_version) w
       limit 1) r on true
   group by g.queue, coalesce(r.reason, 'ready')
   order by g.queue, coalesce(r.reason, 'ready')
$$;

comment on function conductor.waiting_reasons(text) is
$$Per queue (only queue when given), how many queued tasks wait for each reason of
why_waiting: queue_paused, due_later, no_worker, code_version, rate_limited, queue_cap, concurrency_key, or ready
(nothing keeps them back), each task counted once under its first reason in that order,
with the earliest run_at among them. Ordered by queue and reason; a queue with no queued
task answers no row. Cost: one pass over the queued tasks (tasks_ready_by_queue for one
queue, tasks_ready for all; never the finished history), grouped by queue, kind, rate key,
concurrency key, code version and due or not, and a few index probes per group (conductor._wait_reasons):
on a big backlog, what the backlog's heap rows cost to read, like stats().unrunnable.
Reads only, no locks; any number of callers.$$;

revoke execute on function conductor.why_waiting(bigint[]) from public;
grant execute on function conductor.why_waiting(bigint[]) to conductor_client, conductor_worker, conductor_admin;
revoke execute on function conductor.waiting_reasons(text) from public;
grant execute on function conductor.waiting_reasons(text) to conductor_client, conductor_worker, conductor_admin;

commit;
