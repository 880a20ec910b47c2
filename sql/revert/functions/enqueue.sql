-- Revert conductor:functions/enqueue from pg: back to its v0.2.0 bodies
--
-- Writing work. Two paths share one validation: conductor._spec_problems, the
-- rules of a task in one expression evaluated once per batch (_spec_problem
-- applies it to one spec, for enqueue, configure_kind and the schedules, so
-- each SQLSTATE means one rule everywhere), and conductor._raise_spec_problem,
-- its messages:
--
--   conductor.enqueue(kind, payload, queue, ..., timeout) -> bigint
--       one task: plain statements (one kinds lookup by primary key, INSERT
--       ... VALUES), for one task 1.1-1.25x the batch path's rate (pgbench -c
--       2, enqueue_many of one object) and 0.7x its backend CPU
--   conductor.enqueue_many(tasks jsonb)          -> setof bigint, in input order
--   conductor._enqueue(specs) -> ids in input order
--       a batch in one INSERT; enqueue_many, spawn and tick use it. The common
--       path is three statements (resolve, validate, insert); a missing parent
--       or a task losing to a dedupe holder takes a slower path only when it
--       happens.
--
-- Resolution: queue, priority, concurrency_key, timeout, max_attempts and
-- max_recoveries are each the caller's value, else the kind's
-- (conductor.kinds, written by configure_kind), else the engine's ('default',
-- 0, none, none, 1, 3), so a task enqueued from psql, a trigger or another
-- language lands where the kind's workers look for it. The spec is validated
-- after it is resolved: what is checked is what is stored (a kind's values
-- were checked by configure_kind, but v0.1.0 or a hand edit may have written
-- others). Backoff stays NULL on the task when not given: fail reads the
-- kind's at each failure.
--
-- Dedupe: a task whose dedupe_key an unfinished task holds is not inserted;
-- its id in the answer is the holder's. The unique index tasks_dedupe_key is
-- the arbiter, so concurrent enqueues of one key still give one task.
--
-- Plans: every statement of _enqueue is planned once per connection
-- (plan_cache_mode = force_generic_plan; planning it afresh each call cost
-- about 0.7 ms of a 50-task batch's 3 ms). A generic plan made while
-- conductor.tasks was empty stays on the connection as the table grows
-- (bench/stale_plans.py measured a join so planned at 200x slower), so it
-- reads conductor.tasks and conductor.kinds only by key (the kind of each
-- spec, the parent's root, a dedupe holder) and sequential and bitmap scans
-- are off: every such plan is an index probe whatever the statistics said
-- (pgTAP enqueue_many/cached_plans_stay_on_index_probes). enqueue's
-- statements are lookups by a unique key and an INSERT ... VALUES, planned
-- once too. A plan that must still scan (conductor.settings, read by the
-- helpers) carries PostgreSQL's disable_cost of 1e10 and so passes every JIT
-- threshold: jit is off too, or a server with JIT compiles each statement (an
-- enqueue_many of 50 tasks took 350-590 ms instead of 3 ms;
-- enqueue_many/no_jit_in_batch_path).
--
-- Locks: the inserted rows, and the holder's index entry while waiting on a
-- concurrent enqueue of the same dedupe_key. Any number of callers at once.

begin;
set local role conductor_owner;

-- added after v0.2.0: enqueue_many's fast path (issue 26); v0.2.0's enqueue_many comes back below
drop function conductor.enqueue_many(jsonb);
drop function conductor._require_spec(conductor._task_spec, integer, text);
drop type conductor._task_json;
-- added after v0.2.0: the queue rule for a worker's queues list, the kind rule's characters
drop function conductor._check_queue_names(text[]);
-- added after v0.2.0: the deadlines to start (issue 30)
drop function conductor._set_deadlines(bigint[], timestamptz[], interval[]);
-- added after v0.2.0: enqueue's traceparent (issue 27), concurrency_limit, dedupe options and
-- expires_in and rate_key (issue 30); v0.2.0's enqueue comes back below
drop function conductor.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, bigint, integer,
                                interval, double precision, interval, interval, text, integer, interval, text[], text,
                                interval, interval, interval, text);
drop function conductor._enqueue_held(conductor._task_spec, bigint, bigint, timestamptz);
drop function conductor._dedupe_problem(conductor._dedupe_spec, text);
drop function conductor._dedupe_options(interval, text[], text, interval, interval);

-- v0.1.0's _raise_spec_problem(code, ord, spec) took a batch position; the
-- messages now take a detail, so schedules and configure_kind can say where.
-- timeout is new (the last parameter), and queue and priority default to NULL
-- (the kind's, else the engine's): v0.1.0's thirteen-parameter enqueue goes, or
-- a call naming only those thirteen would match both.

-- The rules of a task, in one place: one CASE over a spec, in a plpgsql
-- function so that it runs as a simple expression (no executor, no plan per
-- call: 2-3 us a spec), the settings' payload limit passed in. A SQL function
-- that pins its search_path is neither inlined nor its plan kept; a query per
-- spec (v0.2.0's first cut, one unnest over an array of one) cost 19 us of a
-- single enqueue's 90.
create or replace function conductor._spec_problem(s conductor._task_spec, max_payload_bytes integer)
  returns text
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
begin
  return case
           when s.kind is null or s.kind = '' or s.kind <> pg_catalog.btrim(s.kind)
                or pg_catalog.length(s.kind) > 200 then 'kind'
           when s.payload is null or pg_catalog.jsonb_typeof(s.payload) <> 'object' then 'payload'
           when pg_catalog.pg_column_size(s.payload) > _spec_problem.max_payload_bytes then 'payload_size'
           when s.queue is null or pg_catalog.length(s.queue) > 100
                or s.queue !~ '^[A-Za-z0-9][A-Za-z0-9_.:/-]*$' then 'queue'
           when not s.run_at <@ conductor._time_range() then 'run_at'
           when s.max_attempts < 1 then 'max_attempts'
           when s.max_recoveries < 0 then 'max_recoveries'
           when not s.backoff_base between interval '0' and interval '30 days' then 'backoff_base'
           when not s.backoff_max between interval '0' and interval '30 days' then 'backoff_max'
           when not s.backoff_factor between 1 and 10 then 'backoff_factor'  -- NaN and infinity too
           when s.backoff_base > s.backoff_max then 'backoff_order'
           when s.timeout <= interval '0' or s.timeout > interval '30 days' then 'timeout'
           when pg_catalog.octet_length(s.dedupe_key) > 1000 then 'dedupe_key'
           when pg_catalog.octet_length(s.concurrency_key) > 1000 then 'concurrency_key'
         end;
end
$$;

comment on function conductor._spec_problem(conductor._task_spec, integer) is
$$The rules of a task, in one place: the first field of s that breaks one (kind, payload,
payload_size, queue, run_at, max_attempts, max_recoveries, backoff_base, backoff_max,
backoff_factor, backoff_order, timeout, dedupe_key, concurrency_key), or NULL when s is
valid. NULL fields (not given) are valid but for kind, payload and queue. A timeout is more
than 0 and at most 30 days; payload_size compares with max_payload_bytes.
conductor._raise_spec_problem raises a problem: QC101 kind, QC102 payload, QC103
payload_size, QC104 queue, QC106 the rest.$$;

create or replace function conductor._spec_problem(s conductor._task_spec) returns text
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  return conductor._spec_problem(_spec_problem.s, conductor._max_payload_bytes());
end
$$;

comment on function conductor._spec_problem(conductor._task_spec) is
$$_spec_problem against the payload limit of conductor.settings.$$;

-- A batch: the settings row read once, the rule applied per spec.
create or replace function conductor._spec_problems(specs conductor._task_spec[])
  returns table (ord bigint, problem text)
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan  -- a custom plan per call cost 0.15 ms of 0.2
as $$
declare
  v_max integer := conductor._max_payload_bytes();
begin
  return query
  select b.ord, b.problem
    from (select s.ordinality as ord,
                 conductor._spec_problem(row(s.kind, s.payload, s.queue, s.priority, s.run_at, s.max_attempts,
                                             s.dedupe_key, s.concurrency_key, s.parent_id, s.max_recoveries,
                                             s.backoff_base, s.backoff_factor, s.backoff_max,
                                             s.timeout)::conductor._task_spec, v_max) as problem
            from pg_catalog.unnest(_spec_problems.specs) with ordinality as s) b
   where b.problem is not null
   order by b.ord;
end
$$;

comment on function conductor._spec_problems(conductor._task_spec[]) is
$$_spec_problem for each spec of a batch: the position (1-based) and first problem of each
spec that breaks a rule, in input order; nothing when all are valid.$$;

create or replace function conductor._raise_spec_problem(problem text, s conductor._task_spec, detail text default null)
  returns void
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_code text := 'QC106';
  v_message text;
  v_hint text := 'NULL takes the kind''s policy (configure_kind), else the engine''s default.';
begin
  case _raise_spec_problem.problem
  when 'kind' then
    v_code := 'QC101';
    v_message := pg_catalog.format('invalid kind %s: a kind is a non-empty name of at most 200 characters without surrounding spaces',
                                   conductor._echo(s.kind));
    v_hint := 'A kind names the handler that runs the task, e.g. send_email.';
  when 'payload' then
    v_code := 'QC102';
    v_message := pg_catalog.format('invalid payload for kind %s: a payload is a JSON object, got %s',
                                   conductor._echo(s.kind), coalesce(pg_catalog.jsonb_typeof(s.payload), 'SQL NULL'));
    v_hint := 'Wrap the value in an object, e.g. {"value": ...}.';
  when 'payload_size' then
    v_code := 'QC103';
    v_message := pg_catalog.format('payload too large for kind %s: %s bytes, the limit is %s bytes',
                                   conductor._echo(s.kind), pg_catalog.pg_column_size(s.payload),
                                   conductor._max_payload_bytes());
    v_hint := 'Store large data elsewhere and pass a reference, or have an admin raise conductor.settings.max_payload_bytes.';
  when 'queue' then
    v_code := 'QC104';
    v_message := pg_catalog.format('invalid queue %s: a queue name is 1-100 letters, digits and _ . : / -, starting with a letter or digit',
                                   conductor._echo(s.queue));
    v_hint := 'For example default, emails or reports.high.';
  when 'run_at' then
    perform conductor._check_time(s.run_at, 'run_at', _raise_spec_problem.detail);
  when 'max_attempts' then
    v_message := pg_catalog.format('invalid retry policy for kind %s: max_attempts %s, it must be 1 or more',
                                   conductor._echo(s.kind), s.max_attempts);
  when 'max_recoveries' then
    v_message := pg_catalog.format('invalid retry policy for kind %s: max_recoveries %s, it must be 0 or more',
                                   conductor._echo(s.kind), s.max_recoveries);
  when 'backoff_base' then
    v_message := pg_catalog.format('invalid retry policy for kind %s: backoff_base %s, it must be from 0 to 30 days',
                                   conductor._echo(s.kind), s.backoff_base);
  when 'backoff_max' then
    v_message := pg_catalog.format('invalid retry policy for kind %s: backoff_max %s, it must be from 0 to 30 days',
                                   conductor._echo(s.kind), s.backoff_max);
  when 'backoff_factor' then
    v_message := pg_catalog.format('invalid retry policy for kind %s: backoff_factor %s, it must be a number from 1 to 10',
                                   conductor._echo(s.kind), s.backoff_factor);
  when 'backoff_order' then
    v_message := pg_catalog.format('invalid retry policy for kind %s: backoff_base %s is over backoff_max %s',
                                   conductor._echo(s.kind), s.backoff_base, s.backoff_max);
  when 'timeout' then
    v_message := pg_catalog.format('invalid timeout %s for kind %s: it must be more than 0 and at most 30 days',
                                   s.timeout, conductor._echo(s.kind));
    v_hint := 'How long one attempt may run, e.g. interval ''5 minutes''; NULL: the kind''s, else no limit.';
  when 'dedupe_key' then
    v_message := pg_catalog.format('invalid dedupe_key %s: at most 1000 bytes', conductor._echo(s.dedupe_key));
    v_hint := 'Use a short identifier; hash a longer one.';
  when 'concurrency_key' then
    v_message := pg_catalog.format('invalid concurrency_key %s: at most 1000 bytes', conductor._echo(s.concurrency_key));
    v_hint := 'Use a short identifier; hash a longer one.';
  end case;
  if _raise_spec_problem.detail is null then
    raise exception using errcode = v_code, message = v_message, hint = v_hint;
  end if;
  raise exception using errcode = v_code, message = v_message, hint = v_hint, detail = _raise_spec_problem.detail;
end
$$;

comment on function conductor._raise_spec_problem(text, conductor._task_spec, text) is
$$Raises the problem _spec_problem named in s: its SQLSTATE, a message naming the value
(cut by conductor._echo), detail saying where s came from (e.g. task #3 of the batch).$$;

revoke execute on function conductor._spec_problems(conductor._task_spec[]) from public;
revoke execute on function conductor._spec_problem(conductor._task_spec) from public;
revoke execute on function conductor._spec_problem(conductor._task_spec, integer) from public;
revoke execute on function conductor._raise_spec_problem(text, conductor._task_spec, text) from public;

create or replace function conductor._enqueue(specs conductor._task_spec[])
  returns bigint[]
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set enable_seqscan = off
  set enable_bitmapscan = off
  set jit = off
as $$
declare
  v_now timestamptz := conductor.now();
  v_specs conductor._task_spec[];
  v_bad record;
  v_ids bigint[];
  v_inserted bigint;
  v_missing_parent bigint;
  v_queues text[];
begin
  -- Each spec resolved: the caller's value, else its kind's (one probe of
  -- kinds_pkey per spec), else the engine's. Backoff stays as given: fail
  -- reads the kind's at each failure.
  v_specs := array(
    select row(s.kind, s.payload, coalesce(s.queue, k.queue, 'default'), coalesce(s.priority, k.priority, 0),
               s.run_at, coalesce(s.max_attempts, k.max_attempts, 1), s.dedupe_key,
               coalesce(s.concurrency_key, k.concurrency_key), s.parent_id,
               coalesce(s.max_recoveries, k.max_recoveries, 3), s.backoff_base, s.backoff_factor,
               s.backoff_max, coalesce(s.timeout, k.timeout))::conductor._task_spec
      from pg_catalog.unnest(_enqueue.specs) with ordinality as s
      left join conductor.kinds k on k.kind = s.kind
     order by s.ordinality);

  -- the first bad spec, in array order, as it would be stored
  select p.ord, p.problem into v_bad from conductor._spec_problems(v_specs) p limit 1;
  if found then
    perform conductor._raise_spec_problem(v_bad.problem, v_specs[v_bad.ord],
      pg_catalog.format('task #%s of the batch', v_bad.ord));
  end if;

  -- Ids are drawn before the insert so a root can be its own root_id, and the
  -- answer keeps the input order. A row that loses to a dedupe holder leaves a
  -- gap in the sequence, which is harmless.
  with spec as (
    select n.*,
           case when n.parent_id is null then n.new_id
                else (select p.root_id from conductor.tasks p where p.id = n.parent_id) end as root_id
      from (select s.ordinality as ord, pg_catalog.nextval('conductor.tasks_id_seq') as new_id, s.*
              from pg_catalog.unnest(v_specs) with ordinality as s) n
  ), inserted as (
    insert into conductor.tasks as t (
      id, queue, kind, payload, priority, run_at, max_attempts, max_recoveries,
      backoff_base, backoff_factor, backoff_max, dedupe_key, concurrency_key,
      parent_id, root_id, enqueued_at, timeout)
    select spec.new_id, spec.queue, spec.kind, spec.payload, spec.priority, coalesce(spec.run_at, v_now),
           spec.max_attempts, spec.max_recoveries, spec.backoff_base, spec.backoff_factor, spec.backoff_max,
           spec.dedupe_key, spec.concurrency_key, spec.parent_id, spec.root_id, v_now, spec.timeout
      from spec
     where spec.root_id is not null  -- null: the parent does not exist
    on conflict (dedupe_key) where dedupe_key is not null and status in ('queued', 'running', 'waiting')
    do nothing
    returning t.queue
  )
  select pg_catalog.array_agg(spec.new_id order by spec.ord), (select pg_catalog.count(*) from inserted),
         (select pg_catalog.array_agg(distinct i.queue order by i.queue) from inserted i)
    into v_ids, v_inserted, v_queues
    from spec;
  -- due now or later: a sleeper recomputes its wake-up either way (functions/notify)
  perform conductor._notify_queue(q.queue) from pg_catalog.unnest(v_queues) as q(queue);

  -- A task not inserted: its parent does not exist (raise), or it lost to a
  -- dedupe holder (committed before this statement began or while it waited,
  -- or an earlier task of this batch with the same key), which a fresh
  -- statement sees.
  if v_inserted < pg_catalog.cardinality(v_specs) then
    select s.parent_id into v_missing_parent
      from pg_catalog.unnest(v_specs) as s
     where s.parent_id is not null
       and not exists (select from conductor.tasks p where p.id = s.parent_id)
     limit 1;
    if found then
      raise exception 'parent task % does not exist', v_missing_parent using errcode = 'QC203';
    end if;
    select pg_catalog.array_agg(coalesce(own.id, holder.id) order by s.ordinality)
      into v_ids
      from pg_catalog.unnest(v_specs) with ordinality as s
      left join conductor.tasks own on own.id = v_ids[s.ordinality]
      left join conductor.tasks holder
        on own.id is null
       and holder.dedupe_key = s.dedupe_key
       and holder.status in ('queued', 'running', 'waiting');
    if pg_catalog.array_position(v_ids, null) is not null then
      raise exception 'the holder of dedupe_key % finished while this enqueue waited for it',
        conductor._echo(v_specs[pg_catalog.array_position(v_ids, null)].dedupe_key)
        using errcode = '40001', hint = 'Retry the enqueue.';
    end if;
  end if;

  return v_ids;
end
$$;

comment on function conductor._enqueue(conductor._task_spec[]) is
$$Enqueues specs in one INSERT, each resolved (the caller's value, else the kind's, else the
engine's) and validated; returns the ids in input order, a dedupe loser's being its holder's.
Raises the first bad spec's QC101-QC104 or QC106 (detail: task #n of the batch), QC203 for a
missing parent, 40001 when a dedupe holder finished while it waited; then nothing is queued.
Notifies the queues it filled. Locks the rows it inserts; waits on a concurrent enqueue of
the same dedupe_key. Called by enqueue_many, spawn, tick and fire_schedule.$$;

revoke execute on function conductor._enqueue(conductor._task_spec[]) from public;

create or replace function conductor.enqueue(
  kind            text,
  payload         jsonb default '{}',
  queue           text default null,
  priority        integer default null,
  run_at          timestamptz default null,
  max_attempts    integer default null,
  dedupe_key      text default null,
  concurrency_key text default null,
  parent_id       bigint default null,
  max_recoveries  integer default null,
  backoff_base    interval default null,
  backoff_factor  double precision default null,
  backoff_max     interval default null,
  timeout         interval default null
) returns bigint
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_now timestamptz := conductor.now();
  v_spec conductor._task_spec;
  v_problem text;
  v_id bigint;
  v_root bigint;
  v_kind record;
  v_told boolean;
begin
  -- the kind's defaults (one probe of kinds_pkey) and the payload limit, in one statement
  select k.queue, k.priority, k.concurrency_key, k.timeout, k.max_attempts, k.max_recoveries,
         st.max_payload_bytes
    into v_kind
    from conductor.settings st
    left join conductor.kinds k on k.kind = enqueue.kind
   where st.one;
  v_spec := row(
    enqueue.kind, enqueue.payload, coalesce(enqueue.queue, v_kind.queue, 'default'),
    coalesce(enqueue.priority, v_kind.priority, 0), enqueue.run_at,
    coalesce(enqueue.max_attempts, v_kind.max_attempts, 1), enqueue.dedupe_key,
    coalesce(enqueue.concurrency_key, v_kind.concurrency_key), enqueue.parent_id,
    coalesce(enqueue.max_recoveries, v_kind.max_recoveries, 3), enqueue.backoff_base,
    enqueue.backoff_factor, enqueue.backoff_max, coalesce(enqueue.timeout, v_kind.timeout));
  v_problem := conductor._spec_problem(v_spec, v_kind.max_payload_bytes);
  if v_problem is not null then
    perform conductor._raise_spec_problem(v_problem, v_spec);
  end if;
  v_id := pg_catalog.nextval('conductor.tasks_id_seq');
  v_root := v_id;
  if enqueue.parent_id is not null then
    select p.root_id into v_root from conductor.tasks p where p.id = enqueue.parent_id;
    if not found then
      raise exception 'parent task % does not exist', enqueue.parent_id using errcode = 'QC203';
    end if;
  end if;

  if enqueue.dedupe_key is null then
    -- no ON CONFLICT: a speculative insertion costs a lock and a WAL record more
    insert into conductor.tasks as t (
      id, queue, kind, payload, priority, run_at, max_attempts, max_recoveries,
      backoff_base, backoff_factor, backoff_max, concurrency_key,
      parent_id, root_id, enqueued_at, timeout)
    values (v_id, v_spec.queue, enqueue.kind, enqueue.payload, v_spec.priority,
            coalesce(enqueue.run_at, v_now), v_spec.max_attempts, v_spec.max_recoveries,
            enqueue.backoff_base, enqueue.backoff_factor, enqueue.backoff_max,
            v_spec.concurrency_key, enqueue.parent_id, v_root, v_now, v_spec.timeout);
    v_told := conductor._notify_queue(v_spec.queue);
    return v_id;
  end if;

  insert into conductor.tasks as t (
    id, queue, kind, payload, priority, run_at, max_attempts, max_recoveries,
    backoff_base, backoff_factor, backoff_max, dedupe_key, concurrency_key,
    parent_id, root_id, enqueued_at, timeout)
  values (v_id, v_spec.queue, enqueue.kind, enqueue.payload, v_spec.priority,
          coalesce(enqueue.run_at, v_now), v_spec.max_attempts, v_spec.max_recoveries,
          enqueue.backoff_base, enqueue.backoff_factor, enqueue.backoff_max, enqueue.dedupe_key,
          v_spec.concurrency_key, enqueue.parent_id, v_root, v_now, v_spec.timeout)
  on conflict (dedupe_key) where dedupe_key is not null and status in ('queued', 'running', 'waiting')
  do nothing;
  if found then
    v_told := conductor._notify_queue(v_spec.queue);
    return v_id;
  end if;

  -- a dedupe holder, committed before this statement began or while it waited
  select holder.id into v_id
    from conductor.tasks holder
   where holder.dedupe_key = enqueue.dedupe_key
     and holder.status in ('queued', 'running', 'waiting');
  if not found then
    raise exception 'the holder of dedupe_key % finished while this enqueue waited for it',
      conductor._echo(enqueue.dedupe_key)
      using errcode = '40001', hint = 'Retry the enqueue.';
  end if;
  return v_id;
end
$$;

comment on function conductor.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, bigint, integer, interval, double precision, interval, interval) is
$$Writes one task and returns its id.
kind: the handler name (non-empty). payload: a JSON object, at most 1 MiB by default.
queue, priority (higher first), concurrency_key (at most one running task per key),
timeout (how long one attempt may run), max_attempts, max_recoveries: NULL takes the
kind's (configure_kind), else 'default', 0, none, no limit, 1 attempt (retries are
opt-in), 3 recoveries. backoff_*: NULL takes the kind's at each failure, else 30 s
doubling to at most 1 h, less up to 20 % jitter. run_at: NULL is now.
dedupe_key: when an unfinished task holds it, returns that task's id and writes nothing.
parent_id: the spawning task; the new task joins its run (root_id).
The rules apply to the values as resolved: run_at a finite time from 0001-01-02 to
9999-12-30 UTC; max_attempts >= 1, max_recoveries >= 0, backoff_base and backoff_max
0-30 days (base not over max), backoff_factor 1-10; timeout more than 0 and at most
30 days; dedupe_key and concurrency_key at most 1000 bytes.
Raises QC101 kind, QC102 payload not an object, QC103 payload too large, QC104 queue,
QC106 run_at, retry policy, timeout or key, QC203 parent not found. Any number of callers
at once.$$;

create or replace function conductor.enqueue_many(tasks jsonb) returns setof bigint
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_specs conductor._task_spec[];
  v_ord bigint;
  v_task jsonb;
  v_key text;
begin
  if enqueue_many.tasks is null or pg_catalog.jsonb_typeof(enqueue_many.tasks) <> 'array' then
    raise exception 'enqueue_many takes a JSON array of task objects, got %',
      coalesce(pg_catalog.jsonb_typeof(enqueue_many.tasks), 'SQL NULL')
      using errcode = 'QC106';
  end if;
  if exists (select from pg_catalog.jsonb_array_elements(enqueue_many.tasks) e(t)
              where pg_catalog.jsonb_typeof(e.t) <> 'object') then
    raise exception 'enqueue_many takes a JSON array of task objects; an element is not an object'
      using errcode = 'QC106';
  end if;

  -- The values are read in a block of their own (no writes in it, so it costs a
  -- subtransaction's start and end, not an XID): a value that does not convert
  -- (a word for an integer, a malformed time or interval) is named as QC106
  -- rather than PostgreSQL's own 22P02, 22007 or 22003.
  begin
    v_specs := array(
      select row(
               t->>'kind',
               coalesce(t->'payload', '{}'),
               t->>'queue',
               (t->>'priority')::integer,
               (t->>'run_at')::timestamptz,
               (t->>'max_attempts')::integer,
               t->>'dedupe_key',
               t->>'concurrency_key',
               (t->>'parent_id')::bigint,
               (t->>'max_recoveries')::integer,
               (t->>'backoff_base')::interval,
               (t->>'backoff_factor')::double precision,
               (t->>'backoff_max')::interval,
               (t->>'timeout')::interval
             )::conductor._task_spec
        from pg_catalog.jsonb_array_elements(enqueue_many.tasks) with ordinality as a(t, n)
       order by a.n);
  exception when data_exception then
    -- the slow path, only when it happens: find the first task and key at fault
    for v_ord, v_task in
      select a.n, a.t from pg_catalog.jsonb_array_elements(enqueue_many.tasks) with ordinality as a(t, n) order by a.n
    loop
      foreach v_key in array array['priority', 'run_at', 'max_attempts', 'parent_id', 'max_recoveries',
                                   'backoff_base', 'backoff_factor', 'backoff_max', 'timeout'] loop
        begin
          if v_key in ('priority', 'max_attempts', 'max_recoveries') then
            perform (v_task->>v_key)::integer;
          elsif v_key = 'parent_id' then
            perform (v_task->>v_key)::bigint;
          elsif v_key = 'run_at' then
            perform (v_task->>v_key)::timestamptz;
          elsif v_key = 'backoff_factor' then
            perform (v_task->>v_key)::double precision;
          else
            perform (v_task->>v_key)::interval;
          end if;
        exception when data_exception then
          raise exception using errcode = 'QC106',
            message = pg_catalog.format('invalid %s %s in task #%s of the batch: it must be %s',
              v_key, conductor._echo(v_task->>v_key), v_ord,
              case when v_key in ('priority', 'max_attempts', 'max_recoveries', 'parent_id') then 'an integer'
                   when v_key = 'run_at' then 'a timestamp with time zone'
                   when v_key = 'backoff_factor' then 'a number'
                   else 'an interval' end),
            detail = sqlerrm;
        end;
      end loop;
    end loop;
    raise;  -- no key at fault: the original error
  end;

  return query select pg_catalog.unnest(conductor._enqueue(v_specs));
end
$$;

comment on function conductor.enqueue_many(jsonb) is
$$Writes a batch of tasks in one statement; returns their ids in input order.
tasks: a JSON array of objects with the keys of enqueue (kind, payload, queue, priority,
run_at, max_attempts, dedupe_key, concurrency_key, parent_id, max_recoveries,
backoff_base, backoff_factor, backoff_max, timeout); a missing key is resolved per task
as enqueue resolves a NULL argument: the task's kind's value (configure_kind), else the
engine's default.
All or nothing: one bad task raises (as enqueue does, the detail naming its place in the
batch) and writes none. Raises QC106 when tasks is not an array of objects, or a key holds
a value that does not convert to its type (naming the key, the task and the value).$$;

revoke execute on function conductor.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, bigint, integer, interval, double precision, interval, interval) from public;
revoke execute on function conductor.enqueue_many(jsonb) from public;
grant execute on function conductor.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, bigint, integer, interval, double precision, interval, interval)
  to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.enqueue_many(jsonb) to conductor_client, conductor_worker, conductor_admin;

commit;
