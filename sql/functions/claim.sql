-- Deploy conductor:functions/claim to pg
-- (reworked after v0.2.0; the released body is sql/released/functions/claim@v0.2.0.sql)
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
--   conductor._claim_controls(...)          the scope the operator's controls leave:
--                                           paused queues and dry buckets out (below)
--   conductor._claim_keys(...)              the key probe: locks the slots of keys
--                                           with room under their limits
--   conductor._pick(...)                    the pick, every claim's one: the ready
--                                           tasks of the scope, in claim order, locked;
--                                           the scan position while scans are slow;
--     _pick_queue, _pick_queues, _pick_keyed  its three plan shapes (one queue,
--                                           several or all, with keys)
--   conductor._claim_caps(...)              the queue caps applied to the pick
--   conductor._claim_cap_scope(...)         the scope the queue caps leave: full
--                                           capped queues out (below)
--   conductor._claim_rooms(queues)          the room each capped queue has
--   conductor._claim_tokens(...)            the rate limits applied to the pick
--   conductor._pick_rated(...)              the pick under per-key rate limits
--   conductor._claim_epoch(), _lease(...)   the fencing guard; the lease, the attempt
--                                           rows and the answer
--   conductor._concurrency_slot(key)        the slot row a concurrency key locks
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
-- Code versions (issue 31, schema/code_versions; docs/versioning.md): the
-- kinds rule extended to the code a run started on. A worker that names
-- code_versions (the version it runs, then the older ones it can still
-- replay) records the first on each task it claims that has none
-- (tasks.code_version: the run's steps are that code's), and takes only tasks
-- with no recorded version or one it lists, in every pick (a row filter
-- beside the kinds', conductor._check_code_versions the list's rule, QC123).
-- So a run that waited for days under a deploy resumes on a worker that can
-- replay it, and never on one that cannot. A claim naming none (NULL, an
-- older driver) records nothing and takes any task, as before: the filter's
-- first test, and one coalesce in the lease, is all it pays. A resumed
-- task's answer holds its steps' names in saved order (step_order, by
-- steps.seq), for the worker's replay check (docs/protocol.md).
--
-- Time limits: each task's lease is now + least(lease, task.timeout), so a
-- lease never passes the attempt's deadline (claimed_at + timeout);
-- claimed_task.timeout tells the worker the limit. heartbeat keeps to the same
-- deadline and reap() fails the attempt that reaches it.
--
-- claim is its contract, in this order: validate the arguments; read the
-- controls (one statement; nothing more in the common case) and narrow the
-- scope; probe the keys; pick (conductor._pick: every rule of which tasks a
-- claim may take is the scope's, so a new limit, say of a kind's running
-- tasks, narrows the scope in _claim_controls and trims in a step beside
-- _claim_tokens, as _claim_caps does, and every pick path obeys it); apply the
-- queue caps, then the rate limits; publish; lease.
--
-- Expiry before start (schema/expiry): every pick (and the key probe) passes
-- over a task whose deadline to start (expires_at) is not after claimed_at, a
-- row filter on the heap row that a task without one (expires_at NULL) passes
-- at its first test; the lease clears expires_at, so a task started once never
-- expires. reap() ends the tasks passed over 'expired'. A claim and a reaper
-- meeting on one task at its deadline: each takes the row FOR UPDATE SKIP
-- LOCKED and re-checks it, so exactly one of them changes it.
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
-- Rate limits per key (issue 30, schema/rate_keys: set_rate_limit(per_key =>
-- true), a bucket per value of tasks.rate_key in conductor.rate_key_buckets).
-- A per-key limit is a row of conductor.rate_limits, so the one controls
-- statement finds it as it finds any limit, and the common path (no limit at
-- all) is unchanged. When one applies to the claim's scope,
-- conductor._claim_controls reads the keys' buckets and their whole tokens
-- (without locks) and the pick is conductor._pick_rated: it passes over the
-- tasks of the keys whose bucket holds no whole token (a filter), and takes of
-- each other key no more tasks than its tokens, so neither a dry key's backlog
-- nor a key's tasks beyond its tokens stand in the way of other keys' tasks at
-- the head of the queue.
-- After the pick, conductor._claim_tokens locks, after the queue and kind
-- buckets, the buckets of the picked tasks' keys in (scope, name, key) order
-- (INSERT ... ON CONFLICT DO UPDATE: a missing bucket is made full, an existing
-- one locked as its holder before committed it), keeps in claim order the tasks
-- that find a whole token in every bucket they draw from, and deducts: the
-- starts of every worker together never exceed a key's tokens. reap() forgets
-- the buckets that are full again (conductor._forget_rate_keys), so idle keys
-- leave no rows. A task without a rate_key draws from no key's bucket. With
-- concurrency keys in the same claim (the keyed pick), a key's tasks beyond its
-- tokens are trimmed after the pick instead of passed over: they may take places
-- of the pick, and the claim start fewer.
--
-- Queue caps (conductor.queue_limits, set_queue_limit in functions/controls:
-- at most max_running tasks of a queue running at once across the fleet).
-- The same one statement finds the table empty in the common case. With a cap,
-- conductor._claim_cap_scope (after _claim_controls, when that runs) counts
-- each capped queue's running tasks (conductor._claim_rooms: one scan of the
-- running set through tasks_running, no lock) and leaves a full queue out of
-- the scope, as a dry bucket is; when every queue named is capped the pick
-- takes no more than their room together. After the pick, conductor._claim_caps
-- locks the cap rows of the picked tasks' queues (FOR UPDATE, in queue order),
-- counts their running tasks again in a statement of its own (so it sees every
-- earlier holder's committed claim), and keeps in claim order at most
-- max_running - running of each; the rest stay queued and untouched, and the
-- rate limits are applied to what is kept only (a trimmed task draws no
-- token). Two claimers racing for a queue's last slot take its row one after
-- the other, and the second counts the first's start: the queue's running
-- tasks never exceed its cap. This needs READ COMMITTED (a snapshot per
-- statement; at REPEATABLE READ the count would not see the first claimer's
-- commit), which claim checks when a cap applies (QC106). A capped claim
-- remembers no scan position, as a rate-limited one. Cost: nothing without a
-- cap (one more EXISTS in the controls statement); with one, the running set
-- counted twice per claim of its queue and a wait on its row while another
-- claimer of the queue commits. Its helpers are planned once per connection:
-- planned per call (in _claim_controls) a cap doubled the instructions of a
-- one-task claim and its completion (bench/HISTORY.md).
--
-- Concurrency keys (at most concurrency_limit running tasks per key, 1 unless
-- the task says otherwise; the others stay queued in order and block nothing
-- else): when claim's first statement found a keyed task ready (else nothing
-- of this runs), a statement (conductor._claim_keys) finds candidate keys, from
-- the head of the claim order and from a walk over the distinct ready keys
-- (tasks_ready_by_key, one index descent per key: never a key's backlog), keeps
-- those whose head finds fewer of its key running than its limit, and locks,
-- without waiting (FOR UPDATE SKIP LOCKED, in the heads' claim order, at most
-- max_tasks, passing over a slot another claim holds to the next candidate
-- key), the row of conductor.concurrency_slots of each (schema/coordination:
-- 65536 fixed rows, slot hashtextextended(key, 0) & 65535, read-only to every
-- role, so only another claim can hold one, and no enqueue touches them); a
-- second statement (conductor._pick_keyed), whose snapshot is newer than those
-- locks, counts each locked key's running tasks and takes its first ready
-- tasks in claim order while each finds fewer of its key running (with those
-- taken before it) than its own concurrency_limit. A claimer that made a key's
-- tasks running committed before releasing the slot, so the next holder of the
-- slot sees them running: however many claimers race for a key's last place,
-- one holds the slot and the others pass the key over.
--   Fair turns (always, for keyed tasks: a key is the unit a team shares a
--   queue by, a tenant or a customer, and with one task per key per claim
--   before v0.3.0 a key already had one turn a claim): within a priority, the
--   keyed pick orders its tasks by turn (each key's first ready task, then each
--   key's second, ...; a key's running tasks count as turns it had; an unkeyed
--   task has the first turn), then run_at and id, so a tenant with 100,000
--   tasks queued does not starve one with 10 enqueued after them (Hatchet's
--   group round robin). With more ready keys than a claim's walk reads
--   (2 * max_tasks + 16), the walk starts at a random point of the keys' hash
--   order, so each key's turn comes as often; the head of the claim order is
--   always among the candidates, so a higher priority still goes first. Two keys that share a slot only make a claim
-- pass over the second key's tasks while another claim holds the slot
-- uncommitted. (v0.2.0 took pg_try_advisory_xact_lock on
-- hashtextextended('conductor:concurrency:' || key, 0): any login, with no
-- grant, could hold that key and make the key's tasks unclaimable for ever.)
-- This needs READ COMMITTED (a snapshot per statement), which claim checks
-- when keys are involved.
--   Lock order: concurrency slot rows (SKIP LOCKED, never waited for), then
--   task rows (SKIP LOCKED, never waited for; _pick, with the worker's own
--   claim_positions rows after them, SKIP LOCKED too), then queue cap rows
--   (FOR UPDATE, in queue order), then rate limit buckets (FOR
--   UPDATE, in (scope, name) order, then per-key buckets in (scope, name, key) order: with the cap rows, the only waits in
--   normal running, and every claimer takes them in the same order after
--   everything else, caps before buckets, so claimers cannot deadlock), then,
--   only after a crash recovery, the epoch
--   row (conductor._claim_epoch, below; the one claim writing it holds no
--   lock another claimer waits for while it waits). Nothing a client or a
--   session outside the engine holds is waited for.
--
-- Index use: one queue -> tasks_ready_by_queue (equality, then the claim
-- order); several or all queues -> tasks_ready (the claim order) with a filter.
-- Picking is one small statement per case (one queue, several, or with
-- concurrency keys), so each has a plan of its own. The pick from several or
-- all queues (conductor._pick_queues), or with keys (conductor._pick_keyed),
-- and the controls' helpers are planned afresh on every call
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
-- every call was a fifth of the database's time in bench (d). claim's own
-- statements (the calls of these helpers, the settings and controls reads) are
-- planned once too (force_generic_plan): planning them per call, and the
-- helpers without a setting of their own that inherited it (now(),
-- _check_scope), cost a quarter of a one-task claim's CPU; _pick inherits it
-- too. Of claim's and _pick's own statements only claim's first reads
-- conductor.tasks: whether any keyed task is ready, one descent of the partial
-- index tasks_ready_keyed (claim runs with sequential scans off, so that plan
-- stays an index probe too).
--
-- Durability (durable => false, schema/claim_epoch): a worker's claim need not
-- wait for its WAL flush; its reports (complete, fail) always do, and each
-- makes every claim before it durable too (WAL is flushed in order). What a
-- crash may lose is a claim whose holder then reports under an attempt id
-- that no longer exists (refused, QC203), and the sequence's advance: the
-- first claim after crash recovery (which empties the unlogged
-- conductor.claim_epoch) moves attempts_id_seq 10^9 ahead and commits durably
-- (conductor._claim_epoch), so no fencing token is handed out twice. This
-- holds for a claim made with synchronous_commit off by the server's or the
-- session's setting too, which before v0.3.0 could hand a lost claim's token
-- to the next claimer after a crash.
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

-- code_versions is new (the last parameter, issue 31): the six-parameter claim of
-- databases deployed before it goes.
drop function if exists conductor.claim(text, text[], integer, interval, text[], boolean);
drop function if exists conductor._claim_keys(text[], integer, timestamptz, text[], text[], text[]);
drop function if exists conductor._pick(text, text[], text[], text[], text[], text[], integer, timestamptz, boolean);
drop function if exists conductor._pick_queue(text, integer, timestamptz, integer, integer, timestamptz, bigint, bigint[], text[], text[]);
drop function if exists conductor._pick_queues(text[], text[], text[], text[], integer, timestamptz, integer, integer, timestamptz, bigint, bigint[]);
drop function if exists conductor._pick_keyed(text[], text[], text[], text[], text[], integer, timestamptz);
drop function if exists conductor._pick_rated(text[], text[], text[], text[], text[], text[], integer[], text[], integer[], integer, timestamptz);
drop function if exists conductor._lease(bigint[], bigint[], text, timestamptz, timestamptz);

-- kinds is new (the last parameter): v0.1.0's four-parameter claim goes, and
-- with it the helpers whose signatures gained kinds. durable is new after
-- v0.2.0 (the last parameter): v0.2.0's five-parameter claim goes, or a call
-- naming only those five would match both.
drop function if exists conductor.claim(text, text[], integer, interval, text[]);

-- conductor.claimed_task, what claim returns, is created by functions/claim@v0.1.0;
-- schema/fleet added timeout, schema/traceparent the enqueuer's trace context.

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

-- The rule for the code versions a worker names (claim's code_versions, issue 31):
-- NULL declares none; a list names at least one, each 1-100 characters without
-- surrounding spaces, hidden characters or markup (as a kind name: it is shown on
-- the dashboard and in errors). One SQLSTATE, QC123, the message echoing the list.
create or replace function conductor._check_code_versions(code_versions text[]) returns void
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if pg_catalog.cardinality(_check_code_versions.code_versions) = 0
     or exists (select from pg_catalog.unnest(_check_code_versions.code_versions) v(name)
                 where v.name is null or v.name = '' or v.name <> pg_catalog.btrim(v.name)
                    or pg_catalog.length(v.name) > 100
                    or v.name ~ ('[' || conductor._hidden_char_class() || '<>&"''`]')) then
    raise exception 'invalid code_versions %: name the version the worker runs, then those it can still replay, each 1-100 characters without surrounding spaces, control or format characters or markup; or pass NULL',
      conductor._echo(_check_code_versions.code_versions::text)
      using errcode = 'QC123';
  end if;
end
$$;

comment on function conductor._check_code_versions(text[]) is
$$The rule for a worker's code_versions list (claim): at least one name, none NULL or empty,
each at most 100 characters, without surrounding spaces, control characters, format characters
or markup (< > & " ' `). Raises QC123 echoing the list (conductor._echo); NULL is not checked
(a worker that declares no version).$$;

revoke execute on function conductor._check_code_versions(text[]) from public;

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

-- The row of conductor.concurrency_slots (schema/coordination) that stands for
-- a concurrency key: one of 65536 fixed rows, so a claim never inserts one.
create or replace function conductor._concurrency_slot(key text) returns integer
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select (pg_catalog.hashtextextended(_concurrency_slot.key, 0) & 65535)::integer
$$;

comment on function conductor._concurrency_slot(text) is
$$The row of conductor.concurrency_slots that claim locks for concurrency key key:
hashtextextended(key, 0) & 65535.$$;

revoke execute on function conductor._concurrency_slot(text) from public;

-- The keys a claim may use (see the map): candidate keys from two sources, each
-- read one index descent at a time, never a key's backlog: (a) the keys of the
-- first max_tasks + 16 ready keyed tasks in claim order (the highest priority
-- and the oldest), and (b) a walk over the distinct keys of tasks_ready_by_key
-- (a skip scan: one descent per key, in the order of hashtextextended(key, 0),
-- starting at a random point and wrapping round, at most 2 * max_tasks + 16
-- keys), so that a key whose tasks stand behind another key's 100,000 is
-- found too. For each candidate key, its head (its first ready task in the
-- claim's scope, in claim order: one descent of tasks_ready_by_key); a key is
-- kept while fewer of its tasks run than its head's concurrency_limit (a count
-- of tasks_running_keyed stopping at the limit). The slot rows of the kept
-- keys are locked in the heads' claim order without waiting, at most
-- max_tasks (a slot another claimer holds is skipped, and with it its keys,
-- and the next candidate's is tried: two claimers of the same queue get
-- different keys rather than the second none). NULL when there are none, the
-- common case.
--
-- Planned once per connection, as a generic plan: every read is an index
-- descent bounded by a limit (bitmap scans off), and the running count is a
-- probe of tasks_running_keyed per candidate (a subquery kept apart by offset
-- 0: as an anti-join, the plan made while few tasks ran read every running
-- keyed task for each candidate). v0.2.0's probe had neither: with 100,000
-- ready keyed tasks and 100 running, a claim of 50 spent 2 s in it, its bitmap
-- scan sorting every ready keyed task and its anti-join reading every running
-- one per candidate (bench/keys.sh). v0.3.0's first probe walked the ready
-- keyed tasks in claim order: behind one key's backlog whose key was full it
-- stepped over every task of that key.
create or replace function conductor._claim_keys(queues text[], max_tasks integer, claimed_at timestamptz,
                                                 kinds text[] default null, not_queues text[] default null,
                                                 not_kinds text[] default null,
                                                 code_versions text[] default null)
  returns text[]
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set enable_seqscan = off
  set jit = off
  set enable_hashjoin = off
  set enable_mergejoin = off
  set enable_bitmapscan = off
as $$
declare
  -- where the walk over keys starts: a random point of the hash order, so that
  -- with more ready keys than one walk reads, each key's turn comes as often
  v_start bigint := ((pg_catalog.random() - 0.5) * 1.8e19)::bigint;
begin
  return (
  with recursive walk (h, key, wrapped, steps) as (
    -- (b): the first key at or after v_start, else (wrapped) the first of all
    select f.h, f.key, f.wrapped, 1
      from ((select pg_catalog.hashtextextended(t.concurrency_key, 0) as h, t.concurrency_key as key,
                    false as wrapped
               from conductor.tasks t
              where t.status = 'queued' and t.concurrency_key is not null
                and (pg_catalog.hashtextextended(t.concurrency_key, 0), t.concurrency_key) >= (v_start, '')
              order by 1, 2
              limit 1)
            union all
            (select pg_catalog.hashtextextended(t.concurrency_key, 0), t.concurrency_key, true
               from conductor.tasks t
              where t.status = 'queued' and t.concurrency_key is not null
              order by 1, 2
              limit 1)
            limit 1) f
    union all
    -- the next key, one descent; after the last, the first (once), up to v_start
    select nx.h, nx.key, nx.wrapped, w.steps + 1
      from walk w
     cross join lateral (
       (select pg_catalog.hashtextextended(t.concurrency_key, 0) as h, t.concurrency_key as key, w.wrapped
          from conductor.tasks t
         where t.status = 'queued' and t.concurrency_key is not null
           and (pg_catalog.hashtextextended(t.concurrency_key, 0), t.concurrency_key) > (w.h, w.key)
           and (not w.wrapped
                or (pg_catalog.hashtextextended(t.concurrency_key, 0), t.concurrency_key) < (v_start, ''))
         order by 1, 2
         limit 1)
       union all
       (select pg_catalog.hashtextextended(t.concurrency_key, 0), t.concurrency_key, true
          from conductor.tasks t
         where not w.wrapped and t.status = 'queued' and t.concurrency_key is not null
           and (pg_catalog.hashtextextended(t.concurrency_key, 0), t.concurrency_key) < (v_start, '')
         order by 1, 2
         limit 1)
       limit 1) nx
     where w.steps < 2 * _claim_keys.max_tasks + 16
  ), found as (
    select w.key from walk w
    union
    -- (a): the keys at the head of the claim order
    select f.key
      from (select t.concurrency_key as key
              from conductor.tasks t
             where t.status = 'queued' and t.concurrency_key is not null and t.run_at <= _claim_keys.claimed_at
               and (t.expires_at is null or t.expires_at > _claim_keys.claimed_at)
               and (_claim_keys.queues is null or t.queue = any (_claim_keys.queues))
               and (_claim_keys.kinds is null or t.kind = any (_claim_keys.kinds))
               and (_claim_keys.not_queues is null or t.queue <> all (_claim_keys.not_queues))
               and (_claim_keys.not_kinds is null or t.kind <> all (_claim_keys.not_kinds))
               and (_claim_keys.code_versions is null or t.code_version is null or t.code_version = any (_claim_keys.code_versions))
             order by t.priority desc, t.run_at, t.id
             limit _claim_keys.max_tasks + 16) f
  ), c as materialized (
    -- each key's head in the claim's scope, kept while fewer of its key run than its limit
    select f.key, conductor._concurrency_slot(f.key) as slot,
           pg_catalog.row_number() over (order by hd.priority desc, hd.run_at, hd.id) as n
      from found f
     cross join lateral (
       select t.id, t.priority, t.run_at, coalesce(t.concurrency_limit, 1) as lim
         from conductor.tasks t
        where t.status = 'queued' and t.concurrency_key is not null
          and pg_catalog.hashtextextended(t.concurrency_key, 0) = pg_catalog.hashtextextended(f.key, 0)
          and t.concurrency_key = f.key
          and t.run_at <= _claim_keys.claimed_at
          and (t.expires_at is null or t.expires_at > _claim_keys.claimed_at)
          and (_claim_keys.queues is null or t.queue = any (_claim_keys.queues))
          and (_claim_keys.kinds is null or t.kind = any (_claim_keys.kinds))
          and (_claim_keys.not_queues is null or t.queue <> all (_claim_keys.not_queues))
          and (_claim_keys.not_kinds is null or t.kind <> all (_claim_keys.not_kinds))
          and (_claim_keys.code_versions is null or t.code_version is null or t.code_version = any (_claim_keys.code_versions))
        order by pg_catalog.hashtextextended(t.concurrency_key, 0), t.concurrency_key, t.priority desc, t.run_at, t.id
        limit 1) hd
     -- offset 0: a probe of the key per candidate, stopping at its limit, never an anti-join
     where (select pg_catalog.count(*)
              from (select from conductor.tasks r
                     where r.concurrency_key = f.key and r.status = 'running'
                     limit hd.lim offset 0) r) < hd.lim
     order by hd.priority desc, hd.run_at, hd.id
     limit 2 * _claim_keys.max_tasks + 16
  ), locked as materialized (
    select s.slot from conductor.concurrency_slots s
      join (select c.slot, pg_catalog.min(c.n) as n from c group by c.slot) o on o.slot = s.slot
     order by o.n
     limit _claim_keys.max_tasks
       for update of s skip locked
  )
  select pg_catalog.array_agg(distinct c.key) from c where c.slot in (select locked.slot from locked));
end
$$;

comment on function conductor._claim_keys(text[], integer, timestamptz, text[], text[], text[], text[]) is
$$claim's key probe: candidate keys from the first max_tasks + 16 ready keyed tasks of queues
and kinds (NULL: every one), none of not_queues and not_kinds, in claim order, and from a
walk over the distinct ready keys (tasks_ready_by_key, one descent per key from a random
point of their hash order, at most 2 * max_tasks + 16); keeps the keys whose head (first
ready task in scope, claim order) finds fewer of its key running than its concurrency_limit
(NULL: 1); locks the rows of conductor.concurrency_slots (conductor._concurrency_slot) of
those keys in their heads' claim order, FOR UPDATE SKIP LOCKED, at most max_tasks (a slot
another claimer holds is passed over for the next; no session outside the engine can lock a
slot), and returns the keys whose slot it locked. NULL when there are none. Planned once per
connection (index descents only, none reading a key's backlog). claim calls it only when a
keyed task is ready (its first statement looks; the common case, none, costs no call).
code_versions (NULL: any): only tasks with no code_version or one it lists (a row filter, as kinds).$$;

revoke execute on function conductor._claim_keys(text[], integer, timestamptz, text[], text[], text[], text[]) from public;

-- The pick, every claim's one (see the map): up to max_tasks ready tasks of
-- the claim's scope, unkeyed or of the keys the probe locked, in claim order,
-- locked FOR UPDATE SKIP LOCKED; returns their ids and, of those, the ones
-- claimed before (seen_ids, whose steps the lease looks up). The scope
-- (queues and kinds, less not_queues and not_kinds) is decided before, once,
-- by claim and _claim_controls: a new limit narrows it there and every path
-- obeys it. Without keys, the pick goes on from the worker's remembered
-- position while full scans are slow (the map: stages 1, 2, then 3, each only
-- when the one before found too few) and remembers a position, a strike or
-- nothing for the next claim; never when a rate limit may trim it (limited).
--
-- Its statements are three plan shapes, one function each because each needs
-- planner settings of its own: _pick_queue (one queue, planned once per
-- connection on tasks_ready_by_queue), _pick_queues (several or all queues,
-- planned per call) and _pick_keyed (keys, planned per call, scans off). Each
-- spells the ready rule (queued, due, in scope, unkeyed or of a locked key);
-- sql/tests/claim/every_pick_path_keeps_to_the_scope.sql holds them to one
-- reading of it. Its own statements (the position's read and memory, the
-- calls of the shapes) run under claim's settings, its one caller's
-- (force_generic_plan, jit off): a setting of its own would cost every claim
-- another save and restore of the setting.
create or replace function conductor._pick(
  worker_id    text,
  queues       text[],
  kinds        text[],
  not_queues   text[],
  not_kinds    text[],
  keys         text[],
  max_tasks    integer,
  claimed_at   timestamptz,
  limited      boolean,
  code_versions text[] default null,
  out ids      bigint[],
  out seen_ids bigint[])
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_scope text;
  v_pos conductor.claim_positions;  -- the worker's newest row (see the map), or NULLs
  v_until double precision;
  v_stage integer := 3;  -- 1: above the position's priority, 2: after the position, 3: full scan
  v_started timestamptz;
  v_got record;  -- a plan shape's ids and seen_ids (called as a simple expression, as claim calls _pick)
  v_strike boolean := false;
  v_stage_last bigint[];  -- the last task each stage picked (each pick is in claim order)
begin
  if _pick.keys is not null then
    v_got := conductor._pick_keyed(_pick.queues, _pick.kinds, _pick.not_queues, _pick.not_kinds, _pick.keys,
                                   _pick.max_tasks, _pick.claimed_at, _pick.code_versions);
    ids := v_got.ids;
    seen_ids := v_got.seen_ids;
    return;
  end if;

  -- a position of other queues or kinds, a strike, or an expired one is not used
  -- (queue names hold no '|' or ','; kind names may, so the kinds go in as a digest)
  v_scope := coalesce(pg_catalog.array_to_string(_pick.queues, ','), '*')
             || coalesce(';' || pg_catalog.md5(_pick.kinds::text), '')
             || coalesce(';v' || pg_catalog.md5(_pick.code_versions::text), '');
  v_pos := conductor._claim_position(_pick.worker_id);
  if v_pos.scope = v_scope and not _pick.limited and v_pos.task_id is not null
     and v_pos.until > extract(epoch from pg_catalog.clock_timestamp()) then
    v_until := v_pos.until;
    v_stage := 1;
  end if;
  loop
    v_started := pg_catalog.clock_timestamp();
    if pg_catalog.cardinality(_pick.queues) = 1 then
      v_got := conductor._pick_queue(_pick.queues[1], _pick.max_tasks - coalesce(pg_catalog.cardinality(ids), 0),
                                     _pick.claimed_at, v_stage, v_pos.priority, v_pos.run_at, v_pos.task_id, ids,
                                     _pick.kinds, _pick.not_kinds, _pick.code_versions);
    else
      v_got := conductor._pick_queues(_pick.queues, _pick.kinds, _pick.not_queues, _pick.not_kinds,
                                      _pick.max_tasks - coalesce(pg_catalog.cardinality(ids), 0), _pick.claimed_at,
                                      v_stage, v_pos.priority, v_pos.run_at, v_pos.task_id, ids, _pick.code_versions);
    end if;
    ids := ids || v_got.ids;
    seen_ids := seen_ids || v_got.seen_ids;
    v_stage_last := v_stage_last || v_got.ids[pg_catalog.cardinality(v_got.ids)];
    if v_stage = 3 then
      -- a slow full scan means dead index entries at the head: remember the
      -- position, and scan in full again after 2 s or 20 times this scan's time.
      -- Only when the scan before was slow too (a position or a strike of this
      -- scope): one slow scan alone is as likely the machine pausing this backend.
      v_until := case when pg_catalog.clock_timestamp() - v_started >= conductor._claim_slow_scan()
                      then (extract(epoch from pg_catalog.clock_timestamp())
                           + greatest(2, 20 * extract(epoch from pg_catalog.clock_timestamp() - v_started)))::double precision end;
      if v_until is not null and v_pos.scope is distinct from v_scope then
        v_until := null;
        v_strike := true;
      end if;
      if _pick.limited then
        v_until := null;  -- a task trimmed by a rate limit must stay first in line (see the map)
        v_strike := false;
      end if;
      exit;
    end if;
    exit when pg_catalog.cardinality(ids) = _pick.max_tasks;
    v_stage := v_stage + 1;
  end loop;
  if v_until is not null and ids is not null then
    -- the last task of each stage, not ids: 0.6 ms for a claim of 250
    perform conductor._claim_remember(_pick.worker_id, v_pos.seq, v_scope, v_stage_last, v_until);
  elsif v_strike then
    perform conductor._claim_remember(_pick.worker_id, v_pos.seq, v_scope, null, null);
  elsif v_pos.seq is not null and v_until is null then
    perform conductor._claim_remember(_pick.worker_id, null, null, null, null);
  end if;
end
$$;

comment on function conductor._pick(text, text[], text[], text[], text[], text[], integer, timestamptz, boolean, text[]) is
$$claim's pick, the one every claim takes: locks up to max_tasks ready tasks due by
claimed_at of queues and kinds (NULL: every one), none of not_queues and not_kinds, that are
unkeyed or (keys given) of keys with room under their concurrency_limit (in turns across
the keys: conductor._pick_keyed), FOR UPDATE SKIP LOCKED, and returns their ids in claim order and, of those, the ones claimed before (seen_ids).
Without keys, goes on from worker_id's remembered position while full scans are slow
(conductor.claim_positions) and updates it; limited (a rate limit may trim the pick):
remembers no position. Never waits.
code_versions (NULL: any): only tasks with no code_version or one it lists (a row filter, as kinds).$$;

revoke execute on function conductor._pick(text, text[], text[], text[], text[], text[], integer, timestamptz, boolean, text[]) from public;

-- The pick from one queue: up to max_tasks ready unkeyed tasks of the queue
-- (of kinds, when given: a row filter, see the map), in claim order, locked.
-- Stage 3 (the default) scans the queue from its head, leaving out taken_ids;
-- from a remembered position, stage 1 takes the tasks of higher priority than
-- the position's and stage 2 the ones after it at its priority (see the map
-- at the top). One statement for stages 1 and 3 (a priority bound that ends
-- stage 1's scan, and none of the queue's tasks for stage 3) and one for stage
-- 2 (the position, whose bound reaches the index only after an equality on
-- priority), so that each has a plan whose index bounds are the stage's,
-- planned once per connection: planned per call, the position's picks cost
-- 0.2 ms of planning each under a pinned horizon, where every claim makes them.
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
  code_versions  text[] default null,
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
  if _pick_queue.stage = 2 then
    select pg_catalog.array_agg(p.id), pg_catalog.array_agg(p.id) filter (where p.started_at is not null)
      into _pick_queue.ids, _pick_queue.seen_ids
      from (select t.id, t.started_at from conductor.tasks t
             where t.status = 'queued' and t.queue = any (array[_pick_queue.queue])
               and t.priority = _pick_queue.after_priority
               and (t.run_at, t.id) > (_pick_queue.after_run_at, _pick_queue.after_id)
               and t.run_at <= _pick_queue.claimed_at and t.concurrency_key is null
               and (t.expires_at is null or t.expires_at > _pick_queue.claimed_at)
               and (_pick_queue.kinds is null or t.kind = any (_pick_queue.kinds))
               and (_pick_queue.not_kinds is null or t.kind <> all (_pick_queue.not_kinds))
               and (_pick_queue.code_versions is null or t.code_version is null or t.code_version = any (_pick_queue.code_versions))
             order by t.queue, t.priority desc, t.run_at, t.id
             limit _pick_queue.max_tasks
               for update skip locked) p;
    return;
  end if;
  -- stage 1 ends the scan at the position's priority; stage 3 reads on to the
  -- queue's end (a bound below every integer: priority is an integer, the bound
  -- a bigint, a comparison the index takes)
  select pg_catalog.array_agg(p.id), pg_catalog.array_agg(p.id) filter (where p.started_at is not null)
    into _pick_queue.ids, _pick_queue.seen_ids
    from (select t.id, t.started_at from conductor.tasks t
           where t.status = 'queued' and t.queue = any (array[_pick_queue.queue])
             and t.priority > case when _pick_queue.stage = 1 then _pick_queue.after_priority::bigint
                                   else -2147483649::bigint end
             and t.run_at <= _pick_queue.claimed_at and t.concurrency_key is null
             and (t.expires_at is null or t.expires_at > _pick_queue.claimed_at)
             and (_pick_queue.taken_ids is null or t.id <> all (_pick_queue.taken_ids))
             and (_pick_queue.kinds is null or t.kind = any (_pick_queue.kinds))
             and (_pick_queue.not_kinds is null or t.kind <> all (_pick_queue.not_kinds))
             and (_pick_queue.code_versions is null or t.code_version is null or t.code_version = any (_pick_queue.code_versions))
           order by t.queue, t.priority desc, t.run_at, t.id
           limit _pick_queue.max_tasks
             for update skip locked) p;
end
$$;

comment on function conductor._pick_queue(text, integer, timestamptz, integer, integer, timestamptz, bigint, bigint[], text[], text[], text[]) is
$$claim's pick from one queue: locks up to max_tasks ready unkeyed tasks of queue due by
claimed_at and not past their deadline to start (expires_at) by then (of kinds only, when given, and of none of not_kinds: row filters), FOR UPDATE SKIP LOCKED, and returns
their ids in claim order and, of those, the ones claimed before (seen_ids). stage 3 (default): from the queue's head, leaving out taken_ids; from
a remembered position, stage 1: priority above after_priority; stage 2: at after_priority,
after (after_run_at, after_id). Planned once per connection, always a scan of
tasks_ready_by_queue bounded by the stage.
code_versions (NULL: any): only tasks with no code_version or one it lists (a row filter, as kinds).$$;

revoke execute on function conductor._pick_queue(text, integer, timestamptz, integer, integer, timestamptz, bigint, bigint[], text[], text[], text[]) from public;

-- The pick from several queues, or all: up to max_tasks ready unkeyed tasks of
-- queues (NULL: every queue) and kinds, none of not_queues and not_kinds, in
-- claim order, locked; the stages as _pick_queue's. Planned on every call
-- (force_custom_plan): which index serves best, tasks_ready or
-- tasks_ready_by_queue, depends on the queues' sizes, and a position's bounds
-- must reach the index (bench/stale_plans.py: a generic plan made on a small
-- table was 5-200x slower once it grew).
create or replace function conductor._pick_queues(
  queues         text[],
  kinds          text[],
  not_queues     text[],
  not_kinds      text[],
  max_tasks      integer,
  claimed_at     timestamptz,
  stage          integer default 3,
  after_priority integer default null,
  after_run_at   timestamptz default null,
  after_id       bigint default null,
  taken_ids      bigint[] default null,
  code_versions  text[] default null,
  out ids        bigint[],
  out seen_ids   bigint[])
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_custom_plan
  set jit = off
as $$
begin
  select pg_catalog.array_agg(p.id), pg_catalog.array_agg(p.id) filter (where p.started_at is not null)
    into _pick_queues.ids, _pick_queues.seen_ids
    from (select t.id, t.started_at from conductor.tasks t
           where t.status = 'queued' and t.run_at <= _pick_queues.claimed_at
             and (t.expires_at is null or t.expires_at > _pick_queues.claimed_at)
             and (_pick_queues.queues is null or t.queue = any (_pick_queues.queues))
             and (_pick_queues.kinds is null or t.kind = any (_pick_queues.kinds))
             and (_pick_queues.not_queues is null or t.queue <> all (_pick_queues.not_queues))
             and (_pick_queues.not_kinds is null or t.kind <> all (_pick_queues.not_kinds))
             and (_pick_queues.code_versions is null or t.code_version is null or t.code_version = any (_pick_queues.code_versions))
             and t.concurrency_key is null
             and case _pick_queues.stage
                   when 1 then t.priority > _pick_queues.after_priority
                   when 2 then t.priority = _pick_queues.after_priority
                               and (t.run_at, t.id) > (_pick_queues.after_run_at, _pick_queues.after_id)
                   else true end
             and (_pick_queues.taken_ids is null or t.id <> all (_pick_queues.taken_ids))
           order by t.priority desc, t.run_at, t.id
           limit _pick_queues.max_tasks
             for update skip locked) p;
end
$$;

comment on function conductor._pick_queues(text[], text[], text[], text[], integer, timestamptz, integer, integer, timestamptz, bigint, bigint[], text[]) is
$$claim's pick from several queues or all (queues NULL): locks up to max_tasks ready unkeyed
tasks due by claimed_at and not past their deadline to start (expires_at) by then, of kinds (NULL: every one) and none of not_queues and not_kinds,
FOR UPDATE SKIP LOCKED, and returns their ids in claim order and, of those, the ones claimed
before (seen_ids). stage 3 (default): from the head, leaving out taken_ids; from a
remembered position, stage 1: priority above after_priority; stage 2: at after_priority,
after (after_run_at, after_id). Planned on every call: the best index depends on the
queues' sizes.
code_versions (NULL: any): only tasks with no code_version or one it lists (a row filter, as kinds).$$;

revoke execute on function conductor._pick_queues(text[], text[], text[], text[], integer, timestamptz, integer, integer, timestamptz, bigint, bigint[], text[]) from public;

-- The pick with concurrency keys (see the map): up to max_tasks ready tasks, the
-- unkeyed ones of the scope and the tasks of keys (the ones the probe locked),
-- locked, in fair order: by priority, then by turn (a key's first task, then
-- every key's second, ...; a key's running tasks count as turns it had, so a
-- key with none running goes before one with three; an unkeyed task has the
-- first turn), then run_at and id. For each key: the tasks of it running now (counted on
-- tasks_running_keyed, stopping at 10000), and its first tasks in claim order,
-- read from the key's head in tasks_ready_by_key, as many as its head's
-- concurrency_limit leaves (and at most max_tasks); of those, in order, the ones
-- that find fewer of their key running than their own limit (counting those
-- before them in this pick), stopping at the first that does not: a key's
-- tasks start in claim order. The unkeyed tasks come from a ready index in
-- claim order: of its first max_tasks unkeyed or of keys, the unkeyed ones
-- (tasks of other keys are stepped over, as v0.2.0's pick did). Candidates are
-- read without locks; only the max_tasks chosen are then locked (FOR UPDATE
-- SKIP LOCKED): locking every candidate, up to each key's limit, locked four
-- rows for each one taken with 64 keys of limit 4 (bench/keys.sh, limited). Planned per
-- call (which ready index serves the unkeyed tasks depends on the queues, as
-- for the pick from several queues), but sequential and bitmap scans and sorts
-- are off, so each read is an index in order stopping at its limit: no key's
-- backlog is read past what it may start. (v0.2.0's planner, estimating a handful of rows for keys, read the
-- whole queue instead: a bitmap or sequential scan and a sort, 75 ms for 50
-- tasks with 200,000 keyed tasks ready, bench/keys.sh.)
create or replace function conductor._pick_keyed(
  queues        text[],
  kinds         text[],
  not_queues    text[],
  not_kinds     text[],
  keys          text[],
  max_tasks     integer,
  claimed_at    timestamptz,
  code_versions text[] default null,
  out ids       bigint[],
  out seen_ids  bigint[])
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_custom_plan
  set enable_seqscan = off
  set enable_bitmapscan = off
  set enable_sort = off
  set jit = off
as $$
begin
  with k as materialized (
    -- each locked key: its running tasks and its head's limit (this statement's
    -- snapshot is newer than the slot locks: every claim of the key before is seen)
    select u.key, pg_catalog.hashtextextended(u.key, 0) as h,
           (select pg_catalog.count(*)
              from (select from conductor.tasks r
                     where r.concurrency_key = u.key and r.status = 'running' limit 10000 offset 0) r)::integer
             as running,
           (select coalesce(t.concurrency_limit, 1)
              from conductor.tasks t
             where t.status = 'queued' and t.concurrency_key is not null
               and pg_catalog.hashtextextended(t.concurrency_key, 0) = pg_catalog.hashtextextended(u.key, 0)
               and t.concurrency_key = u.key and t.run_at <= _pick_keyed.claimed_at
               and (t.expires_at is null or t.expires_at > _pick_keyed.claimed_at)
               and (_pick_keyed.queues is null or t.queue = any (_pick_keyed.queues))
               and (_pick_keyed.kinds is null or t.kind = any (_pick_keyed.kinds))
               and (_pick_keyed.not_queues is null or t.queue <> all (_pick_keyed.not_queues))
               and (_pick_keyed.not_kinds is null or t.kind <> all (_pick_keyed.not_kinds))
               and (_pick_keyed.code_versions is null or t.code_version is null or t.code_version = any (_pick_keyed.code_versions))
             order by pg_catalog.hashtextextended(t.concurrency_key, 0), t.concurrency_key, t.priority desc,
                      t.run_at, t.id
             limit 1) as head_limit
      from pg_catalog.unnest(_pick_keyed.keys) as u(key)
  ), keyed as (
    select c.id, c.started_at, c.priority, c.run_at,
           -- its turn: the key's running tasks count as turns it had
           c.running + pg_catalog.row_number() over (partition by c.key, c.priority order by c.run_at, c.id) as turn,
           -- a key's tasks start in claim order: each while fewer of its key run than its own limit
           pg_catalog.bool_and(c.running + c.rank <= c.lim) over (partition by c.key order by c.rank) as fits
      from (select k.key, k.running, t.id, t.started_at, t.priority, t.run_at, coalesce(t.concurrency_limit, 1) as lim,
                   pg_catalog.row_number() over (partition by k.key order by t.priority desc, t.run_at, t.id) as rank
              from k
             cross join lateral (
               -- read, not locked: only the tasks chosen below are (the caller holds the key's slot)
               select t.id, t.started_at, t.priority, t.run_at, t.concurrency_limit
                 from conductor.tasks t
                where t.status = 'queued' and t.concurrency_key is not null
                  and pg_catalog.hashtextextended(t.concurrency_key, 0) = k.h
                  and t.concurrency_key = k.key and t.run_at <= _pick_keyed.claimed_at
                  and (t.expires_at is null or t.expires_at > _pick_keyed.claimed_at)
                  and (_pick_keyed.queues is null or t.queue = any (_pick_keyed.queues))
                  and (_pick_keyed.kinds is null or t.kind = any (_pick_keyed.kinds))
                  and (_pick_keyed.not_queues is null or t.queue <> all (_pick_keyed.not_queues))
                  and (_pick_keyed.not_kinds is null or t.kind <> all (_pick_keyed.not_kinds))
                  and (_pick_keyed.code_versions is null or t.code_version is null or t.code_version = any (_pick_keyed.code_versions))
                order by pg_catalog.hashtextextended(t.concurrency_key, 0), t.concurrency_key, t.priority desc,
                         t.run_at, t.id
                limit greatest(0, least(_pick_keyed.max_tasks, coalesce(k.head_limit, 0) - k.running))) t) c
  ), unkeyed as (
    -- the first max_tasks tasks in claim order that are unkeyed or of keys (no
    -- index holds the unkeyed ones alone: the keys' tasks end the scan as soon as
    -- the unkeyed would), of which the unkeyed; read, not locked
    select u.id, u.started_at, u.priority, u.run_at
      from (select t.id, t.started_at, t.priority, t.run_at, t.concurrency_key
              from conductor.tasks t
             where t.status = 'queued' and t.run_at <= _pick_keyed.claimed_at
               and (t.concurrency_key is null or t.concurrency_key = any (_pick_keyed.keys))
               and (t.expires_at is null or t.expires_at > _pick_keyed.claimed_at)
               and (_pick_keyed.queues is null or t.queue = any (_pick_keyed.queues))
               and (_pick_keyed.kinds is null or t.kind = any (_pick_keyed.kinds))
               and (_pick_keyed.not_queues is null or t.queue <> all (_pick_keyed.not_queues))
               and (_pick_keyed.not_kinds is null or t.kind <> all (_pick_keyed.not_kinds))
               and (_pick_keyed.code_versions is null or t.code_version is null or t.code_version = any (_pick_keyed.code_versions))
             order by t.priority desc, t.run_at, t.id
             limit _pick_keyed.max_tasks) u
     where u.concurrency_key is null
  ), chosen as materialized (
    select a.* from (select kd.id, kd.started_at, kd.priority, kd.run_at, kd.turn from keyed kd where kd.fits
                     union all
                     select u.id, u.started_at, u.priority, u.run_at, 1 from unkeyed u) a
     order by a.priority desc, a.turn, a.run_at, a.id
     limit _pick_keyed.max_tasks
  ), locked as (
    -- only the chosen rows are locked: one a concurrent claim (of an unkeyed task) or
    -- a cancel holds, or that stopped being queued, is left out, and the claim takes fewer
    select t.id from conductor.tasks t
     where t.id = any (array(select c.id from chosen c)) and t.status = 'queued'
       for update skip locked
  )
  select pg_catalog.array_agg(p.id order by p.priority desc, p.turn, p.run_at, p.id),
         pg_catalog.array_agg(p.id order by p.priority desc, p.turn, p.run_at, p.id)
           filter (where p.started_at is not null)
    into _pick_keyed.ids, _pick_keyed.seen_ids
    from chosen p
   where p.id in (select l.id from locked l);
end
$$;

comment on function conductor._pick_keyed(text[], text[], text[], text[], text[], integer, timestamptz, text[]) is
$$claim's pick with concurrency keys: locks up to max_tasks ready tasks due by claimed_at, not
past their deadline to start (expires_at) by then, of
queues and kinds (NULL: every one), none of not_queues and not_kinds, FOR UPDATE SKIP LOCKED:
unkeyed ones, and of each of keys (whose slots the caller holds) its first tasks in claim
order while each finds fewer of its key running (with those before it) than its own
concurrency_limit (NULL: 1). Returns their ids in fair order (priority, then turn: each
key's first task, then each key's second, its running tasks counting as turns it had, an
unkeyed task's turn the first; then run_at, id) and, of those, the ones claimed before (seen_ids). Reads each key from its head
(tasks_ready_by_key), never its backlog. Planned per call.
code_versions (NULL: any): only tasks with no code_version or one it lists (a row filter, as kinds).$$;

revoke execute on function conductor._pick_keyed(text[], text[], text[], text[], text[], integer, timestamptz, text[]) from public;

-- The pick under per-key rate limits (see the map): up to max_tasks ready unkeyed
-- tasks of the scope in claim order, taking of each key no more tasks than its
-- bucket's whole tokens now (rate_left; a key without a bucket row, its limit's
-- burst), so that a key's tasks beyond its tokens do not take the places of
-- other keys' tasks behind them. The tasks of dry keys (not_rate) are passed
-- over by the statement itself (a filter, never read one by one); the others
-- are read in claim order without locks, at most 4 * max_tasks + 100 of them,
-- and only the chosen ones are then locked (FOR UPDATE SKIP LOCKED: one a
-- concurrent claim holds, or that stopped being ready, is left out, and the
-- claim takes fewer), as _pick_keyed does. Read without locks, the tokens may be
-- gone by the time _claim_tokens locks the buckets: it trims what they no longer
-- cover. A function of its own: the other picks, which every claim without a
-- per-key limit takes, are as they were. Planned per call, as _pick_queues.
create or replace function conductor._pick_rated(
  queues       text[],
  kinds        text[],
  not_queues   text[],
  not_kinds    text[],
  not_rate     text[],
  rate_buckets text[],
  rate_left    integer[],
  rate_limits  text[],
  rate_bursts  integer[],
  max_tasks    integer,
  claimed_at   timestamptz,
  code_versions text[] default null,
  out ids      bigint[],
  out seen_ids bigint[])
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_custom_plan
  set jit = off
as $$
declare
  v_us text := pg_catalog.chr(31);
  v_task record;
  v_chosen bigint[];
  v_keys text[];      -- the buckets this pick drew from ...
  v_left integer[];   -- ... and what each has left
  v_q text;
  v_k text;
  v_iq integer;
  v_ik integer;
  v_lq integer;
  v_lk integer;
  v_n integer := 0;
begin
  for v_task in
    select t.id, t.queue, t.kind, t.rate_key, t.started_at from conductor.tasks t
     where t.status = 'queued' and t.run_at <= _pick_rated.claimed_at
       and (t.expires_at is null or t.expires_at > _pick_rated.claimed_at)
       and (_pick_rated.queues is null or t.queue = any (_pick_rated.queues))
       and (_pick_rated.kinds is null or t.kind = any (_pick_rated.kinds))
       and (_pick_rated.not_queues is null or t.queue <> all (_pick_rated.not_queues))
       and (_pick_rated.not_kinds is null or t.kind <> all (_pick_rated.not_kinds))
       and (_pick_rated.code_versions is null or t.code_version is null or t.code_version = any (_pick_rated.code_versions))
       and t.concurrency_key is null
       and (t.rate_key is null or _pick_rated.not_rate is null
            or ('queue' || v_us || t.queue || v_us || t.rate_key <> all (_pick_rated.not_rate)
                and 'kind' || v_us || t.kind || v_us || t.rate_key <> all (_pick_rated.not_rate)))
     order by t.priority desc, t.run_at, t.id
     limit 4 * _pick_rated.max_tasks + 100
  loop
    v_iq := null;
    v_ik := null;
    if v_task.rate_key is not null then
      -- the task's buckets: its queue's key and its kind's key, where a per-key limit is
      v_lq := pg_catalog.array_position(_pick_rated.rate_limits, 'queue' || v_us || v_task.queue);
      v_lk := pg_catalog.array_position(_pick_rated.rate_limits, 'kind' || v_us || v_task.kind);
      if v_lq is not null then
        v_q := 'queue' || v_us || v_task.queue || v_us || v_task.rate_key;
        v_iq := pg_catalog.array_position(v_keys, v_q);
        if v_iq is null then
          v_keys := v_keys || v_q;
          v_left := v_left || coalesce(_pick_rated.rate_left[pg_catalog.array_position(_pick_rated.rate_buckets, v_q)],
                                       _pick_rated.rate_bursts[v_lq]);
          v_iq := pg_catalog.cardinality(v_keys);
        end if;
      end if;
      if v_lk is not null then
        v_k := 'kind' || v_us || v_task.kind || v_us || v_task.rate_key;
        v_ik := pg_catalog.array_position(v_keys, v_k);
        if v_ik is null then
          v_keys := v_keys || v_k;
          v_left := v_left || coalesce(_pick_rated.rate_left[pg_catalog.array_position(_pick_rated.rate_buckets, v_k)],
                                       _pick_rated.rate_bursts[v_lk]);
          v_ik := pg_catalog.cardinality(v_keys);
        end if;
      end if;
      continue when (v_iq is not null and v_left[v_iq] < 1) or (v_ik is not null and v_left[v_ik] < 1);
      if v_iq is not null then
        v_left[v_iq] := v_left[v_iq] - 1;
      end if;
      if v_ik is not null then
        v_left[v_ik] := v_left[v_ik] - 1;
      end if;
    end if;
    v_chosen := v_chosen || v_task.id;
    v_n := v_n + 1;
    exit when v_n >= _pick_rated.max_tasks;
  end loop;
  if v_chosen is null then
    return;
  end if;
  -- only the chosen rows are locked, and only while still ready
  select pg_catalog.array_agg(l.id order by l.n), pg_catalog.array_agg(l.id order by l.n) filter (where l.started_at is not null)
    into _pick_rated.ids, _pick_rated.seen_ids
    from (select t.id, t.started_at, u.n
            from conductor.tasks t
            join pg_catalog.unnest(v_chosen) with ordinality u(id, n) on u.id = t.id
           where t.status = 'queued' and t.run_at <= _pick_rated.claimed_at
             and (t.expires_at is null or t.expires_at > _pick_rated.claimed_at)
             for update of t skip locked) l;
end
$$;

comment on function conductor._pick_rated(text[], text[], text[], text[], text[], text[], integer[], text[], integer[], integer, timestamptz, text[]) is
$$claim's pick under per-key rate limits: up to max_tasks ready unkeyed tasks of queues and
kinds (NULL: every one), none of not_queues and not_kinds, due by claimed_at, in claim
order, passing over the tasks whose 'queue' chr(31) queue chr(31) rate_key or 'kind'
chr(31) kind chr(31) rate_key is in not_rate, and taking of each key's bucket no more tasks
than its whole tokens (rate_left of rate_buckets; a key without a bucket, the burst in
rate_bursts of its limit in rate_limits): conductor._claim_controls's answer. Reads at most
4 * max_tasks + 100 candidates without locks, then locks the chosen FOR UPDATE SKIP LOCKED
(re-checked ready). Returns their ids in claim order and, of those, the ones claimed before
(seen_ids). Planned per call.
code_versions (NULL: any): only tasks with no code_version or one it lists (a row filter, as kinds).$$;

revoke execute on function conductor._pick_rated(text[], text[], text[], text[], text[], text[], integer[], text[], integer[], integer, timestamptz, text[]) from public;

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
-- not_rate is new after v0.2.0 (issue 30): the function's answer changes, so the
-- old one goes first
drop function if exists conductor._claim_controls(text[], text[], timestamptz);
create or replace function conductor._claim_controls(
  queues         text[],
  kinds          text[],
  claimed_at     timestamptz,
  out run_queues text[],
  out run_kinds  text[],
  out not_queues text[],
  out not_kinds  text[],
  out limited    boolean,
  out cap        integer,
  out not_rate   text[],
  out rate_buckets text[],
  out rate_left  integer[],
  out rate_limits text[],
  out rate_bursts integer[])
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_custom_plan
  set jit = off
as $$
declare
  v_out_queues text[];
  v_out_kinds text[];
  v_queue_limited boolean;
  v_kind_limited boolean;
  v_key_limited boolean;
begin
  select pg_catalog.array_agg(x.name) into v_out_queues
    from (select p.queue as name from conductor.paused_queues p
          union
          select r.name from conductor.rate_limits r
           where r.scope = 'queue' and not r.per_key
             and conductor._tokens(r.per_second, r.burst, r.tokens, r.refilled_at, _claim_controls.claimed_at)
                 + 1e-9 < 1) x;
  select pg_catalog.array_agg(r.name) into v_out_kinds
    from conductor.rate_limits r
   where r.scope = 'kind' and not r.per_key
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
                              where r.scope = 'queue' and not r.per_key
                                and (run_queues is null or r.name = any (run_queues))
                                and (not_queues is null or r.name <> all (not_queues)));
  v_kind_limited := exists (select from conductor.rate_limits r
                             where r.scope = 'kind' and not r.per_key
                               and (run_kinds is null or r.name = any (run_kinds))
                               and (not_kinds is null or r.name <> all (not_kinds)));
  -- limits per key (schema/rate_keys) of the scope's queues and kinds: the pick
  -- passes over the tasks of a key whose bucket holds no whole token now (not_rate,
  -- 'scope' chr(31) 'name' chr(31) 'key' each: no queue or kind name holds a control
  -- character), and _claim_tokens draws from the keys' buckets
  v_key_limited := exists (select from conductor.rate_limits r
                            where r.per_key
                              and case r.scope
                                    when 'queue' then (run_queues is null or r.name = any (run_queues))
                                                      and (not_queues is null or r.name <> all (not_queues))
                                    else (run_kinds is null or r.name = any (run_kinds))
                                         and (not_kinds is null or r.name <> all (not_kinds)) end);
  if v_key_limited then
    -- the per-key limits ('scope' chr(31) 'name') and their bursts (a key without a
    -- bucket row has a full one), and the keys' buckets with their whole tokens now
    select pg_catalog.array_agg(r.scope || pg_catalog.chr(31) || r.name),
           pg_catalog.array_agg(pg_catalog.floor(r.burst + 1e-9)::integer)
      into rate_limits, rate_bursts
      from conductor.rate_limits r where r.per_key;
    select pg_catalog.array_agg(x.bucket), pg_catalog.array_agg(x.left_),
           pg_catalog.array_agg(x.bucket) filter (where x.left_ < 1)
      into rate_buckets, rate_left, not_rate
      from (select b.scope || pg_catalog.chr(31) || b.name || pg_catalog.chr(31) || b.key as bucket,
                   pg_catalog.floor(conductor._tokens(r.per_second, r.burst, b.tokens, b.refilled_at,
                                                      _claim_controls.claimed_at) + 1e-9)::integer as left_
              from conductor.rate_key_buckets b
              join conductor.rate_limits r on r.scope = b.scope and r.name = b.name and r.per_key) x;
  end if;
  limited := v_queue_limited or v_kind_limited or v_key_limited;
  -- when the buckets of one scope only apply (of queues, or of kinds) and every
  -- queue or kind named has one, no more can start than their tokens together:
  -- the pick need not lock more tasks than that. (With both, a task picked may
  -- lose to the other scope's bucket, so a smaller pick could start fewer; so may a
  -- task trimmed by its key's bucket under a per-key limit.)
  if limited and not v_key_limited then
    if v_queue_limited and not v_kind_limited then
      cap := (select case when pg_catalog.count(*) = pg_catalog.cardinality(run_queues)
                          then pg_catalog.sum(pg_catalog.floor(
                                 conductor._tokens(r.per_second, r.burst, r.tokens, r.refilled_at,
                                                   _claim_controls.claimed_at) + 1e-9))::integer end
                from conductor.rate_limits r
               where r.scope = 'queue' and not r.per_key and r.name = any (run_queues));
    elsif v_kind_limited and not v_queue_limited then
      cap := (select case when pg_catalog.count(*) = pg_catalog.cardinality(run_kinds)
                          then pg_catalog.sum(pg_catalog.floor(
                                 conductor._tokens(r.per_second, r.burst, r.tokens, r.refilled_at,
                                                   _claim_controls.claimed_at) + 1e-9))::integer end
                from conductor.rate_limits r
               where r.scope = 'kind' and not r.per_key and r.name = any (run_kinds));
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
queue buckets or only kind buckets apply (and no per-key limit) and every queue or kind named has one, the whole
tokens they hold together (the most that can start). When a per-key limit is of a queue
or kind in scope (then limited is true): rate_limits and rate_bursts, every per-key limit
(scope || chr(31) || name) and its whole burst; rate_buckets and rate_left, the keys'
buckets (conductor.rate_key_buckets, scope || chr(31) || name || chr(31) || key) and their
whole tokens at claimed_at; not_rate, those of them holding none (NULL: none): what
conductor._pick_rated picks by. Reads without locks. run_queues or run_kinds empty: nothing to claim.$$;

revoke execute on function conductor._claim_controls(text[], text[], timestamptz) from public;

-- The room of capped queues: of the caps of queues (NULL: every cap), each
-- queue's max_running less its running tasks, counted through tasks_running
-- (the running set, one scan for all of them). Planned once per connection:
-- planned per call it was most of a capped claim's cost (bench/HISTORY.md).
-- A plain index scan, not a bitmap one: only a plain scan marks the entries of
-- tasks that stopped running dead when it finds them so, and later counts skip
-- them; a bitmap scan read every one since the last vacuum (24,000 a count in
-- a capped drain, 72 with the plain scan).
create or replace function conductor._claim_rooms(queues text[], out capped text[], out rooms integer[])
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set enable_seqscan = off
  set enable_bitmapscan = off
  set jit = off
as $$
begin
  select pg_catalog.array_agg(l.queue order by l.queue),
         pg_catalog.array_agg(l.max_running - coalesce(r.running, 0) order by l.queue)
    into capped, rooms
    from conductor.queue_limits l
    left join (select t.queue, pg_catalog.count(*)::integer as running
                 from conductor.tasks t
                where t.status = 'running'
                  and t.queue in (select l2.queue from conductor.queue_limits l2
                                   where _claim_rooms.queues is null or l2.queue = any (_claim_rooms.queues))
                group by t.queue) r on r.queue = l.queue
   where _claim_rooms.queues is null or l.queue = any (_claim_rooms.queues);
end
$$;

comment on function conductor._claim_rooms(text[]) is
$$The capped queues among queues (NULL: every capped queue), in queue order, and the room
of each: max_running less its tasks running (status 'running', through tasks_running), 0
or less when full. For claim (_claim_cap_scope before the pick, _claim_caps after it,
under the cap rows' locks); reads the caller's statement's snapshot. No locks.$$;

revoke execute on function conductor._claim_rooms(text[]) from public;

-- What the queue caps leave of a claim's scope (see the map), after the other
-- controls': the queues named (run_queues) without the capped ones that are
-- full, or (queues NULL) not_queues with them added; capped says a cap may
-- apply to what the pick takes (then _claim_caps trims it); cap, when every
-- queue named is capped, the room they have together (the most that can start).
create or replace function conductor._claim_cap_scope(
  queues         text[],
  not_queues     text[],
  out run_queues text[],
  out out_queues text[],
  out capped     boolean,
  out cap        integer)
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set jit = off
as $$
declare
  v_got record;  -- the capped queues in scope and their room (_claim_rooms)
  v_full text[];
begin
  run_queues := _claim_cap_scope.queues;
  out_queues := _claim_cap_scope.not_queues;
  v_got := conductor._claim_rooms(_claim_cap_scope.queues);
  if v_got.capped is null then
    capped := false;  -- caps of other queues only
    return;
  end if;
  v_full := array(select u.q from rows from (pg_catalog.unnest(v_got.capped), pg_catalog.unnest(v_got.rooms)) u(q, room)
                   where u.room <= 0);
  if _claim_cap_scope.queues is null then
    out_queues := out_queues || v_full;
  else
    run_queues := array(select u.q from pg_catalog.unnest(_claim_cap_scope.queues) with ordinality u(q, n)
                         where u.q <> all (v_full) order by u.n);
  end if;
  capped := exists (select from rows from (pg_catalog.unnest(v_got.capped), pg_catalog.unnest(v_got.rooms)) u(q, room)
                     where u.room > 0 and (out_queues is null or u.q <> all (out_queues)));
  if capped and run_queues is not null then
    cap := (select case when pg_catalog.count(*) = pg_catalog.cardinality(run_queues)
                        then pg_catalog.sum(u.room)::integer end
              from rows from (pg_catalog.unnest(v_got.capped), pg_catalog.unnest(v_got.rooms)) u(q, room)
             where u.q = any (run_queues));
  end if;
end
$$;

comment on function conductor._claim_cap_scope(text[], text[]) is
$$claim's narrowing by the queue caps, called only when conductor.queue_limits holds a row,
after conductor._claim_controls: run_queues is queues (NULL: every queue) without the capped
queues as full as their max_running (conductor._claim_rooms), out_queues not_queues with those
added when queues is NULL; capped says whether a cap may apply to the tasks picked (then
conductor._claim_caps trims them); cap, when every queue of run_queues is capped, the room
they have together. Reads without locks; planned once per connection. run_queues empty:
nothing to claim.$$;

revoke execute on function conductor._claim_cap_scope(text[], text[]) from public;

-- The queue caps, applied to the picked tasks (see the map): lock the cap rows
-- of their queues in queue order, count each capped queue's running tasks
-- (_claim_rooms in a statement after the locks: at READ COMMITTED it sees what
-- every holder before committed), keep in claim order at most max_running
-- minus running of each capped queue. Returns the kept ids, NULL for none; the
-- rest stay queued, untouched. Before the rate limits: a task the cap trims
-- draws no token.
create or replace function conductor._claim_caps(task_ids bigint[])
  returns bigint[]
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set enable_seqscan = off
  set jit = off
as $$
declare
  v_picked text[];  -- the queues of the picked tasks, in claim order
  v_got record;     -- the capped ones among them and their room (_claim_rooms)
  v_left integer[];
  v_q integer;
  v_kept bigint[];
begin
  -- one index scan bounded by the ids, no join (conductor._complete's map says why)
  v_picked := array(select t.queue from conductor.tasks t
                     where t.id = any (_claim_caps.task_ids)
                     order by pg_catalog.array_position(_claim_caps.task_ids, t.id));
  -- lock first (in queue order, before any bucket: see the map) ...
  perform from conductor.queue_limits l
    where l.queue = any (v_picked)
    order by l.queue
      for update of l;
  -- ... then count what the holders before left running (a statement of its own)
  v_got := conductor._claim_rooms(v_picked);
  if v_got.capped is null then
    return _claim_caps.task_ids;  -- caps of other queues only
  end if;
  v_left := v_got.rooms;
  for i in 1 .. pg_catalog.cardinality(_claim_caps.task_ids) loop
    v_q := pg_catalog.array_position(v_got.capped, v_picked[i]);
    if v_q is null or v_left[v_q] > 0 then
      v_kept := v_kept || _claim_caps.task_ids[i];
      if v_q is not null then
        v_left[v_q] := v_left[v_q] - 1;
      end if;
    end if;
  end loop;
  return v_kept;
end
$$;

comment on function conductor._claim_caps(bigint[]) is
$$claim's queue caps: locks the conductor.queue_limits rows of the queues of task_ids (picked
and locked by the caller, in claim order), FOR UPDATE in queue order, counts each such
queue's running tasks (conductor._claim_rooms), and returns in order the ids that fit under
each cap (max_running minus running; tasks of uncapped queues all kept), NULL for none. The
tasks left out are not touched. Needs READ COMMITTED (claim checks): the count must see
what the previous holder of the row committed. Planned once per connection.$$;

revoke execute on function conductor._claim_caps(bigint[]) from public;

-- The rate limits, applied to the picked tasks (see the map): lock the buckets
-- of their queues and kinds in (scope, name) order, refill, keep in claim
-- order (the order of task_ids) each task that finds a whole token in both of
-- its buckets, deduct the kept tasks' tokens. Returns the kept ids, NULL for
-- none; the rest stay queued, untouched.
create or replace function conductor._claim_tokens(task_ids bigint[], claimed_at timestamptz)
  returns bigint[]
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_custom_plan
  set jit = off
as $$
declare
  v_buckets text[];   -- scope || ':' || name, in lock order
  v_left integer[];   -- whole tokens left in each
  v_used integer[];   -- drawn by this claim from each
  v_keys text[];      -- per-key buckets: scope chr(31) name chr(31) key, in lock order
  v_key_left integer[];
  v_key_used integer[];
  v_task record;
  v_q integer;
  v_k integer;
  v_qk integer;
  v_kk integer;
  v_kept bigint[];
begin
  -- lock first (the only wait of a claim: in (scope, name) order, see the map) ...
  perform from conductor.rate_limits r
    where not r.per_key
      and ((r.scope = 'queue' and r.name in (select t.queue from conductor.tasks t where t.id = any (_claim_tokens.task_ids)))
        or (r.scope = 'kind' and r.name in (select t.kind from conductor.tasks t where t.id = any (_claim_tokens.task_ids))))
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
   where not r.per_key
     and ((r.scope = 'queue' and r.name in (select t.queue from conductor.tasks t where t.id = any (_claim_tokens.task_ids)))
       or (r.scope = 'kind' and r.name in (select t.kind from conductor.tasks t where t.id = any (_claim_tokens.task_ids))));

  -- the per-key buckets of the picked tasks' keys (schema/rate_keys), after every
  -- bucket above, in (scope, name, key) order: each made full when it has no row
  -- (a missing row is a full bucket: reap() forgets full ones), else locked as it
  -- stands (ON CONFLICT DO UPDATE locks and returns the newest version, at READ
  -- COMMITTED after waiting for its holder's commit); the limit's rate read
  -- without a lock. Only when a per-key limit exists: a claim under one-bucket limits
  -- alone plans no insert.
  if exists (select from conductor.rate_limits r where r.per_key) then
    with want as (
      select distinct r.scope, r.name, t.rate_key as key, r.burst
        from conductor.tasks t
        join conductor.rate_limits r
          on r.per_key and ((r.scope = 'queue' and r.name = t.queue) or (r.scope = 'kind' and r.name = t.kind))
       where t.id = any (_claim_tokens.task_ids) and t.rate_key is not null
    ), locked as (
      insert into conductor.rate_key_buckets as b (scope, name, key, tokens, refilled_at)
      select w.scope, w.name, w.key, w.burst, _claim_tokens.claimed_at
        from want w
       order by w.scope, w.name, w.key
      on conflict on constraint rate_key_buckets_pkey do update set tokens = b.tokens
      returning b.scope, b.name, b.key, b.tokens, b.refilled_at
    )
    select pg_catalog.array_agg(l.scope || pg_catalog.chr(31) || l.name || pg_catalog.chr(31) || l.key
                                order by l.scope, l.name, l.key),
           pg_catalog.array_agg(pg_catalog.floor(conductor._tokens(r.per_second, r.burst, l.tokens, l.refilled_at,
                                                                   _claim_tokens.claimed_at) + 1e-9)::integer
                                order by l.scope, l.name, l.key),
           pg_catalog.array_agg(0 order by l.scope, l.name, l.key)
      into v_keys, v_key_left, v_key_used
      from locked l
      join conductor.rate_limits r on r.scope = l.scope and r.name = l.name;
  end if;

  if v_buckets is null and v_keys is null then
    return _claim_tokens.task_ids;  -- a bucket of other queues and kinds only
  end if;

  for v_task in
    select t.id, t.queue, t.kind, t.rate_key
      from conductor.tasks t
     where t.id = any (_claim_tokens.task_ids)  -- bounded, no join (conductor._complete's map)
     order by pg_catalog.array_position(_claim_tokens.task_ids, t.id)
  loop
    v_q := pg_catalog.array_position(v_buckets, 'queue:' || v_task.queue);
    v_k := pg_catalog.array_position(v_buckets, 'kind:' || v_task.kind);
    v_qk := pg_catalog.array_position(v_keys, 'queue' || pg_catalog.chr(31) || v_task.queue || pg_catalog.chr(31)
                                              || v_task.rate_key);
    v_kk := pg_catalog.array_position(v_keys, 'kind' || pg_catalog.chr(31) || v_task.kind || pg_catalog.chr(31)
                                              || v_task.rate_key);
    if (v_q is null or v_left[v_q] > 0) and (v_k is null or v_left[v_k] > 0)
       and (v_qk is null or v_key_left[v_qk] > 0) and (v_kk is null or v_key_left[v_kk] > 0) then
      v_kept := v_kept || v_task.id;
      if v_q is not null then
        v_left[v_q] := v_left[v_q] - 1;
        v_used[v_q] := v_used[v_q] + 1;
      end if;
      if v_k is not null then
        v_left[v_k] := v_left[v_k] - 1;
        v_used[v_k] := v_used[v_k] + 1;
      end if;
      if v_qk is not null then
        v_key_left[v_qk] := v_key_left[v_qk] - 1;
        v_key_used[v_qk] := v_key_used[v_qk] + 1;
      end if;
      if v_kk is not null then
        v_key_left[v_kk] := v_key_left[v_kk] - 1;
        v_key_used[v_kk] := v_key_used[v_kk] + 1;
      end if;
    end if;
  end loop;

  -- a bucket nothing was drawn from keeps its row: refilling later from its
  -- refilled_at gives the same tokens
  if v_buckets is not null then
    update conductor.rate_limits r
       set tokens = greatest(0, conductor._tokens(r.per_second, r.burst, r.tokens, r.refilled_at,
                                                  _claim_tokens.claimed_at) - u.used),
           refilled_at = greatest(r.refilled_at, _claim_tokens.claimed_at)
      from rows from (pg_catalog.unnest(v_buckets), pg_catalog.unnest(v_used)) u(bucket, used)
     where u.used > 0 and r.scope || ':' || r.name = u.bucket;
  end if;
  if v_keys is not null then
    update conductor.rate_key_buckets b
       set tokens = greatest(0, conductor._tokens(r.per_second, r.burst, b.tokens, b.refilled_at,
                                                  _claim_tokens.claimed_at) - u.used),
           refilled_at = greatest(b.refilled_at, _claim_tokens.claimed_at)
      from (-- the primary key, split back (scope and name hold no chr(31); the key is the rest)
            select pg_catalog.split_part(x.bucket, pg_catalog.chr(31), 1) as scope,
                   pg_catalog.split_part(x.bucket, pg_catalog.chr(31), 2) as name,
                   pg_catalog.substr(x.bucket, pg_catalog.length(pg_catalog.split_part(x.bucket, pg_catalog.chr(31), 1))
                                               + pg_catalog.length(pg_catalog.split_part(x.bucket, pg_catalog.chr(31), 2))
                                               + 3) as key,
                   x.used
              from rows from (pg_catalog.unnest(v_keys), pg_catalog.unnest(v_key_used)) x(bucket, used)
             where x.used > 0) u,
           conductor.rate_limits r
     where b.scope = u.scope and b.name = u.name and b.key = u.key
       and r.scope = b.scope and r.name = b.name;
  end if;
  return v_kept;
end
$$;

comment on function conductor._claim_tokens(bigint[], timestamptz) is
$$claim's rate limits: locks the conductor.rate_limits buckets of the queues and kinds of
task_ids (picked and locked by the caller, in claim order), FOR UPDATE in
(scope, name) order, then the conductor.rate_key_buckets of their rate_keys under per-key
limits (per_key) of their queues and kinds, in (scope, name, key) order (inserted full when
missing), refills them to claimed_at (conductor._tokens), keeps in order each
task that finds a whole token in its queue's bucket, its kind's and its key's (where they
exist), deducts one token per kept task from each, and returns the kept ids (NULL: none).
The tasks left out are not touched.$$;

revoke execute on function conductor._claim_tokens(bigint[], timestamptz) from public;

-- Before a lease takes attempt ids: when conductor.claim_epoch is empty (a crash
-- recovery emptied it, or this is a promoted standby: WAL the server wrote may
-- have been lost, and with it claims committed without waiting for their
-- flush and the sequence's advance past their ids), the first claim moves
-- attempts_id_seq 10^9 past where recovery left it, writes the row, and commits
-- durably (synchronous_commit on for its transaction, whatever the caller
-- set), so the move is on disk before any id past it is used. A claim that
-- finds the row empty while another writes it waits on that row (ON CONFLICT)
-- until the writer commits, then goes on past the move; at REPEATABLE READ the
-- wait ends in a serialization failure (40001: send the claim again). claim
-- calls it only when its first statement found the row missing: the common
-- case costs a probe of a one-row table in a statement claim runs anyway.
create or replace function conductor._claim_epoch() returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set jit = off
as $$
begin
  if exists (select from conductor.claim_epoch) then
    return;
  end if;
  insert into conductor.claim_epoch (started_at) values (pg_catalog.clock_timestamp())
  on conflict (one) do nothing;
  if found then
    perform pg_catalog.setval('conductor.attempts_id_seq',
                              pg_catalog.nextval('conductor.attempts_id_seq') + 1000000000);
    perform pg_catalog.set_config('synchronous_commit', 'on', true);
  end if;
end
$$;

comment on function conductor._claim_epoch() is
$$claim's guard of its fencing tokens: when conductor.claim_epoch is empty (emptied by crash
recovery; empty on a promoted standby), moves attempts_id_seq 10^9 past its value, writes the
row and makes the caller's commit durable, so no attempt id a lost WAL handed out is handed
out again. Waits for a concurrent claim doing the same (its row); nothing else.$$;

revoke execute on function conductor._claim_epoch() from public;

create or replace function conductor._lease(
  task_ids       bigint[],
  seen_ids       bigint[],
  worker_id      text,
  lease_until    timestamptz,
  claimed_at     timestamptz,
  code_version   text default null
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
  -- Two statements, the same but for the steps: a claim of tasks none of which ran
  -- before (seen_ids NULL, the common case) plans and starts no lookup of steps (a
  -- subplan each, set up at every execution even when no row needs it).
  if _lease.seen_ids is null then
    return query
    with claimed as (
      update conductor.tasks t
         set status = 'running',
             attempt = t.attempt + 1,
             attempt_id = pg_catalog.nextval('conductor.attempts_id_seq'),
             claimed_by = _lease.worker_id,
             -- never past the attempt's deadline (see the map)
             lease_expires_at = least(_lease.lease_until, _lease.claimed_at + t.timeout),
             started_at = coalesce(t.started_at, _lease.claimed_at),
             expires_at = null,  -- started: a task started once never expires (schema/expiry)
             -- the code its run started on: the first claimer's that named one (schema/code_versions)
             code_version = coalesce(t.code_version, _lease.code_version)
       where t.id = any (_lease.task_ids)
      -- the answer's columns only: the CTE keeps what it returns, and the rest of a
      -- 41-column row cost a claim of 50 and its complete_many 2 % (bench/HISTORY.md)
      returning t.id, t.attempt_id, t.kind, t.queue, t.payload, t.priority, t.attempt, t.max_attempts,
                t.recoveries, t.parent_id, t.root_id, t.run_at, t.enqueued_at, t.lease_expires_at,
                t.timeout, t.traceparent, t.code_version
    ), recorded as (
      insert into conductor.attempts (id, task_id, attempt, worker_id, host, pid, claimed_at)
      select c.attempt_id, c.id, c.attempt, _lease.worker_id, w.host, w.pid, _lease.claimed_at
        from claimed c
        left join conductor.workers w on w.id = _lease.worker_id
    )
    select c.id, c.attempt_id, c.kind, c.queue, c.payload, c.priority, c.attempt,
           c.max_attempts, c.recoveries, c.parent_id, c.root_id, c.run_at,
           c.enqueued_at, c.lease_expires_at, '{}'::jsonb, c.timeout, c.traceparent, c.code_version,
           null::text[]
      from claimed c
     order by c.priority desc, c.run_at, c.id;
    return;
  end if;
  return query
  with claimed as (
    update conductor.tasks t
       set status = 'running',
           attempt = t.attempt + 1,
           attempt_id = pg_catalog.nextval('conductor.attempts_id_seq'),
           claimed_by = _lease.worker_id,
           lease_expires_at = least(_lease.lease_until, _lease.claimed_at + t.timeout),
           started_at = coalesce(t.started_at, _lease.claimed_at),
           expires_at = null,
           code_version = coalesce(t.code_version, _lease.code_version)
     where t.id = any (_lease.task_ids)
    returning t.id, t.attempt_id, t.kind, t.queue, t.payload, t.priority, t.attempt, t.max_attempts,
              t.recoveries, t.parent_id, t.root_id, t.run_at, t.enqueued_at, t.lease_expires_at,
              t.timeout, t.traceparent, t.code_version
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
         c.timeout, c.traceparent, c.code_version,
         -- the steps' names in the order they were saved, for the replay check (docs/protocol.md)
         case when c.id = any (_lease.seen_ids)
              then (select pg_catalog.array_agg(s.name order by s.seq)
                      from conductor.steps s where s.task_id = c.id) end
    from claimed c
   order by c.priority desc, c.run_at, c.id;
end
$$;

comment on function conductor._lease(bigint[], bigint[], text, timestamptz, timestamptz, text) is
$$claim's second half: leases the picked task_ids (locked by the caller) to worker_id until
lease_until, or claimed_at + the task's timeout when earlier, writes an attempt row for each
(host and pid from conductor.workers), records code_version on those that have none (NULL:
nothing recorded) and returns them in claim order with their steps and step_order (looked up
only for seen_ids, tasks claimed before).
Planned once per connection (primary-key probes only).$$;

revoke execute on function conductor._lease(bigint[], bigint[], text, timestamptz, timestamptz, text) from public;

create or replace function conductor.claim(
  worker_id text,
  queues    text[] default null,
  max_tasks integer default 1,
  lease     interval default interval '60 seconds',
  kinds     text[] default null,
  durable   boolean default true,
  code_versions text[] default null
) returns setof conductor.claimed_task
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set enable_seqscan = off
  set jit = off
as $$
declare
  v_now timestamptz := conductor.now();
  v_max_lease interval;
  v_keys text[];
  v_picked record;  -- conductor._pick's ids and seen_ids
  v_ids bigint[];
  v_seen bigint[];
  v_queues text[] := claim.queues;  -- what the controls leave of queues and kinds (see the map)
  v_kinds text[] := claim.kinds;
  v_not_queues text[];
  v_not_kinds text[];
  v_limited boolean := false;
  -- under per-key limits, what _claim_controls said of them (see the map): dry keys, the
  -- keys' buckets and their whole tokens, the limits and their bursts; NULL without one
  v_not_rate text[];
  v_rate_buckets text[];
  v_rate_left integer[];
  v_rate_limits text[];
  v_rate_bursts integer[];
  v_capped boolean;  -- a queue cap exists; then, one may apply to the pick
  v_caps record;     -- conductor._claim_cap_scope's answer
  v_cap integer;
  v_max integer := claim.max_tasks;  -- or fewer, when the rate limits allow fewer starts
  v_controlled boolean;  -- a paused queue or a rate limit exists
  v_followed boolean;    -- a session follows bus topic 'tasks'
  v_epoch boolean;       -- conductor.claim_epoch holds its row (see conductor._claim_epoch)
  v_keyed boolean;       -- a keyed task is ready (conductor._claim_keys looks for their keys)
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
  -- One statement reads what every claim needs to know (a helper call with its
  -- settings, or a statement, costs more than these probes): the lease's limit; the
  -- paused queues, rate limits and queue caps (see the map: none in the common case);
  -- whether a session follows bus topic 'tasks'; whether the fencing guard's row is
  -- there (conductor._claim_epoch is called only when it is not); and whether any
  -- keyed task is ready (one descent of tasks_ready_keyed; conductor._claim_keys is
  -- called only then). enable_seqscan is off: this plan is made once per connection,
  -- on whatever the tables held then.
  select s.max_lease,
         exists (select from conductor.paused_queues) or exists (select from conductor.rate_limits),
         exists (select from conductor.queue_limits),
         exists (select from conductor.subscriptions b where b.topic in ('tasks', '*')),
         exists (select from conductor.claim_epoch),
         exists (select from conductor.tasks t
                  where t.status = 'queued' and t.concurrency_key is not null and t.run_at <= v_now)
    into v_max_lease, v_controlled, v_capped, v_followed, v_epoch, v_keyed
    from conductor.settings s
   where s.one;
  if claim.lease > v_max_lease then
    raise exception 'invalid lease %: at most % (conductor.settings.max_lease)', claim.lease, v_max_lease
      using errcode = 'QC106',
            hint = 'A long task keeps its lease by heartbeating; the lease is how long a lost worker''s task waits to be taken back.';
  end if;
  if claim.queues is not null or claim.kinds is not null then
    perform conductor._check_scope(claim.queues, claim.kinds);
  end if;
  if claim.code_versions is not null then
    perform conductor._check_code_versions(claim.code_versions);
  end if;
  if claim.max_tasks = 0 then
    return;
  end if;
  -- durable => false: the claim commits without waiting for its WAL flush (the
  -- caller's transaction, from here on), unless the transaction wrote before it
  -- came here; _claim_epoch keeps the fencing tokens unique across a crash
  if claim.durable is false and pg_catalog.pg_current_xact_id_if_assigned() is null then
    perform pg_catalog.set_config('synchronous_commit', 'off', true);
  end if;

  -- Paused queues, rate limits and queue caps, see the map: none in the common case,
  -- which the first statement found; else the scope narrowed, nothing when none is left.
  if v_controlled then
    select c.run_queues, c.run_kinds, c.not_queues, c.not_kinds, c.limited, c.cap,
           c.not_rate, c.rate_buckets, c.rate_left, c.rate_limits, c.rate_bursts
      into v_queues, v_kinds, v_not_queues, v_not_kinds, v_limited, v_cap,
           v_not_rate, v_rate_buckets, v_rate_left, v_rate_limits, v_rate_bursts
      from conductor._claim_controls(claim.queues, claim.kinds, v_now) c;
    if pg_catalog.cardinality(v_queues) = 0 or pg_catalog.cardinality(v_kinds) = 0 then
      return;
    end if;
    v_max := least(claim.max_tasks, v_cap);
  end if;
  if v_capped then
    -- a call, not a select from it (a simple expression, as _pick below)
    v_caps := conductor._claim_cap_scope(v_queues, v_not_queues);
    v_queues := v_caps.run_queues;
    v_not_queues := v_caps.out_queues;
    v_capped := v_caps.capped;
    if pg_catalog.cardinality(v_queues) = 0 then
      return;
    end if;
    if v_capped and pg_catalog.current_setting('transaction_isolation') <> 'read committed' then
      raise exception 'claim needs READ COMMITTED to honour queue caps, not %',
        pg_catalog.current_setting('transaction_isolation')
        using errcode = 'QC106';
    end if;
    v_max := least(v_max, v_caps.cap);
  end if;

  if v_keyed then
    v_keys := conductor._claim_keys(v_queues, v_max, v_now, v_kinds, v_not_queues, v_not_kinds,
                                    claim.code_versions);
  end if;
  if v_keys is not null
     and pg_catalog.current_setting('transaction_isolation') <> 'read committed' then
    raise exception 'claim needs READ COMMITTED to honour concurrency keys, not %',
      pg_catalog.current_setting('transaction_isolation')
      using errcode = 'QC106';
  end if;

  -- a call, not a select from it: a PL/pgSQL simple expression, which runs without a
  -- statement's executor (the layer _pick adds cost nothing measurable this way)
  if v_rate_limits is null or v_keys is not null then
    v_picked := conductor._pick(claim.worker_id, v_queues, v_kinds, v_not_queues, v_not_kinds, v_keys, v_max, v_now,
                                v_limited or v_capped, claim.code_versions);
  else
    -- a per-key limit applies: a pick that takes no more of a key than its tokens (see the map)
    v_picked := conductor._pick_rated(v_queues, v_kinds, v_not_queues, v_not_kinds, v_not_rate, v_rate_buckets,
                                      v_rate_left, v_rate_limits, v_rate_bursts, v_max, v_now, claim.code_versions);
  end if;
  v_ids := v_picked.ids;
  v_seen := v_picked.seen_ids;
  if v_ids is null then
    return;
  end if;
  if v_capped then
    v_ids := conductor._claim_caps(v_ids);
    if v_ids is null then
      return;
    end if;
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
  if not v_epoch then
    perform conductor._claim_epoch();
  end if;
  return query select * from conductor._lease(v_ids, v_seen, claim.worker_id, v_now + claim.lease, v_now,
                                              claim.code_versions[1]);
end
$$;

comment on function conductor.claim(text, text[], integer, interval, text[], boolean, text[]) is
$$Leases up to max_tasks ready tasks to worker_id and returns them, highest priority
first, then earliest run_at, then lowest id. queues NULL means every queue; kinds NULL
means every kind, else only tasks of those kinds are claimed (the kinds the worker has
handlers for): the others stay queued and untouched, for a worker that serves them.
Each row's attempt_id is the fencing token for heartbeat, complete, fail and release.
steps: the task's checkpoints so far ({name: result}), so a resumed run skips them;
step_order: their names in the order they were saved (NULL for a task never claimed before),
so the worker checks that the handler asks for them in that order (docs/protocol.md).
code_versions (NULL: the worker declares none, and claims and records as before): the code
version the worker runs first, then the older versions it can still replay. A task records
the first element as its code_version when first claimed (returned as code_version), and a
claim naming code_versions takes only tasks with no recorded version or one it lists; the
others stay queued and untouched, stepped over as tasks of other kinds are, for a worker
that lists their version. QC123 for an empty code_versions list or one holding NULL, an
empty name, over 100 characters, or a control, format or markup character.
traceparent: the W3C trace context its enqueuer stored (NULL: none), for the worker's span.
The lease (default 60 s, at most conductor.settings.max_lease, 1 hour unless an admin
changed it) must be extended by heartbeat before it expires, or reap() takes the task back.
A task with a timeout is leased until now + least(lease, timeout) at most: its attempt's
deadline is claimed_at + timeout (the row's timeout; NULL: no limit), which neither
heartbeat nor anything else extends. Returns no rows when nothing is ready.
At most concurrency_limit tasks of a concurrency_key run at a time: a keyed task is claimed
only while fewer tasks of its key run (counting those the claim takes before it) than its
own concurrency_limit (NULL: 1), a key's tasks in claim order; the others wait in order and
block no other key or queue. Within a priority, keyed tasks are taken in turns across their
keys (each key's first, then each key's second, running tasks counting as turns had).
Raises QC106 for a missing worker_id, negative max_tasks, a lease not positive or over
max_lease (the message names it) (or a
claim of keyed tasks outside READ COMMITTED), QC104 for an empty queue list or one holding
NULL, QC101 for an empty kinds list or one holding NULL.
Nothing is claimed from a paused queue (pause_queue): a claim of paused queues only returns
no rows at once; of several or all queues, the paused ones are left out. A rate limit of a
queue or a kind (set_rate_limit) caps how many of its tasks start: each started task draws
a token from its queue's bucket and its kind's, across every worker; picked tasks that find
none stay queued, untouched, and the claim returns fewer rows (none). A per-key limit
(set_rate_limit(per_key => true)) does the same with a bucket per rate_key of the queue's
(kind's) tasks; the tasks of a key whose bucket is dry are passed over, so they do not
keep other keys' tasks from starting. A queue cap
(set_queue_limit) keeps the queue's running tasks at most max_running across every worker:
a claim starts no more than max_running minus those running (racing claimers take the cap's
row in turn); a claim a cap applies to needs READ COMMITTED (else QC106).
FOR UPDATE SKIP LOCKED: any number of callers at once, none waits for a task, no task goes
to two; claimers of a rate-limited queue or kind wait for each other's commit on its bucket,
and claimers of a capped queue on its cap row.
Publishes {"event": "running", "ids": [...]} on bus topic 'tasks' when a session subscribes
to it (or to '*').
Tasks of other kinds at the head of a queue are stepped over (a rolling deploy's transient;
reap() dead-letters a kind no live worker serves after unknown_kind_after).
When two full scans in a row are slow (over conductor.settings.claim_slow_scan, default
1 ms: dead index entries under a pinned xmin horizon), the worker's claims go on from where
its last claim stopped (conductor.claim_positions, keyed by worker_id; no session state, so
safe behind a transaction-mode pooler): higher priorities still first, but a task returned to
the queue behind that point waits for the next full scan (2 s, or 20x the last one's time).
durable => false: the claim commits without waiting for its WAL flush (synchronous_commit
off for the rest of the caller's transaction, unless it wrote before the claim): a crash
before the flush loses the claim (the tasks stay queued; its holder's reports are refused
as QC203, the attempt not existing), never its fencing: the first claim after a crash
recovery or a promotion moves the attempt ids past any a lost WAL handed out
(conductor.claim_epoch), whatever the session's synchronous_commit.$$;

revoke execute on function conductor.claim(text, text[], integer, interval, text[], boolean, text[]) from public;
grant execute on function conductor.claim(text, text[], integer, interval, text[], boolean, text[]) to conductor_worker, conductor_admin;

commit;
