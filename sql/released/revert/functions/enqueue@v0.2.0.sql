-- Revert conductor:functions/enqueue from pg: back to its v0.1.0 body
--
-- The v0.1.0 deploy script (functions/enqueue@v0.1.0.sql), with create or replace, and
-- search_path pinned to pg_catalog, pg_temp instead of '': going back to v0.1.0's
-- bodies does not reopen the pg_temp escalation (issue 14).
--
-- Writing work. Two paths share one validation (conductor._spec_problem, an
-- inlinable SQL expression, and conductor._raise_spec_problem, its messages):
--
--   conductor.enqueue(kind, payload, queue, ...) -> bigint
--       one task: plain statements (a kinds lookup, INSERT ... VALUES), for
--       one task 1.1-1.25x the batch path's rate (pgbench -c 2, enqueue_many
--       of one object) and 0.7x its backend CPU
--   conductor.enqueue_many(tasks jsonb)          -> setof bigint, in input order
--   conductor._enqueue(specs) -> ids in input order
--       a batch in one INSERT; enqueue_many, spawn and tick use it. The common
--       path is two statements (validate, insert); a missing parent or a task
--       losing to a dedupe holder takes a slower path only when it happens.
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
-- reads conductor.tasks only by key (the parent's root, a dedupe holder) and
-- sequential and bitmap scans are off: every such plan is an index probe
-- whatever the statistics said (pgTAP
-- enqueue_many/cached_plans_stay_on_index_probes). enqueue's statements are
-- lookups by a unique key and an INSERT ... VALUES, planned once too.
--
-- Locks: the inserted rows, and the holder's index entry while waiting on a
-- concurrent enqueue of the same dedupe_key. Any number of callers at once.

begin;

-- the reworked enqueue has a timeout, and v0.1.0's thirteen parameters come back
drop function conductor.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, bigint, integer,
                                interval, double precision, interval, interval);
-- the reworked _raise_spec_problem takes a detail instead of a batch position
drop function conductor._raise_spec_problem(text, conductor._task_spec, text);
drop function conductor._spec_problems(conductor._task_spec[]);
-- the rule moved into a scalar function taking the payload limit
drop function conductor._spec_problem(conductor._task_spec, integer);

create or replace function conductor._spec_problem(s conductor._task_spec) returns text
  language sql stable
as $$
  select case
           when s.kind is null or s.kind = '' or s.kind <> pg_catalog.btrim(s.kind)
                or pg_catalog.length(s.kind) > 200 then 'QC101'
           when s.payload is null or pg_catalog.jsonb_typeof(s.payload) <> 'object' then 'QC102'
           when pg_catalog.pg_column_size(s.payload) > conductor._max_payload_bytes() then 'QC103'
           when s.queue is null or pg_catalog.length(s.queue) > 100
                or s.queue !~ '^[A-Za-z0-9][A-Za-z0-9_.:/-]*$' then 'QC104'
           when s.max_attempts < 1 or s.max_recoveries < 0
                or s.backoff_base < interval '0' or s.backoff_max < interval '0'
                or s.backoff_factor < 1
                or pg_catalog.octet_length(s.dedupe_key) > 1000
                or pg_catalog.octet_length(s.concurrency_key) > 1000 then 'QC106'
         end
$$;

comment on function conductor._spec_problem(conductor._task_spec) is
$$The SQLSTATE a task spec would be refused with (QC101-QC104, QC106), or NULL when it is valid.$$;

create or replace function conductor._raise_spec_problem(code text, ord bigint, s conductor._task_spec) returns void
  language plpgsql stable
as $$
begin
  case code
  when 'QC101' then
    raise exception 'invalid kind %: a kind is a non-empty name of at most 200 characters without surrounding spaces',
      coalesce(pg_catalog.quote_literal(s.kind), 'NULL')
      using errcode = 'QC101', detail = pg_catalog.format('task #%s of the batch', ord);
  when 'QC102' then
    raise exception 'invalid payload for kind %: a payload is a JSON object, got %',
      pg_catalog.quote_literal(s.kind), coalesce(pg_catalog.jsonb_typeof(s.payload), 'SQL NULL')
      using errcode = 'QC102', detail = pg_catalog.format('task #%s of the batch', ord);
  when 'QC103' then
    raise exception 'payload too large for kind %: % bytes, the limit is % bytes',
      pg_catalog.quote_literal(s.kind), pg_catalog.pg_column_size(s.payload), conductor._max_payload_bytes()
      using errcode = 'QC103',
            hint = 'Store large data elsewhere and pass a reference, or raise conductor.max_payload_bytes.';
  when 'QC104' then
    raise exception 'invalid queue %: a queue name is 1-100 letters, digits and _ . : / -, starting with a letter or digit',
      coalesce(pg_catalog.quote_literal(s.queue), 'NULL')
      using errcode = 'QC104';
  else
    raise exception 'invalid retry policy for kind %: max_attempts % (>= 1), max_recoveries % (>= 0), backoff base % and max % (>= 0), factor % (>= 1), dedupe_key and concurrency_key at most 1000 bytes',
      pg_catalog.quote_literal(s.kind), s.max_attempts, s.max_recoveries,
      s.backoff_base, s.backoff_max, s.backoff_factor
      using errcode = 'QC106', detail = pg_catalog.format('task #%s of the batch', ord);
  end case;
end
$$;

comment on function conductor._raise_spec_problem(text, bigint, conductor._task_spec) is
$$Raises the error _spec_problem named for task #ord: its SQLSTATE, a message naming the value.$$;

revoke execute on function conductor._spec_problem(conductor._task_spec) from public;
revoke execute on function conductor._raise_spec_problem(text, bigint, conductor._task_spec) from public;

create or replace function conductor._enqueue(specs conductor._task_spec[])
  returns bigint[]
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set enable_seqscan = off
  set enable_bitmapscan = off
as $$
declare
  v_now timestamptz := conductor.now();
  v_bad record;
  v_ids bigint[];
  v_inserted bigint;
  v_missing_parent bigint;
begin
  -- the first bad spec, in array order (a function scan keeps it)
  select conductor._spec_problem(s) as code, s as spec
    into v_bad
    from pg_catalog.unnest(_enqueue.specs) as s
   where conductor._spec_problem(s) is not null
   limit 1;
  if found then
    perform conductor._raise_spec_problem(v_bad.code, pg_catalog.array_position(_enqueue.specs, v_bad.spec),
                                          v_bad.spec);
  end if;

  -- Ids are drawn before the insert so a root can be its own root_id, and the
  -- answer keeps the input order. A row that loses to a dedupe holder leaves a
  -- gap in the sequence, which is harmless.
  with spec as (
    select n.*,
           case when n.parent_id is null then n.new_id
                else (select p.root_id from conductor.tasks p where p.id = n.parent_id) end as root_id
      from (select s.ordinality as ord, pg_catalog.nextval('conductor.tasks_id_seq') as new_id, s.*
              from pg_catalog.unnest(_enqueue.specs) with ordinality as s) n
  ), inserted as (
    insert into conductor.tasks as t (
      id, queue, kind, payload, priority, run_at, max_attempts, max_recoveries,
      backoff_base, backoff_factor, backoff_max, dedupe_key, concurrency_key,
      parent_id, root_id, enqueued_at)
    select spec.new_id, spec.queue, spec.kind, spec.payload, coalesce(spec.priority, 0),
           coalesce(spec.run_at, v_now),
           coalesce(spec.max_attempts, k.max_attempts, 1),
           coalesce(spec.max_recoveries, k.max_recoveries, 3),
           spec.backoff_base, spec.backoff_factor, spec.backoff_max, spec.dedupe_key,
           spec.concurrency_key, spec.parent_id, spec.root_id, v_now
      from spec
      left join conductor.kinds k on k.kind = spec.kind
     where spec.root_id is not null  -- null: the parent does not exist
    on conflict (dedupe_key) where dedupe_key is not null and status in ('queued', 'running', 'waiting')
    do nothing
    returning 1
  )
  select pg_catalog.array_agg(spec.new_id order by spec.ord), (select pg_catalog.count(*) from inserted)
    into v_ids, v_inserted
    from spec;

  -- A task not inserted: its parent does not exist (raise), or it lost to a
  -- dedupe holder (committed before this statement began or while it waited,
  -- or an earlier task of this batch with the same key), which a fresh
  -- statement sees.
  if v_inserted < pg_catalog.cardinality(_enqueue.specs) then
    select s.parent_id into v_missing_parent
      from pg_catalog.unnest(_enqueue.specs) as s
     where s.parent_id is not null
       and not exists (select from conductor.tasks p where p.id = s.parent_id)
     limit 1;
    if found then
      raise exception 'parent task % does not exist', v_missing_parent using errcode = 'QC203';
    end if;
    select pg_catalog.array_agg(coalesce(own.id, holder.id) order by s.ordinality)
      into v_ids
      from pg_catalog.unnest(_enqueue.specs) with ordinality as s
      left join conductor.tasks own on own.id = v_ids[s.ordinality]
      left join conductor.tasks holder
        on own.id is null
       and holder.dedupe_key = s.dedupe_key
       and holder.status in ('queued', 'running', 'waiting');
    if pg_catalog.array_position(v_ids, null) is not null then
      raise exception 'the holder of dedupe_key % finished while this enqueue waited for it',
        pg_catalog.quote_literal(specs[pg_catalog.array_position(v_ids, null)].dedupe_key)
        using errcode = '40001', hint = 'Retry the enqueue.';
    end if;
  end if;

  return v_ids;
end
$$;

revoke execute on function conductor._enqueue(conductor._task_spec[]) from public;

create or replace function conductor.enqueue(
  kind            text,
  payload         jsonb default '{}',
  queue           text default 'default',
  priority        integer default 0,
  run_at          timestamptz default null,
  max_attempts    integer default null,
  dedupe_key      text default null,
  concurrency_key text default null,
  parent_id       bigint default null,
  max_recoveries  integer default null,
  backoff_base    interval default null,
  backoff_factor  double precision default null,
  backoff_max     interval default null
) returns bigint
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_spec conductor._task_spec := row(
    enqueue.kind, enqueue.payload, enqueue.queue, enqueue.priority, enqueue.run_at,
    enqueue.max_attempts, enqueue.dedupe_key, enqueue.concurrency_key, enqueue.parent_id,
    enqueue.max_recoveries, enqueue.backoff_base, enqueue.backoff_factor, enqueue.backoff_max);
  v_problem text := conductor._spec_problem(v_spec);
  v_now timestamptz := conductor.now();
  v_id bigint;
  v_root bigint;
  v_kind_attempts integer;
  v_kind_recoveries integer;
begin
  if v_problem is not null then
    perform conductor._raise_spec_problem(v_problem, 1, v_spec);
  end if;
  v_id := pg_catalog.nextval('conductor.tasks_id_seq');
  v_root := v_id;
  if enqueue.parent_id is not null then
    select p.root_id into v_root from conductor.tasks p where p.id = enqueue.parent_id;
    if not found then
      raise exception 'parent task % does not exist', enqueue.parent_id using errcode = 'QC203';
    end if;
  end if;
  if enqueue.max_attempts is null or enqueue.max_recoveries is null then
    select k.max_attempts, k.max_recoveries into v_kind_attempts, v_kind_recoveries
      from conductor.kinds k where k.kind = enqueue.kind;
  end if;

  insert into conductor.tasks as t (
    id, queue, kind, payload, priority, run_at, max_attempts, max_recoveries,
    backoff_base, backoff_factor, backoff_max, dedupe_key, concurrency_key,
    parent_id, root_id, enqueued_at)
  values (v_id, enqueue.queue, enqueue.kind, enqueue.payload, coalesce(enqueue.priority, 0),
          coalesce(enqueue.run_at, v_now), coalesce(enqueue.max_attempts, v_kind_attempts, 1),
          coalesce(enqueue.max_recoveries, v_kind_recoveries, 3), enqueue.backoff_base,
          enqueue.backoff_factor, enqueue.backoff_max, enqueue.dedupe_key, enqueue.concurrency_key,
          enqueue.parent_id, v_root, v_now)
  on conflict (dedupe_key) where dedupe_key is not null and status in ('queued', 'running', 'waiting')
  do nothing;
  if found then
    return v_id;
  end if;

  -- a dedupe holder, committed before this statement began or while it waited
  select holder.id into v_id
    from conductor.tasks holder
   where holder.dedupe_key = enqueue.dedupe_key
     and holder.status in ('queued', 'running', 'waiting');
  if not found then
    raise exception 'the holder of dedupe_key % finished while this enqueue waited for it',
      pg_catalog.quote_literal(enqueue.dedupe_key)
      using errcode = '40001', hint = 'Retry the enqueue.';
  end if;
  return v_id;
end
$$;

comment on function conductor.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, bigint, integer, interval, double precision, interval) is
$$Writes one task and returns its id.
kind: the handler name (non-empty). payload: a JSON object, at most 1 MiB by default.
queue 'default'; priority 0 (higher first); run_at now. max_attempts, max_recoveries and
backoff_*: NULL takes the kind's policy (configure_kind), else 1 attempt (retries are
opt-in), 3 recoveries, backoff 30 s doubling to at most 1 h, less up to 20 % jitter.
dedupe_key: when an unfinished task holds it, returns that task's id and writes nothing.
parent_id: the spawning task; the new task joins its run (root_id).
Raises QC101 kind, QC102 payload not an object, QC103 payload too large, QC104 queue,
QC106 retry policy, QC203 parent not found. Any number of callers at once.$$;

create or replace function conductor.enqueue_many(tasks jsonb) returns setof bigint
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
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

  return query
  select pg_catalog.unnest(conductor._enqueue(array(
      select row(
               t->>'kind',
               coalesce(t->'payload', '{}'),
               coalesce(t->>'queue', 'default'),
               (t->>'priority')::integer,
               (t->>'run_at')::timestamptz,
               (t->>'max_attempts')::integer,
               t->>'dedupe_key',
               t->>'concurrency_key',
               (t->>'parent_id')::bigint,
               (t->>'max_recoveries')::integer,
               (t->>'backoff_base')::interval,
               (t->>'backoff_factor')::double precision,
               (t->>'backoff_max')::interval
             )::conductor._task_spec
        from pg_catalog.jsonb_array_elements(enqueue_many.tasks) with ordinality as a(t, n)
       order by a.n)));
end
$$;

comment on function conductor.enqueue_many(jsonb) is
$$Writes a batch of tasks in one statement; returns their ids in input order.
tasks: a JSON array of objects with the keys of enqueue (kind, payload, queue, priority,
run_at, max_attempts, dedupe_key, concurrency_key, parent_id, max_recoveries,
backoff_base, backoff_factor, backoff_max); a missing key takes enqueue's default.
All or nothing: one bad task raises (as enqueue does) and writes none.
Raises QC106 when tasks is not an array of objects.$$;

revoke execute on function conductor.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, bigint, integer, interval, double precision, interval) from public;
revoke execute on function conductor.enqueue_many(jsonb) from public;
grant execute on function conductor.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, bigint, integer, interval, double precision, interval)
  to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.enqueue_many(jsonb) to conductor_client, conductor_worker, conductor_admin;

-- v0.1.0 had no comment on these helpers (create or replace keeps the reworked one's)
comment on function conductor._enqueue(conductor._task_spec[]) is null;

commit;
