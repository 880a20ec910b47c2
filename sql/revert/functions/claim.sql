-- Revert conductor:functions/claim from pg: back to its v0.2.0 bodies
--
-- conductor.claim(worker_id, queues, max_tasks, lease, kinds): the front of the
-- hot path. In one statement it picks up to max_tasks ready tasks (higher
-- priority first, then earlier due time, then lower id) of the kinds the worker
-- has handlers for, leases them to the worker and records an attempt row for
-- each; the attempt's id is the fencing token for every later call about that
-- claim.
--
--   conductor._check_scope(queues, kinds)   the one rule for a worker's queues
--                                           (QC104) and kinds (QC101) lists,
--                                           shared with register_worker, next_due
--   conductor._claim_keys, _pick_queue, _lease   claim's private steps (below)
--   conductor._claim_controls, _claim_tokens    paused queues and rate limits (below)
--   conductor._tokens(...)                  the one rule of a token bucket's refill,
--                                           shared with next_due and set_rate_limit
--
-- Kinds: claim takes only tasks whose kind is in kinds (NULL: every kind), in
-- every pick (one queue, several, the key probe and the keyed pick): a worker
-- never claims a task it has no handler for, so a fleet of mixed versions
-- (a rolling deploy adding a kind) kills nothing. The filter is a row filter
-- on the heap row, not an index bound (no index holds the kind; adding it to
-- the ready indexes would cost every enqueue and claim): a claim steps over
-- the tasks of kinds it cannot run that stand at its queue's head. That is a
-- rolling deploy's transient (the newer workers take them), and the
-- unknown-kind sweep of reap() bounds it: a task whose kind no live worker
-- serves is dead-lettered after conductor.settings.unknown_kind_after.
--
-- Time limits: each task's lease is now + least(lease, task.timeout), so a
-- lease never passes the attempt's deadline (claimed_at + timeout);
-- claimed_task.timeout tells the worker the limit. heartbeat keeps to the same
-- deadline and reap() fails the attempt that reaches it.
--
-- Locks: the picked task rows, FOR UPDATE SKIP LOCKED, so concurrent claimers
-- never wait on each other and never get the same task.
--
-- Paused queues and rate limits (conductor.paused_queues, conductor.rate_limits,
-- written by pause_queue, resume_queue and set_rate_limit in functions/controls).
-- Both tables are empty in the common case: one statement at the start finds
-- that and the claim takes the path it always took, with nothing added. When
-- either holds a row, conductor._claim_controls narrows the claim before the
-- pick: a paused queue is left out (a claim of one paused queue, or of paused
-- queues only, returns nothing at once; of several or all queues, the pick
-- filters the paused ones out), and so is a queue or kind whose bucket holds no
-- whole token now (read without a lock, so a claim does not lock a bucket it
-- cannot draw from, and tasks of a dry kind do not stand in the way of the
-- others at the head of a queue); when only queue or only kind buckets apply
-- and every queue or kind it names has one, it picks no more tasks than their
-- whole tokens together. After the pick, when a bucket may apply,
-- conductor._claim_tokens locks the buckets of the picked tasks' queues and
-- kinds (FOR UPDATE, in (scope, name) order), refills them (tokens =
-- least(burst, tokens + elapsed * per_second), conductor._tokens; the clock
-- never runs back: elapsed is at least 0 and refilled_at only moves forward),
-- keeps in claim order the tasks that find a whole token in their queue's
-- bucket and in their kind's (each kept task draws one from both), deducts
-- what was kept and returns the kept ids: only those are leased. The others
-- stay queued and untouched (no attempt, no change); their row locks go at
-- commit. Every claimer of a limited queue or kind waits for the bucket
-- holder's commit, then sees what it left (READ COMMITTED; at REPEATABLE READ
-- the wait ends in a serialization failure, 40001): the starts of every
-- worker together never exceed the tokens. A rate-limited claim remembers no
-- scan position (below): a task trimmed away must stay first in line.
--
-- Concurrency keys (at most one running task per key; the others stay queued
-- in order and block nothing else): a first statement takes a transaction
-- advisory lock, without waiting, on each key it may claim; a second
-- statement, whose snapshot is newer than those locks, claims only tasks of
-- keys it locked and that have no running task, one per key. A claimer that
-- made a key's task running committed before releasing the key's lock, so the
-- next holder of the lock sees it running. This needs READ COMMITTED (a
-- snapshot per statement), which claim checks when keys are involved.
--   Lock order: key advisory locks (tried, never waited for), then task rows
--   (SKIP LOCKED, never waited for), then rate limit buckets (FOR UPDATE, in
--   (scope, name) order: the only wait, and every claimer takes them in the
--   same order after everything else, so claimers cannot deadlock).
--
-- Index use: one queue -> tasks_ready_by_queue (equality, then the claim
-- order); several or all queues -> tasks_ready (the claim order) with a filter.
-- Picking is one small statement per case (one queue, several, or with
-- concurrency keys), so each has a plan of its own. The pick from several or
-- all queues, or with keys, is planned afresh on every call
-- (force_custom_plan): which index serves best depends on the queues' sizes,
-- or the position's bounds must reach the index, and a cached generic plan
-- made while the table was empty or small stayed on the connection as it
-- grew, 5-200x slower (bench/stale_plans.py).
-- The rest has one right plan whatever the sizes, so it is planned once per
-- connection: the pick from one queue, from its head or from a remembered
-- position (conductor._pick_queue, one statement per stage, written so that
-- tasks_ready_by_queue is the only plan without a sort), the key probe
-- (conductor._claim_keys) and the lease, the attempt rows and the answer
-- (conductor._lease, one statement shared by all cases) run with
-- force_generic_plan and with sequential scans, hash and merge joins disabled,
-- so a plan made on empty tables cannot turn into a scan later
-- (sql/tests/claim/cached_plans_stay_on_index_probes.sql; the pick's index:
-- sql/tests/claim/pick_plan_stays_on_queue_index.sql). Planning them on
-- every call was a fifth of the database's time in bench (d).
--
-- Pinned xmin horizon (a long transaction elsewhere): the index entries of
-- every task claimed since cannot be removed, and they sit at the head of the
-- ready index, where each claim's scan starts and must step over them all:
-- claims get slower with every task claimed while the horizon is held. So
-- when two full scans in a row take longer than conductor.settings.claim_slow_scan
-- (default 1 ms), the worker's claims remember the position after the last
-- task claimed (a row of conductor.claim_positions, keyed by worker_id: no
-- session state, so a transaction-mode pooler that hands one server session to
-- many clients mixes nothing, and no caller can SET it) and, until the next
-- full scan, claim in three steps, each only if the previous found too few: tasks of higher priority
-- than the position's; tasks after the position at its priority (stepping
-- over only what others claimed since); a full scan. The next full scan comes
-- after 2 s, or 20 times the last full scan's time if longer (at most 5 % of
-- the claims' time goes to full scans however long they get). What the
-- position passes over (a task returned to the queue behind it, or one whose
-- enqueueing transaction began earlier) waits for that full scan. After a fast
-- full scan nothing is remembered: claims keep the exact order. A first slow
-- scan only leaves a strike ('<queues>|slow'): on a busy or virtual machine a
-- backend paused for a few milliseconds makes one scan slow (measured: a bare
-- round trip's p99 is 4-9 ms on the 2-vCPU bench VM), and taking that for dead
-- entries cost a second, per-call planned pick per claim for the next 2 s.
-- Not used for claims with concurrency keys, nor for claims a rate limit may
-- trim. The position belongs to the claim's queues and kinds (a claim for
-- other kinds ignores it).
--   Cost: the worker's newest row is read by conductor._claim_position (a
--   backward probe of the primary key, planned once per connection, called as
--   a PL/pgSQL simple expression: a few us a claim, where the same read in
--   the controls' statement, planned per call, cost 80-150 us); rows are written
--   only while scans are slow, by
--   conductor._claim_remember (planned once per connection): an insert of the
--   new position and the deletion of the row read, without waiting for a
--   claimer of the same worker_id on another connection (SKIP LOCKED), and one
--   deletion of the worker's rows when a fast scan ends it. Why rows are
--   inserted, not updated: schema/claim_positions.

begin;
set local role conductor_owner;

-- what the rework added: the key probe goes back to its advisory locks below,
-- the pick from several queues back into claim's body
drop function conductor._concurrency_slot(text);
drop function conductor._pick(text, text[], text[], text[], text[], text[], integer, timestamptz, boolean, text[]);
drop function conductor._pick_keyed(text[], text[], text[], text[], text[], integer, timestamptz, text[]);
drop function conductor._pick_queues(text[], text[], text[], text[], integer, timestamptz, integer, integer,
                                     timestamptz, bigint, bigint[], text[]);
-- and durable, claim's sixth parameter, with the epoch guard it needs
drop function conductor.claim(text, text[], integer, interval, text[], boolean, text[]);
drop function conductor._claim_epoch();
-- and the queue caps (issue 30)
drop function conductor._claim_cap_scope(text[], text[]);
drop function conductor._claim_caps(bigint[]);
drop function conductor._claim_rooms(text[]);
-- new after v0.2.0 (issue 30: rate limits per key); _claim_controls's answer changed,
-- v0.2.0's comes back below
drop function conductor._pick_rated(text[], text[], text[], text[], text[], text[], integer[], text[], integer[], integer, timestamptz, text[]);
-- code versions (issue 31): the helpers that gained code_versions come back below without it
drop function conductor._check_code_versions(text[]);
drop function conductor._claim_keys(text[], integer, timestamptz, text[], text[], text[], text[]);
drop function conductor._pick_queue(text, integer, timestamptz, integer, integer, timestamptz, bigint, bigint[], text[], text[], text[]);
drop function conductor._lease(bigint[], bigint[], text, timestamptz, timestamptz, text);
drop function conductor._claim_controls(text[], text[], timestamptz);

-- kinds is new (the last parameter): v0.1.0's four-parameter claim goes, and
-- with it the helpers whose signatures gained kinds.

-- conductor.claimed_task, what claim returns, is created by functions/claim@v0.1.0
-- and unchanged since.

create or replace function conductor._claim_slow_scan() returns interval
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  return (select s.claim_slow_scan from conductor.settings s where s.one);
end
$$;

comment on function conductor._claim_slow_scan() is
$$How long a full claim scan may take before the session claims from a remembered position
(conductor.settings.claim_slow_scan, default 1 ms; only an admin changes it).$$;

revoke execute on function conductor._claim_slow_scan() from public;

-- The one rule for the queues and kinds a worker names: NULL means every one;
-- a list names at least one and holds no NULL. claim, next_due and
-- register_worker (kinds) check through it, so one SQLSTATE means one thing.
create or replace function conductor._check_scope(queues text[], kinds text[]) returns void
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if _check_scope.queues is not null
     and (pg_catalog.cardinality(_check_scope.queues) = 0
          or pg_catalog.array_position(_check_scope.queues, null) is not null) then
    raise exception 'invalid queues %: name at least one queue, or pass NULL for every queue',
      conductor._echo(_check_scope.queues::text)
      using errcode = 'QC104';
  end if;
  if _check_scope.kinds is not null
     and (pg_catalog.cardinality(_check_scope.kinds) = 0
          or pg_catalog.array_position(_check_scope.kinds, null) is not null) then
    raise exception 'invalid kinds %: name at least one kind, or pass NULL for every kind',
      conductor._echo(_check_scope.kinds::text)
      using errcode = 'QC101';
  end if;
end
$$;

comment on function conductor._check_scope(text[], text[]) is
$$The rule for a worker's queues and kinds lists (claim, next_due, register_worker): NULL
means every queue or kind; a list must name at least one and hold no NULL. Raises QC104
for queues, QC101 for kinds, the message echoing the list.$$;

revoke execute on function conductor._check_scope(text[], text[]) from public;

-- The worker's newest row of conductor.claim_positions (all NULL when none):
-- a backward scan of the primary key, whose first entry is the newest row
-- however many dead ones a pinned horizon keeps behind it. Sequential scans,
-- bitmap scans and sorts are off, so a plan made on an empty table stays that.
create or replace function conductor._claim_position(worker_id text) returns conductor.claim_positions
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set enable_seqscan = off
  set enable_bitmapscan = off
  set enable_sort = off
  set jit = off
as $$
declare
  v_row conductor.claim_positions;
begin
  select p.* into v_row from conductor.claim_positions p
   where p.worker_id = _claim_position.worker_id
   order by p.seq desc
   limit 1;
  return v_row;
end
$$;

comment on function conductor._claim_position(text) is
$$claim's read of where worker_id's claims go on from (conductor.claim_positions): its newest
row, or a row of NULLs. Planned once per connection (a backward primary-key probe).$$;

revoke execute on function conductor._claim_position(text) from public;

-- claim's memory of a position, see the map: a new position after the last
-- of last_ids in claim order (or a strike when last_ids is NULL) replacing the
-- row the claim read (read_seq), or, when scope is NULL, the worker's rows
-- deleted. Rows another connection of the same worker_id holds locked are left
-- alone (SKIP LOCKED): a claim never waits here.
create or replace function conductor._claim_remember(worker_id text, read_seq bigint, scope text,
                                                     last_ids bigint[], until double precision)
  returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set enable_seqscan = off
  set jit = off
as $$
begin
  if _claim_remember.scope is null then
    delete from conductor.claim_positions p
     where p.ctid = any (array(select q.ctid from conductor.claim_positions q
                                where q.worker_id = _claim_remember.worker_id
                                  for update skip locked));
    return;
  end if;
  insert into conductor.claim_positions (worker_id, scope, priority, run_at, task_id, until)
  select _claim_remember.worker_id, _claim_remember.scope, t.priority, t.run_at, t.id, _claim_remember.until
    from (select) one
    left join lateral (select t.priority, t.run_at, t.id from conductor.tasks t
                        where t.id = any (_claim_remember.last_ids)
                        order by t.priority, t.run_at desc, t.id desc  -- the last claimed, in claim order
                        limit 1) t on true;
  if _claim_remember.read_seq is not null then
    delete from conductor.claim_positions p
     where p.ctid = any (array(select q.ctid from conductor.claim_positions q
                                where q.worker_id = _claim_remember.worker_id
                                  and q.seq = _claim_remember.read_seq
                                  for update skip locked));
  end if;
end
$$;

comment on function conductor._claim_remember(text, bigint, text, bigint[], double precision) is
$$claim's memory of where a worker's claims go on from while full scans are slow
(conductor.claim_positions): inserts the position after the last of last_ids in claim order
(a strike when last_ids is NULL) and deletes the row read_seq the claim read; scope NULL
deletes the worker's rows. Skips rows locked by another connection (never waits).
Planned once per connection.$$;

revoke execute on function conductor._claim_remember(text, bigint, text, bigint[], double precision) from public;

-- The keys a claim may use: those of the first ready keyed tasks whose key has
-- no running task, each locked for the transaction (without waiting: a key
-- another claimer holds is skipped). NULL when there are none, the common case.
create or replace function conductor._claim_keys(queues text[], max_tasks integer, claimed_at timestamptz,
                                                 kinds text[] default null, not_queues text[] default null,
                                                 not_kinds text[] default null)
  returns text[]
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set enable_seqscan = off
  set jit = off
  set enable_hashjoin = off
  set enable_mergejoin = off
as $$
begin
  return (
  select pg_catalog.array_agg(distinct k.concurrency_key)
    from (
      select t.concurrency_key from conductor.tasks t
       where t.status = 'queued' and t.concurrency_key is not null and t.run_at <= _claim_keys.claimed_at
         and (_claim_keys.queues is null or t.queue = any (_claim_keys.queues))
         and (_claim_keys.kinds is null or t.kind = any (_claim_keys.kinds))
         and (_claim_keys.not_queues is null or t.queue <> all (_claim_keys.not_queues))
         and (_claim_keys.not_kinds is null or t.kind <> all (_claim_keys.not_kinds))
         and not exists (select from conductor.tasks r
                          where r.concurrency_key = t.concurrency_key and r.status = 'running')
       order by t.priority desc, t.run_at, t.id
       limit _claim_keys.max_tasks
    ) k
   where pg_catalog.pg_try_advisory_xact_lock(
           pg_catalog.hashtextextended('conductor:concurrency:' || k.concurrency_key, 0)));
end
$$;

comment on function conductor._claim_keys(text[], integer, timestamptz, text[], text[], text[]) is
$$claim's key probe: the concurrency keys of the first max_tasks ready keyed tasks of queues
and kinds (NULL: every one), none of not_queues and not_kinds, whose key has no running task, each locked with
pg_try_advisory_xact_lock (a key held by another claimer is left out). NULL when there are
none. Planned once per connection (index probes only).$$;

revoke execute on function conductor._claim_keys(text[], integer, timestamptz, text[], text[], text[]) from public;

-- The pick from one queue: up to max_tasks ready unkeyed tasks of the queue
-- (of kinds, when given: a row filter, see the map), in claim order, locked.
-- Stage 3 (the default) scans the queue from its head, leaving out taken_ids;
-- from a remembered position, stage 1 takes the tasks of higher priority than
-- the position's and stage 2 the ones after it at its priority (see the map
-- at the top). One statement per stage, so that
-- each has a plan whose index bounds are the stage's, planned once per
-- connection: planned per call, the position's picks cost 0.2 ms of planning
-- each under a pinned horizon, where every claim makes them.
--
-- Every statement's one right index is tasks_ready_by_queue, and none leaves
-- the planner another: queue is matched as queue = any(array[q]), which the
-- planner does not treat as a constant, and the rows are ordered by queue
-- first, so only that index yields the order; sorts, sequential and bitmap
-- scans are off. With queue = q, a plan made while one queue filled the table
-- read tasks_ready and filtered on queue, stepping through every other
-- queue's tasks once there were more (sql/tests/claim/pick_plan_stays_on_queue_index.sql,
-- both parts). The btree scan takes the array key as an equality, so the
-- priority and position bounds still end the scan; a range (queue >= q and
-- queue <= q), which pinned the index as well, did not: a key on a later
-- column ends the scan only when every earlier column has an equality key,
-- and with it each position pick read the rest of the queue's index ((d) at
-- 0.27 of raw, reverted in a00379f).
create or replace function conductor._pick_queue(
  queue          text,
  max_tasks      integer,
  claimed_at     timestamptz,
  stage          integer default 3,
  after_priority integer default null,
  after_run_at   timestamptz default null,
  after_id       bigint default null,
  taken_ids      bigint[] default null,
  kinds          text[] default null,
  not_kinds      text[] default null,
  out ids        bigint[],
  out seen_ids   bigint[])
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set enable_seqscan = off
  set jit = off
  set enable_bitmapscan = off
  set enable_sort = off
as $$
begin
  if _pick_queue.stage = 1 then
    select pg_catalog.array_agg(p.id), pg_catalog.array_agg(p.id) filter (where p.started_at is not null)
      into _pick_queue.ids, _pick_queue.seen_ids
      from (select t.id, t.started_at from conductor.tasks t
             where t.status = 'queued' and t.queue = any (array[_pick_queue.queue])
               and t.priority > _pick_queue.after_priority
               and t.run_at <= _pick_queue.claimed_at and t.concurrency_key is null
               and (_pick_queue.kinds is null or t.kind = any (_pick_queue.kinds))
               and (_pick_queue.not_kinds is null or t.kind <> all (_pick_queue.not_kinds))
             order by t.queue, t.priority desc, t.run_at, t.id
             limit _pick_queue.max_tasks
               for update skip locked) p;
  elsif _pick_queue.stage = 2 then
    select pg_catalog.array_agg(p.id), pg_catalog.array_agg(p.id) filter (where p.started_at is not null)
      into _pick_queue.ids, _pick_queue.seen_ids
      from (select t.id, t.started_at from conductor.tasks t
             where t.status = 'queued' and t.queue = any (array[_pick_queue.queue])
               and t.priority = _pick_queue.after_priority
               and (t.run_at, t.id) > (_pick_queue.after_run_at, _pick_queue.after_id)
               and t.run_at <= _pick_queue.claimed_at and t.concurrency_key is null
               and (_pick_queue.kinds is null or t.kind = any (_pick_queue.kinds))
               and (_pick_queue.not_kinds is null or t.kind <> all (_pick_queue.not_kinds))
             order by t.queue, t.priority desc, t.run_at, t.id
             limit _pick_queue.max_tasks
               for update skip locked) p;
  else
    select pg_catalog.array_agg(p.id), pg_catalog.array_agg(p.id) filter (where p.started_at is not null)
      into _pick_queue.ids, _pick_queue.seen_ids
      from (select t.id, t.started_at from conductor.tasks t
             where t.status = 'queued' and t.queue = any (array[_pick_queue.queue])
               and t.run_at <= _pick_queue.claimed_at and t.concurrency_key is null
               and (_pick_queue.taken_ids is null or t.id <> all (_pick_queue.taken_ids))
               and (_pick_queue.kinds is null or t.kind = any (_pick_queue.kinds))
               and (_pick_queue.not_kinds is null or t.kind <> all (_pick_queue.not_kinds))
             order by t.queue, t.priority desc, t.run_at, t.id
             limit _pick_queue.max_tasks
               for update skip locked) p;
  end if;
end
$$;

comment on function conductor._pick_queue(text, integer, timestamptz, integer, integer, timestamptz, bigint, bigint[], text[], text[]) is
$$claim's pick from one queue: locks up to max_tasks ready unkeyed tasks of queue due by
claimed_at (of kinds only, when given, and of none of not_kinds: row filters), FOR UPDATE SKIP LOCKED, and returns
their ids in claim order and, of those, the ones claimed before (seen_ids). stage 3 (default): from the queue's head, leaving out taken_ids; from
a remembered position, stage 1: priority above after_priority; stage 2: at after_priority,
after (after_run_at, after_id). Planned once per connection, always a scan of
tasks_ready_by_queue bounded by the stage.$$;

revoke execute on function conductor._pick_queue(text, integer, timestamptz, integer, integer, timestamptz, bigint, bigint[], text[], text[]) from public;

-- The one rule of a token bucket (conductor.rate_limits): the tokens it holds at
-- time at, refilled continuously at per_second from refilled_at, at most
-- burst. A clock behind refilled_at (another claimer's later transaction
-- start, a test's fake clock) refills nothing: tokens are never made twice.
create or replace function conductor._tokens(per_second double precision, burst double precision,
                                             tokens double precision, refilled_at timestamptz,
                                             at timestamptz)
  returns double precision
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
begin
  return least(_tokens.burst,
               _tokens.tokens
               + greatest(0, extract(epoch from (_tokens.at - _tokens.refilled_at)))::double precision
                 * _tokens.per_second);
end
$$;

comment on function conductor._tokens(double precision, double precision, double precision, timestamptz, timestamptz) is
$$The tokens a rate limit bucket holds at time at: least(burst, tokens + seconds since
refilled_at * per_second), the seconds at least 0. Read by claim (what it may start),
next_due (when the next token comes) and set_rate_limit. A task starts on a whole token:
callers count floor(tokens + 1e-9), so float error never withholds one.$$;

revoke execute on function conductor._tokens(double precision, double precision, double precision, timestamptz, timestamptz) from public;

-- What the controls leave of a claim's scope (see the map): the queues named,
-- without the paused ones and those whose bucket holds no whole token (queues
-- NULL: not_queues, to leave out); the same for kinds with dry buckets; and
-- whether a bucket may apply to what the pick takes (then _claim_tokens
-- trims it). Read without locks: a bucket another claimer drains meanwhile
-- is caught by _claim_tokens under its lock.
create or replace function conductor._claim_controls(
  queues         text[],
  kinds          text[],
  claimed_at     timestamptz,
  out run_queues text[],
  out run_kinds  text[],
  out not_queues text[],
  out not_kinds  text[],
  out limited    boolean,
  out cap        integer)
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
  set jit = off
as $$
declare
  v_out_queues text[];
  v_out_kinds text[];
  v_queue_limited boolean;
  v_kind_limited boolean;
begin
  select pg_catalog.array_agg(x.name) into v_out_queues
    from (select p.queue as name from conductor.paused_queues p
          union
          select r.name from conductor.rate_limits r
           where r.scope = 'queue'
             and conductor._tokens(r.per_second, r.burst, r.tokens, r.refilled_at, _claim_controls.claimed_at)
                 + 1e-9 < 1) x;
  select pg_catalog.array_agg(r.name) into v_out_kinds
    from conductor.rate_limits r
   where r.scope = 'kind'
     and conductor._tokens(r.per_second, r.burst, r.tokens, r.refilled_at, _claim_controls.claimed_at)
         + 1e-9 < 1;
  if _claim_controls.queues is null then
    not_queues := v_out_queues;
  else
    run_queues := array(select u.q from pg_catalog.unnest(_claim_controls.queues) with ordinality u(q, n)
                         where u.q <> all (coalesce(v_out_queues, '{}')) order by u.n);
  end if;
  if _claim_controls.kinds is null then
    not_kinds := v_out_kinds;
  else
    run_kinds := array(select u.k from pg_catalog.unnest(_claim_controls.kinds) with ordinality u(k, n)
                        where u.k <> all (coalesce(v_out_kinds, '{}')) order by u.n);
  end if;
  -- buckets that may apply to what the pick takes (the dry ones are left out of it)
  v_queue_limited := exists (select from conductor.rate_limits r
                              where r.scope = 'queue'
                                and (run_queues is null or r.name = any (run_queues))
                                and (not_queues is null or r.name <> all (not_queues)));
  v_kind_limited := exists (select from conductor.rate_limits r
                             where r.scope = 'kind'
                               and (run_kinds is null or r.name = any (run_kinds))
                               and (not_kinds is null or r.name <> all (not_kinds)));
  limited := v_queue_limited or v_kind_limited;
  -- when the buckets of one scope only apply (of queues, or of kinds) and every
  -- queue or kind named has one, no more can start than their tokens together:
  -- the pick need not lock more tasks than that. (With both, a task picked may
  -- lose to the other scope's bucket, so a smaller pick could start fewer.)
  if limited then
    if v_queue_limited and not v_kind_limited then
      cap := (select case when pg_catalog.count(*) = pg_catalog.cardinality(run_queues)
                          then pg_catalog.sum(pg_catalog.floor(
                                 conductor._tokens(r.per_second, r.burst, r.tokens, r.refilled_at,
                                                   _claim_controls.claimed_at) + 1e-9)) end
                from conductor.rate_limits r
               where r.scope = 'queue' and r.name = any (run_queues));
    elsif v_kind_limited and not v_queue_limited then
      cap := (select case when pg_catalog.count(*) = pg_catalog.cardinality(run_kinds)
                          then pg_catalog.sum(pg_catalog.floor(
                                 conductor._tokens(r.per_second, r.burst, r.tokens, r.refilled_at,
                                                   _claim_controls.claimed_at) + 1e-9)) end
                from conductor.rate_limits r
               where r.scope = 'kind' and r.name = any (run_kinds));
    end if;
  end if;
end
$$;

comment on function conductor._claim_controls(text[], text[], timestamptz) is
$$claim's narrowing by the operator's controls, called only when conductor.paused_queues or
conductor.rate_limits holds a row: run_queues (queues given) or not_queues (queues NULL)
leave out the paused queues and those whose rate limit bucket holds no whole token at
claimed_at; run_kinds or not_kinds the kinds without one; limited says whether a bucket
may apply to the tasks picked (then conductor._claim_tokens trims them); cap, when only
queue buckets or only kind buckets apply and every queue or kind named has one, the whole
tokens they hold together (the most that can start). Reads without locks. run_queues or run_kinds empty: nothing to claim.$$;

revoke execute on function conductor._claim_controls(text[], text[], timestamptz) from public;

-- The rate limits, applied to the picked tasks (see the map): lock the buckets
-- of their queues and kinds in (scope, name) order, refill, keep in claim
-- order (the order of task_ids) each task that finds a whole token in both of
-- its buckets, deduct the kept tasks' tokens. Returns the kept ids, NULL for
-- none; the rest stay queued, untouched.
create or replace function conductor._claim_tokens(task_ids bigint[], claimed_at timestamptz)
  returns bigint[]
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set jit = off
as $$
declare
  v_buckets text[];   -- scope || ':' || name, in lock order
  v_left integer[];   -- whole tokens left in each
  v_used integer[];   -- drawn by this claim from each
  v_task record;
  v_q integer;
  v_k integer;
  v_kept bigint[];
begin
  -- lock first (the only wait of a claim: in (scope, name) order, see the map) ...
  perform from conductor.rate_limits r
    where (r.scope = 'queue' and r.name in (select t.queue from conductor.tasks t where t.id = any (_claim_tokens.task_ids)))
       or (r.scope = 'kind' and r.name in (select t.kind from conductor.tasks t where t.id = any (_claim_tokens.task_ids)))
    order by r.scope, r.name
      for update of r;
  -- ... then read what the holders before left (a statement of its own: a snapshot taken
  -- after the wait, at READ COMMITTED)
  select pg_catalog.array_agg(r.scope || ':' || r.name order by r.scope, r.name),
         pg_catalog.array_agg(pg_catalog.floor(conductor._tokens(r.per_second, r.burst, r.tokens, r.refilled_at,
                                                                 _claim_tokens.claimed_at) + 1e-9)::integer
                              order by r.scope, r.name),
         pg_catalog.array_agg(0 order by r.scope, r.name)
    into v_buckets, v_left, v_used
    from conductor.rate_limits r
   where (r.scope = 'queue' and r.name in (select t.queue from conductor.tasks t where t.id = any (_claim_tokens.task_ids)))
      or (r.scope = 'kind' and r.name in (select t.kind from conductor.tasks t where t.id = any (_claim_tokens.task_ids)));
  if v_buckets is null then
    return _claim_tokens.task_ids;  -- a bucket of other queues and kinds only
  end if;

  for v_task in
    select t.id, t.queue, t.kind
      from pg_catalog.unnest(_claim_tokens.task_ids) with ordinality u(id, n)
      join conductor.tasks t on t.id = u.id
     order by u.n
  loop
    v_q := pg_catalog.array_position(v_buckets, 'queue:' || v_task.queue);
    v_k := pg_catalog.array_position(v_buckets, 'kind:' || v_task.kind);
    if (v_q is null or v_left[v_q] > 0) and (v_k is null or v_left[v_k] > 0) then
      v_kept := v_kept || v_task.id;
      if v_q is not null then
        v_left[v_q] := v_left[v_q] - 1;
        v_used[v_q] := v_used[v_q] + 1;
      end if;
      if v_k is not null then
        v_left[v_k] := v_left[v_k] - 1;
        v_used[v_k] := v_used[v_k] + 1;
      end if;
    end if;
  end loop;

  -- a bucket nothing was drawn from keeps its row: refilling later from its
  -- refilled_at gives the same tokens
  update conductor.rate_limits r
     set tokens = greatest(0, conductor._tokens(r.per_second, r.burst, r.tokens, r.refilled_at,
                                                _claim_tokens.claimed_at) - u.used),
         refilled_at = greatest(r.refilled_at, _claim_tokens.claimed_at)
    from rows from (pg_catalog.unnest(v_buckets), pg_catalog.unnest(v_used)) u(bucket, used)
   where u.used > 0 and r.scope || ':' || r.name = u.bucket;
  return v_kept;
end
$$;

comment on function conductor._claim_tokens(bigint[], timestamptz) is
$$claim's rate limits: locks the conductor.rate_limits buckets of the queues and kinds of
task_ids (picked and locked by the caller, in claim order), FOR UPDATE in
(scope, name) order, refills them to claimed_at (conductor._tokens), keeps in order each
task that finds a whole token in its queue's bucket and its kind's (where they exist),
deducts one token per kept task from each, and returns the kept ids (NULL: none). The
tasks left out are not touched.$$;

revoke execute on function conductor._claim_tokens(bigint[], timestamptz) from public;

create or replace function conductor._lease(
  task_ids       bigint[],
  seen_ids       bigint[],
  worker_id      text,
  lease_until    timestamptz,
  claimed_at     timestamptz
) returns setof conductor.claimed_task
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set enable_seqscan = off
  set jit = off
  set enable_hashjoin = off
  set enable_mergejoin = off
as $$
begin
  return query
  with claimed as (
    update conductor.tasks t
       set status = 'running',
           attempt = t.attempt + 1,
           attempt_id = pg_catalog.nextval('conductor.attempts_id_seq'),
           claimed_by = _lease.worker_id,
           -- never past the attempt's deadline (see the map)
           lease_expires_at = least(_lease.lease_until, _lease.claimed_at + t.timeout),
           started_at = coalesce(t.started_at, _lease.claimed_at)
     where t.id = any (_lease.task_ids)
    returning t.*
  ), recorded as (
    insert into conductor.attempts (id, task_id, attempt, worker_id, host, pid, claimed_at)
    select c.attempt_id, c.id, c.attempt, _lease.worker_id, w.host, w.pid, _lease.claimed_at
      from claimed c
      left join conductor.workers w on w.id = _lease.worker_id
  )
  select c.id, c.attempt_id, c.kind, c.queue, c.payload, c.priority, c.attempt,
         c.max_attempts, c.recoveries, c.parent_id, c.root_id, c.run_at,
         c.enqueued_at, c.lease_expires_at,
         -- a task never claimed before has no steps: skip the lookup
         case when c.id = any (_lease.seen_ids)
              then coalesce((select pg_catalog.jsonb_object_agg(s.name, s.result)
                               from conductor.steps s where s.task_id = c.id), '{}')
              else '{}' end,
         c.timeout
    from claimed c
   order by c.priority desc, c.run_at, c.id;
end
$$;

comment on function conductor._lease(bigint[], bigint[], text, timestamptz, timestamptz) is
$$claim's second half: leases the picked task_ids (locked by the caller) to worker_id until
lease_until, or claimed_at + the task's timeout when earlier, writes an attempt row for each
(host and pid from conductor.workers) and returns them in claim order with their steps (looked up only for seen_ids, tasks claimed before).
Planned once per connection (primary-key probes only).$$;

revoke execute on function conductor._lease(bigint[], bigint[], text, timestamptz, timestamptz) from public;

create or replace function conductor.claim(
  worker_id text,
  queues    text[] default null,
  max_tasks integer default 1,
  lease     interval default interval '60 seconds',
  kinds     text[] default null
) returns setof conductor.claimed_task
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_custom_plan
as $$
declare
  v_now timestamptz := conductor.now();
  v_max_lease interval;
  v_one_queue text;
  v_keys text[];
  v_ids bigint[];
  v_seen bigint[];
  v_scope text;
  v_pos conductor.claim_positions;  -- the worker's newest row (see the map), or NULLs
  v_after_priority integer;
  v_after_run_at timestamptz;
  v_after_id bigint;
  v_until double precision;
  v_stage integer := 3;  -- 1: above the position's priority, 2: after the position, 3: full scan
  v_started timestamptz;
  v_more bigint[];
  v_more_seen bigint[];
  v_strike boolean := false;
  v_stage_last bigint[];  -- the last task each stage picked (each pick is in claim order)
  v_queues text[] := claim.queues;  -- what the controls leave of queues and kinds (see the map)
  v_kinds text[] := claim.kinds;
  v_not_queues text[];
  v_not_kinds text[];
  v_limited boolean := false;
  v_cap integer;
  v_max integer := claim.max_tasks;  -- or fewer, when the rate limits allow fewer starts
  v_controlled boolean;  -- a paused queue or a rate limit exists
  v_followed boolean;    -- a session follows bus topic 'tasks'
begin
  if claim.worker_id is null or claim.worker_id = '' then
    raise exception 'claim needs a worker_id' using errcode = 'QC106';
  end if;
  if claim.max_tasks is null or claim.max_tasks < 0 then
    raise exception 'invalid max_tasks %: it must be 0 or more', coalesce(claim.max_tasks::text, 'NULL')
      using errcode = 'QC106';
  end if;
  if claim.lease is null or claim.lease <= interval '0' then
    raise exception 'invalid lease %: it must be positive', coalesce(claim.lease::text, 'NULL')
      using errcode = 'QC106';
  end if;
  select s.max_lease into v_max_lease from conductor.settings s where s.one;
  if claim.lease > v_max_lease then
    raise exception 'invalid lease %: at most % (conductor.settings.max_lease)', claim.lease, v_max_lease
      using errcode = 'QC106',
            hint = 'A long task keeps its lease by heartbeating; the lease is how long a lost worker''s task waits to be taken back.';
  end if;
  if claim.queues is not null or claim.kinds is not null then
    perform conductor._check_scope(claim.queues, claim.kinds);
  end if;
  if claim.max_tasks = 0 then
    return;
  end if;

  -- Paused queues and rate limits, see the map: none in the common case, which
  -- this one statement finds; else the scope narrowed, nothing when none is left.
  select exists (select from conductor.paused_queues) or exists (select from conductor.rate_limits),
         exists (select from conductor.subscriptions b where b.topic in ('tasks', '*'))
    into v_controlled, v_followed;
  if v_controlled then
    select c.run_queues, c.run_kinds, c.not_queues, c.not_kinds, c.limited, c.cap
      into v_queues, v_kinds, v_not_queues, v_not_kinds, v_limited, v_cap
      from conductor._claim_controls(claim.queues, claim.kinds, v_now) c;
    if pg_catalog.cardinality(v_queues) = 0 or pg_catalog.cardinality(v_kinds) = 0 then
      return;
    end if;
    v_max := least(claim.max_tasks, v_cap);
  end if;

  if pg_catalog.cardinality(v_queues) = 1 then
    v_one_queue := v_queues[1];
  end if;

  v_keys := conductor._claim_keys(v_queues, v_max, v_now, v_kinds, v_not_queues, v_not_kinds);
  if v_keys is not null
     and pg_catalog.current_setting('transaction_isolation') <> 'read committed' then
    raise exception 'claim needs READ COMMITTED to honour concurrency keys, not %',
      pg_catalog.current_setting('transaction_isolation')
      using errcode = 'QC106';
  end if;

  -- Pick, in claim order, and lock the tasks (one statement per case, each a
  -- plan of its own): the plain cases scan one ready index; with keys, the
  -- tasks of locked keys that have nothing running come in too, one per key.
  if v_keys is null then
    -- Under a pinned xmin horizon, see the map: a remembered position, else the full scan.
    -- (queue names hold no '|' or ','; kind names may, so the kinds go in as a digest)
    v_scope := coalesce(pg_catalog.array_to_string(v_queues, ','), '*')
               || coalesce(';' || pg_catalog.md5(v_kinds::text), '');
    -- a position of other queues or kinds, a strike, or an expired one is not used
    v_pos := conductor._claim_position(claim.worker_id);
    if v_pos.scope = v_scope and not v_limited and v_pos.task_id is not null
       and v_pos.until > extract(epoch from pg_catalog.clock_timestamp()) then
      v_after_priority := v_pos.priority;
      v_after_run_at := v_pos.run_at;
      v_after_id := v_pos.task_id;
      v_until := v_pos.until;
    end if;
    if v_until is not null then
      v_stage := 1;
    end if;
    loop
      v_started := pg_catalog.clock_timestamp();
      if v_one_queue is not null then
        select p.ids, p.seen_ids into v_more, v_more_seen
          from conductor._pick_queue(v_one_queue, v_max - coalesce(pg_catalog.cardinality(v_ids), 0),
                                     v_now, v_stage, v_after_priority, v_after_run_at, v_after_id, v_ids,
                                     v_kinds, v_not_kinds) p;
      else
        select pg_catalog.array_agg(p.id), pg_catalog.array_agg(p.id) filter (where p.started_at is not null)
          into v_more, v_more_seen
          from (select t.id, t.started_at from conductor.tasks t
                 where t.status = 'queued' and t.run_at <= v_now
                   and (v_queues is null or t.queue = any (v_queues))
                   and (v_kinds is null or t.kind = any (v_kinds))
                   and (v_not_queues is null or t.queue <> all (v_not_queues))
                   and (v_not_kinds is null or t.kind <> all (v_not_kinds))
                   and t.concurrency_key is null
                   and case v_stage
                         when 1 then t.priority > v_after_priority
                         when 2 then t.priority = v_after_priority
                                     and (t.run_at, t.id) > (v_after_run_at, v_after_id)
                         else true end
                   and (v_ids is null or t.id <> all (v_ids))
                 order by t.priority desc, t.run_at, t.id
                 limit v_max - coalesce(pg_catalog.cardinality(v_ids), 0)
                   for update skip locked) p;
      end if;
      v_ids := v_ids || v_more;
      v_seen := v_seen || v_more_seen;
      v_stage_last := v_stage_last || v_more[pg_catalog.cardinality(v_more)];
      if v_stage = 3 then
        -- a slow full scan means dead index entries at the head: remember the
        -- position, and scan in full again after 2 s or 20 times this scan's time.
        -- Only when the scan before was slow too (a position or a strike of this
        -- scope): one slow scan alone is as likely the machine pausing this backend.
        v_until := case when pg_catalog.clock_timestamp() - v_started >= conductor._claim_slow_scan()
                        then extract(epoch from pg_catalog.clock_timestamp())
                             + greatest(2, 20 * extract(epoch from pg_catalog.clock_timestamp() - v_started)) end;
        if v_until is not null and v_pos.scope is distinct from v_scope then
          v_until := null;
          v_strike := true;
        end if;
        if v_limited then
          v_until := null;  -- a task trimmed by a rate limit must stay first in line (see the map)
          v_strike := false;
        end if;
        exit;
      end if;
      exit when pg_catalog.cardinality(v_ids) = v_max;
      v_stage := v_stage + 1;
    end loop;
    if v_until is not null and v_ids is not null then
      -- the last task of each stage, not v_ids: 0.6 ms for a claim of 250
      perform conductor._claim_remember(claim.worker_id, v_pos.seq, v_scope, v_stage_last, v_until);
    elsif v_strike then
      perform conductor._claim_remember(claim.worker_id, v_pos.seq, v_scope, null, null);
    elsif v_pos.seq is not null and v_until is null then
      perform conductor._claim_remember(claim.worker_id, null, null, null, null);
    end if;
  else
    select pg_catalog.array_agg(p.id), pg_catalog.array_agg(p.id) filter (where p.started_at is not null)
      into v_ids, v_seen
      from (select p.id, p.started_at,
                   pg_catalog.row_number() over (partition by p.concurrency_key
                                                 order by p.priority desc, p.run_at, p.id) as n,
                   p.concurrency_key
              from (select t.id, t.started_at, t.concurrency_key, t.priority, t.run_at
                      from conductor.tasks t
                     where t.status = 'queued' and t.run_at <= v_now
                       and (v_queues is null or t.queue = any (v_queues))
                       and (v_kinds is null or t.kind = any (v_kinds))
                       and (v_not_queues is null or t.queue <> all (v_not_queues))
                       and (v_not_kinds is null or t.kind <> all (v_not_kinds))
                       and (t.concurrency_key is null
                            or (t.concurrency_key = any (v_keys)
                                and not exists (select from conductor.tasks r
                                                 where r.concurrency_key = t.concurrency_key
                                                   and r.status = 'running')))
                     order by t.priority desc, t.run_at, t.id
                     limit v_max
                       for update skip locked) p) p
     where p.concurrency_key is null or p.n = 1;  -- one task per key
  end if;
  if v_ids is null then
    return;
  end if;
  if v_limited then
    v_ids := conductor._claim_tokens(v_ids, v_now);
    if v_ids is null then
      return;
    end if;
  end if;

  -- the bus (functions/bus): a dashboard following topic 'tasks' sees tasks start, 350 ids
  -- a message (v_followed was read with the controls, one statement for both)
  if v_followed then
    for i in 0 .. (pg_catalog.cardinality(v_ids) - 1) / 350 loop
      perform conductor._publish('tasks', pg_catalog.jsonb_build_object(
        'event', 'running', 'ids', pg_catalog.to_jsonb(v_ids[i * 350 + 1 : (i + 1) * 350])));
    end loop;
  end if;
  return query select * from conductor._lease(v_ids, v_seen, claim.worker_id, v_now + claim.lease, v_now);
end
$$;

comment on function conductor.claim(text, text[], integer, interval, text[]) is
$$Leases up to max_tasks ready tasks to worker_id and returns them, highest priority
first, then earliest run_at, then lowest id. queues NULL means every queue; kinds NULL
means every kind, else only tasks of those kinds are claimed (the kinds the worker has
handlers for): the others stay queued and untouched, for a worker that serves them.
Each row's attempt_id is the fencing token for heartbeat, complete, fail and release.
steps: the task's checkpoints so far ({name: result}), so a resumed run skips them.
The lease (default 60 s, at most conductor.settings.max_lease, 1 hour unless an admin
changed it) must be extended by heartbeat before it expires, or reap() takes the task back.
A task with a timeout is leased until now + least(lease, timeout) at most: its attempt's
deadline is claimed_at + timeout (the row's timeout; NULL: no limit), which neither
heartbeat nor anything else extends. Returns no rows when nothing is ready.
At most one task per concurrency_key runs at a time: a keyed task is claimed only while
no task of its key is running, one per key per claim; the others wait in order and block
no other key or queue.
Raises QC106 for a missing worker_id, negative max_tasks, a lease not positive or over
max_lease (the message names it) (or a
claim of keyed tasks outside READ COMMITTED), QC104 for an empty queue list or one holding
NULL, QC101 for an empty kinds list or one holding NULL.
Nothing is claimed from a paused queue (pause_queue): a claim of paused queues only returns
no rows at once; of several or all queues, the paused ones are left out. A rate limit of a
queue or a kind (set_rate_limit) caps how many of its tasks start: each started task draws
a token from its queue's bucket and its kind's, across every worker; picked tasks that find
none stay queued, untouched, and the claim returns fewer rows (none).
FOR UPDATE SKIP LOCKED: any number of callers at once, none waits for a task, no task goes
to two; claimers of a rate-limited queue or kind wait for each other's commit on its bucket.
Publishes {"event": "running", "ids": [...]} on bus topic 'tasks' when a session subscribes
to it (or to '*').
Tasks of other kinds at the head of a queue are stepped over (a rolling deploy's transient;
reap() dead-letters a kind no live worker serves after unknown_kind_after).
When two full scans in a row are slow (over conductor.settings.claim_slow_scan, default
1 ms: dead index entries under a pinned xmin horizon), the worker's claims go on from where
its last claim stopped (conductor.claim_positions, keyed by worker_id; no session state, so
safe behind a transaction-mode pooler): higher priorities still first, but a task returned to
the queue behind that point waits for the next full scan (2 s, or 20x the last one's time).$$;

revoke execute on function conductor.claim(text, text[], integer, interval, text[]) from public;
grant execute on function conductor.claim(text, text[], integer, interval, text[]) to conductor_worker, conductor_admin;

commit;
