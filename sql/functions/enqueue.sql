-- Deploy conductor:functions/enqueue to pg
-- (reworked after v0.2.0; the released body is sql/released/functions/enqueue@v0.2.0.sql)
--
-- Writing work. Every path shares one validation: conductor._spec_problem, the
-- rules of a task in one expression (for enqueue, configure_kind and the
-- schedules; conductor._spec_problems applies it once per distinct spec of
-- _enqueue's batch, enqueue_many's fast path once per distinct task through
-- conductor._require_spec), so each SQLSTATE means one rule everywhere, and
-- conductor._raise_spec_problem, its messages. conductor._check_queue_names(queues)
-- applies the queue rule to a worker's queues list (claim, next_due, sleep,
-- register_worker).
--
-- Names (issue 25): a queue is 1-100 of A-Z a-z 0-9 _ . : / -, starting with a
-- letter or digit (unchanged since v0.1.0, so no stored task breaks it). A kind
-- is 1-200 characters without surrounding spaces, control characters (C0, DEL,
-- C1), format characters (bidi overrides and isolates, zero widths, the BOM,
-- tags: Unicode's Cf), line and paragraph separators, or markup (< > & " ' `):
-- a kind is shown on the dashboard, in logs and terminals, and must not forge or
-- reorder what they show. Every way a kind gets in goes through _spec_problem
-- (enqueue, enqueue_many, spawn, tick and fire_schedule through _enqueue;
-- configure_kind; create_schedule and update_schedule; set_rate_limit).
-- Tasks stored before the rule under a kind it now refuses keep working: they
-- are claimed (a kinds list is a filter, not judged by the rule), completed,
-- failed, retried (retry requeues the stored row) and shown; no new task, kind
-- configuration, schedule or rate limit can be declared under such a kind
-- (QC101 says why; rename it), and a schedule stored under one records that
-- QC101 as its last error at each due time instead of firing.
--
--   conductor.enqueue(kind, payload, queue, ..., timeout, traceparent, expires_in) -> bigint
--       one task: plain statements (one kinds lookup by primary key, INSERT
--       ... VALUES), for one task 1.1-1.25x the batch path's rate (pgbench -c
--       2, enqueue_many of one object) and 0.7x its backend CPU
--   conductor.enqueue_many(tasks jsonb)          -> setof bigint, in input order
--       the fast path (issue 26), for a batch whose tasks name no parent,
--       dedupe key, dedupe option or expires_in and whose kinds set no
--       expires_in (the common batch): three statements and no composite
--       array. One pass checks the elements are objects and looks for those
--       keys; one reads the batch's distinct tasks (alike objects but for the
--       payload, read once: their values converted, their kinds looked up);
--       one INSERT reads the JSON, resolves each task and judges the first of
--       each distinct task as it is about to write it. Any other batch is read
--       into conductor._task_spec values for _enqueue (the general path).
--       CPU instructions a task (bench/instructions.sh (e), (f)): 0.70 of a
--       50-row INSERT ... VALUES into the storage twin, 0.77 at 500 (0.55 and
--       0.60 through _enqueue).
--   conductor._enqueue(specs) -> ids in input order
--       a batch in one statement (an INSERT of the tasks without a dedupe key,
--       and one ON CONFLICT DO NOTHING for those with one); enqueue_many's
--       general path, spawn, fork and the schedules use it. The common
--       path is three statements (resolve, validate, insert); a missing parent
--       or a task losing to a dedupe holder takes a slower path only when it
--       happens.
--
-- Resolution (written in enqueue, _enqueue and enqueue_many's fast path, each
-- a statement: a shared function call (20,000 instructions a task) or CTE (9,500)
-- would cost 10-20 % of a batch task;
-- enqueue_many/fast_and_general_paths_store_alike holds the batch paths alike):
-- queue, priority, concurrency_key, timeout, max_attempts,
-- max_recoveries and concurrency_limit are each the caller's value, else the kind's
-- (conductor.kinds, written by configure_kind), else the engine's ('default',
-- 0, none, none, 1, 3, 1; the kind's limit only for a keyed task), so a task enqueued from psql, a trigger or another
-- language lands where the kind's workers look for it. The spec is validated
-- after it is resolved: what is checked is what is stored (a kind's values
-- were checked by configure_kind, but v0.1.0 or a hand edit may have written
-- others). Backoff stays NULL on the task when not given: fail reads the
-- kind's at each failure.
--
-- Expiry before start (issue 30, schema/expiry): expires_in is the caller's,
-- else the kind's, else none; a task with one gets expires_at = run_at +
-- expires_in, its deadline to start (claim never starts it after that, reap()
-- ends it 'expired'), by conductor._set_deadlines after its insert. The insert
-- statements are those of a task without one: such a task writes no column,
-- no index entry and runs no statement of expiry. What it still pays is one
-- more parameter resolved, validated and tested (bench/instructions.sh (a):
-- 774,600 -> 791,700 instructions an enqueue, about a third of it parsing the
-- extra default of a call sent as text; 10,000 more went with an index on
-- tasks.expires_at, schema/expiry).
--
-- Dedupe: a task whose dedupe_key an unfinished task holds is not inserted;
-- its id in the answer is the holder's. The unique index tasks_dedupe_key is
-- the arbiter, so concurrent enqueues of one key still give one task.
--
-- Dedupe options (issue 30; docs/uniqueness.md, docs/debounce.md), taken only
-- with a dedupe_key, each NULL by default (today's dedupe, on the paths above):
--   dedupe_window  the key is also held by a finished task of the same aligned
--                  period (date_bin on 2000-01-01 UTC: '1 hour' is 10:00-11:00)
--   dedupe_states  the statuses that hold the key: the unfinished ones and any
--                  finished ones (default with a window: also succeeded)
--   on_duplicate   'ignore' (the holder's id, nothing written), 'replace' (a
--                  queued holder takes the payload and run_at), 'preserve_run_at'
--                  (the payload only)
--   debounce, debounce_max   a queued holder takes the payload and runs after
--                  debounce of quiet, never later than its first enqueue +
--                  debounce_max
-- conductor._enqueue_held(spec, id, root, at) writes such a task: INSERT ... ON
-- CONFLICT DO NOTHING against both arbiters (tasks_dedupe_key, and
-- tasks_dedupe_held on (dedupe_key, dedupe_until) for the tasks in one of their
-- dedupe_states), then the holder: replaced by compare-and-set on status
-- 'queued'; a holder that started (running, waiting) keeps running and gives
-- its key up (dedupe_key NULL, as graphile-worker's replace does) to a new
-- task carrying this payload; a finished holder is the answer. A claim racing a
-- replace either runs the replaced payload or makes the replace a new task.
--
-- Plans: every statement of _enqueue and enqueue_many is planned once per connection
-- (plan_cache_mode = force_generic_plan; planning it afresh each call cost
-- about 0.7 ms of a 50-task batch's 3 ms). A generic plan made while
-- conductor.tasks was empty stays on the connection as the table grows
-- (bench/stale_plans.py measured a join so planned at 200x slower), so it
-- reads conductor.tasks and conductor.kinds only by key (the kind of each
-- spec or distinct task, the parent's root, a dedupe holder) and sequential and bitmap scans
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

-- v0.1.0's _raise_spec_problem(code, ord, spec) took a batch position; the
-- messages now take a detail, so schedules and configure_kind can say where.
-- timeout is new (the last parameter), and queue and priority default to NULL
-- (the kind's, else the engine's): v0.1.0's thirteen-parameter enqueue goes, or
-- a call naming only those thirteen would match both. traceparent is new after
-- v0.2.0 (the last parameter, issue 27): v0.2.0's fourteen-parameter enqueue goes
-- for the same reason, and the fifteen-parameter one for the options of issue 30
-- (concurrency_limit, the dedupe options, expires_in).
drop function if exists conductor.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, bigint,
                                          integer, interval, double precision, interval, interval);
drop function if exists conductor.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, bigint,
                                          integer, interval, double precision, interval, interval, text);
-- rate_key is new after the dedupe options and expires_in (the last parameter, issue 30):
-- the twenty-two-parameter enqueue goes too
drop function if exists conductor.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, bigint,
                                          integer, interval, double precision, interval, interval, text, integer,
                                          interval, text[], text, interval, interval, interval);

-- The characters a name may not hold because they are not seen, or change how
-- the text around them is shown: Unicode's control characters (Cc: C0, DEL,
-- C1; tab, newline and NUL's neighbours among them), format characters (Cf:
-- bidi embeddings, overrides and isolates such as U+202E, zero widths, word
-- joiners, U+FEFF, interlinear annotations, tags) and the line and paragraph
-- separators (Zl, Zp), as of Unicode 15. A bracket expression's body; the \u
-- and \U escapes are the regex engine's.
-- The rules of a task, in one place: one CASE over a spec, in a plpgsql
-- function so that it runs as a simple expression (no executor, no plan per
-- call: 2-3 us a spec), the settings' payload limit passed in. A SQL function
-- that pins its search_path is neither inlined nor its plan kept; a query per
-- spec (v0.2.0's first cut, one unnest over an array of one) cost 19 us of a
-- single enqueue's 90.
-- A call's dedupe options as the spec carries them (issue 30): NULL when none is
-- given, the statuses read by conductor._task_status (QC105 for a word that is none).
-- The one reading of enqueue's, enqueue_many's and spawn's options.
create or replace function conductor._dedupe_options(
  dedupe_window interval, dedupe_states text[], on_duplicate text, debounce interval, debounce_max interval)
  returns conductor._dedupe_spec
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if pg_catalog.num_nonnulls(_dedupe_options.dedupe_window, _dedupe_options.dedupe_states, _dedupe_options.on_duplicate,
                  _dedupe_options.debounce, _dedupe_options.debounce_max) = 0 then
    return null;
  end if;
  return row(_dedupe_options.dedupe_window,
             case when _dedupe_options.dedupe_states is not null then
               array(select conductor._task_status(w.word)
                       from pg_catalog.unnest(_dedupe_options.dedupe_states) with ordinality as w(word, n)
                      order by w.n) end,
             _dedupe_options.on_duplicate, _dedupe_options.debounce, _dedupe_options.debounce_max)::conductor._dedupe_spec;
end
$$;

comment on function conductor._dedupe_options(interval, text[], text, interval, interval) is
$$The dedupe options of one enqueue, enqueue_many task or spawn as a conductor._dedupe_spec:
NULL when all five are NULL; dedupe_states' words read by conductor._task_status, in their
order (QC105 for an unknown one). Checked afterwards by conductor._dedupe_problem.$$;

revoke execute on function conductor._dedupe_options(interval, text[], text, interval, interval) from public;

-- The rules of a task's dedupe options (issue 30), for conductor._spec_problem when
-- a spec gives one: apart, so that a spec without them never sets them up.
create or replace function conductor._dedupe_problem(d conductor._dedupe_spec, dedupe_key text)
  returns text
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
begin
  return case
           when _dedupe_problem.dedupe_key is null then 'dedupe_options'
           when not d.dedupe_window between interval '1 second' and interval '366 days'
                or pg_catalog.date_part('month', d.dedupe_window) <> 0
                or pg_catalog.date_part('year', d.dedupe_window) <> 0 then 'dedupe_window'
           when not d.dedupe_states @> conductor.unfinished_statuses()
                or pg_catalog.array_position(d.dedupe_states, null) is not null then 'dedupe_states'
           when d.on_duplicate not in ('ignore', 'replace', 'preserve_run_at') then 'on_duplicate'
           when not d.debounce between interval '1 millisecond' and interval '30 days' then 'debounce'
           when not d.debounce_max between interval '1 millisecond' and interval '366 days' then 'debounce_max'
           when d.debounce is null and d.debounce_max is not null
                or d.debounce > d.debounce_max
                or d.debounce is not null and d.on_duplicate <> 'replace' then 'debounce_conflict'
         end;
end
$$;

comment on function conductor._dedupe_problem(conductor._dedupe_spec, text) is
$$The first of the dedupe options d (of a spec whose dedupe_key is dedupe_key) that breaks a
rule, named as conductor._spec_problem names it (dedupe_options, dedupe_window,
dedupe_states, on_duplicate, debounce, debounce_max, debounce_conflict), or NULL. Called by
_spec_problem for a spec that gives dedupe options, its last rules.$$;

revoke execute on function conductor._dedupe_problem(conductor._dedupe_spec, text) from public;

create or replace function conductor._spec_problem(s conductor._task_spec, max_payload_bytes integer)
  returns text
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
begin
  return case
           when s.kind is null or s.kind = '' or s.kind <> pg_catalog.btrim(s.kind)
                or pg_catalog.length(s.kind) > 200
                -- hidden characters and markup; the pattern is folded to a constant
                -- when the expression is planned (immutable), so it costs one match
                or s.kind ~ ('[' || conductor._hidden_char_class() || '<>&"''`]') then 'kind'
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
           -- a limit is per key: one without a key would limit nothing
           when not s.concurrency_limit between 1 and 10000
                or (s.concurrency_limit is not null and s.concurrency_key is null) then 'concurrency_limit'
           -- W3C Trace Context, version 00's shape; NULL (no trace) costs nothing
           when s.traceparent !~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
                or pg_catalog.left(s.traceparent, 2) = 'ff'
                or pg_catalog.substr(s.traceparent, 4, 32) = '00000000000000000000000000000000'
                or pg_catalog.substr(s.traceparent, 37, 16) = '0000000000000000' then 'traceparent'
           when s.expires_in <= interval '0' or s.expires_in > interval '30 days' then 'expires_in'
           -- a key per customer or tenant: not empty, at most 1000 bytes (as the other keys)
           when s.rate_key = '' or pg_catalog.octet_length(s.rate_key) > 1000 then 'rate_key'
           -- the dedupe options, last: a NULL s.dedupe (none given) ends the rules here. Their
           -- own rules are a function of their own: every rule in this CASE is set up at each
           -- transaction, taken or not (the dedupe options' seven here cost a one-task
           -- enqueue 60,000 of its 950,000 instructions, bench/HISTORY.md)
           when s.dedupe is null then null
           else conductor._dedupe_problem(s.dedupe, s.dedupe_key)
         end;
end
$$;

comment on function conductor._spec_problem(conductor._task_spec, integer) is
$$The rules of a task, in one place: the first field of s that breaks one (kind, payload,
payload_size, queue, run_at, max_attempts, max_recoveries, backoff_base, backoff_max,
backoff_factor, backoff_order, timeout, dedupe_key, concurrency_key, traceparent,
concurrency_limit, expires_in), or NULL when s is valid. NULL fields (not given) are valid but for kind, payload and queue. A kind is 1-200
characters without surrounding spaces, control characters (C0, DEL, C1), format characters
(Unicode Cf: bidi controls such as U+202E, zero widths, U+FEFF, tags), U+2028, U+2029 or
markup (< > & " ' `); a queue is 1-100 of A-Z a-z 0-9 _ . : / -, starting with a letter or
digit. A timeout is more than 0 and at most 30 days; payload_size compares with
max_payload_bytes. A traceparent is W3C Trace Context's: version-traceid-parentid-flags,
lowercase hex of 2, 32, 16 and 2 digits, the version not ff, neither id all zeros.
A concurrency_limit is 1 to 10000 and needs a concurrency_key.
The dedupe options (s.dedupe) need a dedupe_key (dedupe_options); dedupe_window is 1 second
to 366 days without months or years; dedupe_states holds queued, running and waiting and no
NULL; on_duplicate is ignore, replace or preserve_run_at; debounce is 1 ms to 30 days,
debounce_max 1 ms to 366 days; debounce_conflict: debounce_max without debounce or under
it, or debounce with an on_duplicate other than replace.
An expires_in (the wait after the due time a task may have before its first start) is
more than 0 and at most 30 days.
conductor._raise_spec_problem raises a problem: QC101 kind, QC102 payload, QC103
payload_size, QC104 queue, QC120 dedupe_options, QC121 dedupe_states, QC122
debounce_conflict, QC106 the rest.$$;

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

-- A batch: the settings row read once, the rule applied once per distinct
-- spec. A call of _spec_problem costs about 2 us (entering a function with its
-- own search_path), most of a batch's validation when made per spec, and the
-- specs of a batch are mostly alike but for their payloads. The rule reads a
-- payload only for its type and whether it is over the limit, so every object
-- under the limit is judged as '{}': a batch of one kind and queue makes one
-- call, however many payloads it carries. (A rule that reads more of a
-- payload must change what is judged here; sql/tests/enqueue_many/
-- validation_matches_each_spec.sql compares the two over every rule.)
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
  with judged as materialized (
    select s.ordinality as ord,
           row(s.kind,
               case when pg_catalog.jsonb_typeof(s.payload) = 'object'
                         and pg_catalog.pg_column_size(s.payload) <= v_max
                    then '{}'::jsonb else s.payload end,
               s.queue, s.priority, s.run_at, s.max_attempts, s.dedupe_key, s.concurrency_key,
               s.parent_id, s.max_recoveries, s.backoff_base, s.backoff_factor, s.backoff_max,
               s.timeout, s.traceparent, s.concurrency_limit, s.dedupe, s.expires_in, s.rate_key)::conductor._task_spec as spec
      from pg_catalog.unnest(_spec_problems.specs) with ordinality as s
  ), verdicts as materialized (
    -- composite values compare NULL fields as equal, so alike specs meet here
    select d.spec, conductor._spec_problem(d.spec, v_max) as problem
      from (select distinct j.spec from judged j) d
  )
  select j.ord, v.problem
    from judged j
    join verdicts v on v.spec = j.spec
   where v.problem is not null
   order by j.ord;
end
$$;

comment on function conductor._spec_problems(conductor._task_spec[]) is
$$_spec_problem for each spec of a batch: the position (1-based) and first problem of each
spec that breaks a rule, in input order; nothing when all are valid. Alike specs are judged
once (an object payload under the limit is judged as '{}').$$;

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
    v_message := pg_catalog.format('invalid kind %s: a kind is a non-empty name of at most 200 characters without surrounding spaces, '
                                   'control or format characters (tab, newline, U+202E, ...) or any of < > & " '' `',
                                   conductor._echo(s.kind));
    v_hint := 'A kind names the handler that runs the task, e.g. send_email or shop.tasks.send_receipt.';
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
  when 'concurrency_limit' then
    if s.concurrency_key is null then
      v_message := pg_catalog.format('invalid concurrency_limit %s for kind %s: a limit is per concurrency_key, and the task has none',
                                     s.concurrency_limit, conductor._echo(s.kind));
      v_hint := 'Pass concurrency_key too (e.g. the customer''s id), or give the kind one (configure_kind).';
    else
      v_message := pg_catalog.format('invalid concurrency_limit %s for kind %s: it must be from 1 to 10000',
                                     s.concurrency_limit, conductor._echo(s.kind));
      v_hint := 'How many tasks of one key may run at once; NULL: the kind''s, else 1.';
    end if;
  when 'traceparent' then
    v_message := pg_catalog.format('invalid traceparent %s: a W3C traceparent is version-traceid-parentid-flags in '
                                   'lowercase hex (2, 32, 16 and 2 digits), the version not ff, neither id all zeros',
                                   conductor._echo(s.traceparent));
    v_hint := 'For example 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01, as OpenTelemetry''s W3C propagator writes it; NULL: no trace.';
  when 'dedupe_options' then
    v_code := 'QC120';
    v_message := pg_catalog.format('dedupe options for kind %s without a dedupe_key: dedupe_window, dedupe_states, '
                                   'on_duplicate, debounce and debounce_max apply to the holder of a dedupe_key',
                                   conductor._echo(s.kind));
    v_hint := 'Give the dedupe_key that names what must not run twice, e.g. digest:user:42.';
  when 'dedupe_window' then
    v_message := pg_catalog.format('invalid dedupe_window %s: it must be from 1 second to 366 days, without months or years',
                                   (s.dedupe).dedupe_window);
    v_hint := 'Windows are aligned periods in UTC, e.g. interval ''1 hour'' or ''1 day''; NULL: no window.';
  when 'dedupe_states' then
    v_code := 'QC121';
    v_message := pg_catalog.format('invalid dedupe_states %s: they must hold queued, running and waiting, and may add finished statuses',
                                   conductor._echo((s.dedupe).dedupe_states::text));
    v_hint := 'For example {queued,running,waiting,succeeded}; NULL: the unfinished ones, and succeeded with a dedupe_window.';
  when 'on_duplicate' then
    v_message := pg_catalog.format('invalid on_duplicate %s: one of ignore, replace, preserve_run_at',
                                   conductor._echo((s.dedupe).on_duplicate));
    v_hint := 'NULL is ignore: a duplicate enqueue returns the holder''s id.';
  when 'debounce' then
    v_message := pg_catalog.format('invalid debounce %s: it must be from 1 millisecond to 30 days', (s.dedupe).debounce);
  when 'debounce_max' then
    v_message := pg_catalog.format('invalid debounce_max %s: it must be from 1 millisecond to 366 days', (s.dedupe).debounce_max);
  when 'debounce_conflict' then
    v_code := 'QC122';
    v_message := pg_catalog.format('conflicting debounce options for kind %s: debounce %s, debounce_max %s, on_duplicate %s',
                                   conductor._echo(s.kind), coalesce((s.dedupe).debounce::text, 'NULL'),
                                   coalesce((s.dedupe).debounce_max::text, 'NULL'),
                                   coalesce(conductor._echo((s.dedupe).on_duplicate), 'NULL'));
    v_hint := 'debounce_max needs a debounce at most as long; a debounce replaces the waiting task (on_duplicate NULL or replace).';
  when 'expires_in' then
    v_message := pg_catalog.format('invalid expires_in %s for kind %s: it must be more than 0 and at most 30 days',
                                   s.expires_in, conductor._echo(s.kind));
    v_hint := 'How long after it is due the task may wait for its first start, e.g. interval ''10 minutes''; '
              'NULL: the kind''s, else for ever.';
  when 'rate_key' then
    v_message := pg_catalog.format('invalid rate_key %s for kind %s: a key is 1 to 1000 bytes',
                                   conductor._echo(s.rate_key), conductor._echo(s.kind));
    v_hint := 'The value whose bucket a per-key rate limit (set_rate_limit(per_key => true)) draws from, '
              'e.g. the customer''s id; NULL: no per-key limit applies.';
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

-- A worker's queues list (claim, next_due, sleep, register_worker) is judged by
-- the same queue rule, each name as a task's queue: no queue a task can have is
-- refused, and none that enqueue refuses gets into a sleep mark, a claim
-- position or a worker's row. (A kinds list is not judged by the kind rule: it
-- filters the tasks stored, and tasks stored before the rule under a kind it
-- now refuses are still claimed and served.)
create or replace function conductor._check_queue_names(queues text[]) returns void
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_spec conductor._task_spec;
  v_ord integer := 0;
  v_queue text;
begin
  if _check_queue_names.queues is null then
    return;
  end if;
  foreach v_queue in array _check_queue_names.queues loop
    v_ord := v_ord + 1;
    continue when v_queue is null;  -- the list's own rule (conductor._check_scope) says NULL
    v_spec := row('k', '{}', v_queue, null, null, null, null, null, null, null, null, null, null, null,
                  null, null, null, null, null)::conductor._task_spec;
    if conductor._spec_problem(v_spec, 2147483647) = 'queue' then
      perform conductor._raise_spec_problem('queue', v_spec, pg_catalog.format('queue #%s of the list', v_ord));
    end if;
  end loop;
end
$$;

comment on function conductor._check_queue_names(text[]) is
$$Raises QC104 (enqueue's message, detail naming the position) for the first name of queues
that conductor._spec_problem refuses as a task's queue; NULL names and a NULL list pass (the
list's own rule is conductor._check_scope's). For claim, next_due, sleep and register_worker.$$;

revoke execute on function conductor._check_queue_names(text[]) from public;
revoke execute on function conductor._spec_problems(conductor._task_spec[]) from public;
revoke execute on function conductor._spec_problem(conductor._task_spec) from public;
revoke execute on function conductor._spec_problem(conductor._task_spec, integer) from public;
revoke execute on function conductor._raise_spec_problem(text, conductor._task_spec, text) from public;

-- A task with dedupe options (issue 30). The insert tries both arbiters at
-- once (ON CONFLICT DO NOTHING without a target); a loser looks for the holder
-- (a fresh snapshot: committed before the insert, or while it waited) and acts
-- by on_duplicate. Every change of the holder is a compare-and-set (status
-- queued to replace it, running or waiting to take its key), so a claim or a
-- finish that wins the race sends this enqueue round again: at most three
-- rounds, then 40001.
create or replace function conductor._enqueue_held(s conductor._task_spec, new_id bigint, root bigint, at timestamptz)
  returns bigint
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_d conductor._dedupe_spec := _enqueue_held.s.dedupe;
  v_mode text := coalesce(v_d.on_duplicate, case when v_d.debounce is not null then 'replace' else 'ignore' end);
  -- with a window and no states: a succeeded task holds its period too (River's default)
  v_states conductor.task_status[] := coalesce(v_d.dedupe_states,
    case when v_d.dedupe_window is not null
         then conductor.unfinished_statuses() || 'succeeded'::conductor.task_status end);
  v_until timestamptz;
  v_run_at timestamptz := coalesce(_enqueue_held.s.run_at, _enqueue_held.at);
  v_debounce_until timestamptz;
  v_holder record;
  v_moved record;  -- a replaced holder's run_at and expires_in
begin
  if v_states is not null then
    v_until := case when v_d.dedupe_window is null then 'infinity'::timestamptz
                    else pg_catalog.date_bin(v_d.dedupe_window, _enqueue_held.at, '2000-01-01 00:00:00+00')
                         + v_d.dedupe_window end;
  end if;
  if v_d.debounce is not null then
    v_debounce_until := case when v_d.debounce_max is null then 'infinity'::timestamptz
                             else _enqueue_held.at + v_d.debounce_max end;
    v_run_at := least(v_run_at + v_d.debounce, v_debounce_until);
  end if;

  for v_round in 1..3 loop
    insert into conductor.tasks as t (
      id, queue, kind, payload, priority, run_at, max_attempts, max_recoveries,
      backoff_base, backoff_factor, backoff_max, dedupe_key, concurrency_key,
      parent_id, root_id, enqueued_at, timeout, traceparent, concurrency_limit, dedupe_states, dedupe_until,
      debounce_until, rate_key)
    values (_enqueue_held.new_id, s.queue, s.kind, s.payload, s.priority, v_run_at, s.max_attempts, s.max_recoveries,
            s.backoff_base, s.backoff_factor, s.backoff_max, s.dedupe_key, s.concurrency_key,
            s.parent_id, _enqueue_held.root, _enqueue_held.at, s.timeout, s.traceparent, s.concurrency_limit,
            v_states, v_until, v_debounce_until, s.rate_key)
    on conflict do nothing;
    if found then
      if s.expires_in is not null then
        perform conductor._set_deadlines(array[_enqueue_held.new_id], array[v_run_at], array[s.expires_in]);
      end if;
      perform conductor._notify_queue(s.queue);
      return _enqueue_held.new_id;
    end if;

    -- the holder: an unfinished task (tasks_dedupe_key), else a finished one of
    -- this period in one of its dedupe_states (tasks_dedupe_held)
    select h.id, h.status, h.queue into v_holder
      from conductor.tasks h
     where h.dedupe_key = s.dedupe_key and h.status = any (conductor.unfinished_statuses());
    if not found and v_states is not null then
      select h.id, h.status, h.queue into v_holder
        from conductor.tasks h
       where h.dedupe_key = s.dedupe_key and h.dedupe_until = v_until
         and h.dedupe_states is not null and h.status = any (h.dedupe_states);
    end if;
    continue when not found;  -- it finished, or was pruned, since the insert: try again

    if v_mode = 'ignore' or v_holder.status <> all (conductor.unfinished_statuses()) then
      return v_holder.id;  -- a finished holder is never replaced: it ran
    end if;

    if v_holder.status = 'queued' then
      -- waits for a claim that locked it, then finds it running (and goes round)
      update conductor.tasks t
         set payload = s.payload,
             run_at = case when v_mode = 'preserve_run_at' then t.run_at
                           when v_d.debounce is null then coalesce(s.run_at, _enqueue_held.at)
                           else least(coalesce(s.run_at, _enqueue_held.at) + v_d.debounce,
                                      coalesce(t.debounce_until, t.enqueued_at + v_d.debounce_max, 'infinity'))
                      end,
             debounce_until = case when v_d.debounce is null then t.debounce_until
                                   else coalesce(t.debounce_until, t.enqueued_at + v_d.debounce_max, 'infinity') end
       where t.id = v_holder.id and t.status = 'queued' and t.dedupe_key = s.dedupe_key
      returning t.run_at, t.expires_in into v_moved;
      if found then
        if v_moved.expires_in is not null then
          -- its due time moved: so does its deadline to start (expires_in after it)
          perform conductor._set_deadlines(array[v_holder.id], array[v_moved.run_at], array[v_moved.expires_in]);
        end if;
        perform conductor._notify_queue(v_holder.queue);
        return v_holder.id;
      end if;
    else
      -- it started with the old payload: it runs on without the key, which goes
      -- to a new task with this payload (the next round's insert)
      update conductor.tasks t
         set dedupe_key = null
       where t.id = v_holder.id and t.dedupe_key = s.dedupe_key
         and t.status in ('running'::conductor.task_status, 'waiting'::conductor.task_status);
    end if;
  end loop;

  raise exception 'the holder of dedupe_key % changed three times while this enqueue looked at it',
    conductor._echo(s.dedupe_key)
    using errcode = '40001', hint = 'Retry the enqueue.';
end
$$;

comment on function conductor._enqueue_held(conductor._task_spec, bigint, bigint, timestamptz) is
$$Writes s, a resolved and validated spec with dedupe options, as task new_id of run root at
time at, unless its dedupe_key is held: by an unfinished task (tasks_dedupe_key), or by a
task in one of its dedupe_states whose period (dedupe_until) is this one's
(tasks_dedupe_held). Stores dedupe_states (NULL given: the unfinished ones, plus succeeded
with a window; NULL with neither), dedupe_until (the end of the aligned window,
'infinity' without one) and, debounced, run_at = run_at (NULL: at) + debounce and
debounce_until = at + debounce_max ('infinity' without one), run_at never past it.
A duplicate returns the holder's id: unchanged for on_duplicate 'ignore' (NULL) and when
the holder finished; a queued holder takes the payload and run_at ('replace'), the payload
('preserve_run_at'), or the payload and run_at + debounce capped at its debounce_until
(debounce); a running or waiting holder gives its dedupe_key up (set NULL) and a new task
takes it. With an expires_in, the task it writes gets its deadline to start
(conductor._set_deadlines, from the run_at it stores), and a queued holder whose run_at
it moves gets its deadline moved with it (expires_in after the new run_at). Each change is a compare-and-set; a race lost three times raises 40001. Locks
the row it writes; waits for a concurrent enqueue of the key, and for the holder's row.
Called by enqueue and _enqueue.$$;

revoke execute on function conductor._enqueue_held(conductor._task_spec, bigint, bigint, timestamptz) from public;
-- The deadlines to start of tasks just inserted (schema/expiry): each task of
-- task_ids whose expires_in is given gets expires_in and expires_at = due_at +
-- expires_in, and a row of conductor.task_deadlines, which reap() reads. An
-- id no task has (a dedupe loser's, never inserted) sets nothing.
create or replace function conductor._set_deadlines(task_ids bigint[], due_ats timestamptz[], expires_ins interval[])
  returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  with given as (
    select u.id, u.expires_in, u.due_at + u.expires_in as expires_at
      from rows from (pg_catalog.unnest(_set_deadlines.task_ids), pg_catalog.unnest(_set_deadlines.due_ats),
                      pg_catalog.unnest(_set_deadlines.expires_ins)) as u(id, due_at, expires_in)
     where u.expires_in is not null
  ), set_on_task as (
    update conductor.tasks t
       set expires_in = g.expires_in, expires_at = g.expires_at
      from given g
     where t.id = g.id
    returning t.id, t.expires_at
  )
  insert into conductor.task_deadlines as d (task_id, expires_at)
  select s.id, s.expires_at from set_on_task s
  on conflict (task_id) do update set expires_at = excluded.expires_at;
end
$$;

comment on function conductor._set_deadlines(bigint[], timestamptz[], interval[]) is
$$Sets the deadline to start of each task of task_ids whose expires_ins entry is not NULL:
tasks.expires_in, tasks.expires_at = its due_ats entry + expires_in, and its
conductor.task_deadlines row (replaced if there was one). The arrays go in step. Called by
enqueue and _enqueue after their insert (never for a task without expiry).$$;

revoke execute on function conductor._set_deadlines(bigint[], timestamptz[], interval[]) from public;

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
  v_ord bigint;
  v_expiring boolean;
begin
  -- Each spec resolved: the caller's value, else its kind's (one probe of
  -- kinds_pkey per spec), else the engine's. Backoff stays as given: fail
  -- reads the kind's at each failure.
  v_specs := array(
    select row(s.kind, s.payload, coalesce(s.queue, k.queue, 'default'), coalesce(s.priority, k.priority, 0),
               s.run_at, coalesce(s.max_attempts, k.max_attempts, 1), s.dedupe_key,
               coalesce(s.concurrency_key, k.concurrency_key), s.parent_id,
               coalesce(s.max_recoveries, k.max_recoveries, 3), s.backoff_base, s.backoff_factor,
               s.backoff_max, coalesce(s.timeout, k.timeout), s.traceparent,
               -- the kind's limit applies to a keyed task only (a limit without a key is refused)
               coalesce(s.concurrency_limit,
                        case when coalesce(s.concurrency_key, k.concurrency_key) is not null
                             then k.concurrency_limit end),
               s.dedupe,
               coalesce(s.expires_in, k.expires_in),
               s.rate_key)::conductor._task_spec
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
  ), plain as (
    -- no ON CONFLICT without a key: a speculative insertion costs every row a
    -- WAL record (Heap/CONFIRM) and 40 % more of the insert's time
    insert into conductor.tasks as t (
      id, queue, kind, payload, priority, run_at, max_attempts, max_recoveries,
      backoff_base, backoff_factor, backoff_max, concurrency_key,
      parent_id, root_id, enqueued_at, timeout, traceparent, concurrency_limit, rate_key)
    select spec.new_id, spec.queue, spec.kind, spec.payload, spec.priority, coalesce(spec.run_at, v_now),
           spec.max_attempts, spec.max_recoveries, spec.backoff_base, spec.backoff_factor, spec.backoff_max,
           spec.concurrency_key, spec.parent_id, spec.root_id, v_now, spec.timeout, spec.traceparent,
           spec.concurrency_limit, spec.rate_key
      from spec
     where spec.root_id is not null  -- null: the parent does not exist
       and spec.dedupe_key is null
    returning t.queue
  ), keyed as (
    insert into conductor.tasks as t (
      id, queue, kind, payload, priority, run_at, max_attempts, max_recoveries,
      backoff_base, backoff_factor, backoff_max, dedupe_key, concurrency_key,
      parent_id, root_id, enqueued_at, timeout, traceparent, concurrency_limit, rate_key)
    select spec.new_id, spec.queue, spec.kind, spec.payload, spec.priority, coalesce(spec.run_at, v_now),
           spec.max_attempts, spec.max_recoveries, spec.backoff_base, spec.backoff_factor, spec.backoff_max,
           spec.dedupe_key, spec.concurrency_key, spec.parent_id, spec.root_id, v_now, spec.timeout, spec.traceparent,
           spec.concurrency_limit, spec.rate_key
      from spec
     where spec.root_id is not null
       and spec.dedupe_key is not null
       and spec.dedupe is null  -- with dedupe options: _enqueue_held, after this statement
    on conflict (dedupe_key) where dedupe_key is not null and status = any (conductor.unfinished_statuses())
    do nothing
    returning t.queue
  ), inserted as (
    select p.queue from plain p
    union all
    select k.queue from keyed k
  )
  select pg_catalog.array_agg(spec.new_id order by spec.ord), (select pg_catalog.count(*) from inserted),
         (select pg_catalog.array_agg(distinct i.queue order by i.queue) from inserted i),
         pg_catalog.bool_or(spec.expires_in is not null)
    into v_ids, v_inserted, v_queues, v_expiring
    from spec;
  -- deadlines to start, for the tasks given one (a dedupe loser's id was never
  -- inserted: nothing to set); the common batch has none and skips this
  if v_expiring then
    perform conductor._set_deadlines(v_ids,
      array(select coalesce(s.run_at, v_now) from pg_catalog.unnest(v_specs) with ordinality as s order by s.ordinality),
      array(select s.expires_in from pg_catalog.unnest(v_specs) with ordinality as s order by s.ordinality));
  end if;
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
    -- the specs with dedupe options, one at a time in input order, each under
    -- the id drawn for it
    for v_ord in
      select s.ordinality from pg_catalog.unnest(v_specs) with ordinality as s
       where not (s.dedupe is null)
       order by s.ordinality
    loop
      v_ids[v_ord] := conductor._enqueue_held(v_specs[v_ord], v_ids[v_ord],
        coalesce((select p.root_id from conductor.tasks p where p.id = v_specs[v_ord].parent_id), v_ids[v_ord]),
        v_now);
    end loop;
    select pg_catalog.array_agg(coalesce(own.id, holder.id) order by s.ordinality)
      into v_ids
      from pg_catalog.unnest(v_specs) with ordinality as s
      left join conductor.tasks own on own.id = v_ids[s.ordinality]
      left join conductor.tasks holder
        on own.id is null
       and holder.dedupe_key = s.dedupe_key
       and holder.status = any (conductor.unfinished_statuses());
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
$$Enqueues specs in one statement, each resolved (the caller's value, else the kind's, else the
engine's) and validated; returns the ids in input order, a dedupe loser's being its holder's.
Specs with dedupe options go through conductor._enqueue_held, in input order, after the rest.
Raises the first bad spec's QC101-QC106 or QC120-QC122 (detail: task #n of the batch), QC203 for a
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
  timeout         interval default null,
  traceparent     text default null,
  concurrency_limit integer default null,
  dedupe_window   interval default null,
  dedupe_states   text[] default null,
  on_duplicate    text default null,
  debounce        interval default null,
  debounce_max    interval default null,
  expires_in      interval default null,
  rate_key        text default null
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
  v_dedupe conductor._dedupe_spec;
begin
  -- the kind's defaults (one probe of kinds_pkey) and the payload limit, in one statement
  select k.queue, k.priority, k.concurrency_key, k.timeout, k.max_attempts, k.max_recoveries,
         k.concurrency_limit, k.expires_in, st.max_payload_bytes
    into v_kind
    from conductor.settings st
    left join conductor.kinds k on k.kind = enqueue.kind
   where st.one;
  if pg_catalog.num_nonnulls(enqueue.dedupe_window, enqueue.dedupe_states, enqueue.on_duplicate, enqueue.debounce,
                  enqueue.debounce_max) > 0 then
    v_dedupe := conductor._dedupe_options(enqueue.dedupe_window, enqueue.dedupe_states, enqueue.on_duplicate,
                                          enqueue.debounce, enqueue.debounce_max);
  end if;
  v_spec := row(
    enqueue.kind, enqueue.payload, coalesce(enqueue.queue, v_kind.queue, 'default'),
    coalesce(enqueue.priority, v_kind.priority, 0), enqueue.run_at,
    coalesce(enqueue.max_attempts, v_kind.max_attempts, 1), enqueue.dedupe_key,
    coalesce(enqueue.concurrency_key, v_kind.concurrency_key), enqueue.parent_id,
    coalesce(enqueue.max_recoveries, v_kind.max_recoveries, 3), enqueue.backoff_base,
    enqueue.backoff_factor, enqueue.backoff_max, coalesce(enqueue.timeout, v_kind.timeout),
    enqueue.traceparent,
    -- the kind's limit applies to a keyed task only (a limit without a key is refused)
    coalesce(enqueue.concurrency_limit,
             case when coalesce(enqueue.concurrency_key, v_kind.concurrency_key) is not null
                  then v_kind.concurrency_limit end),
    v_dedupe, coalesce(enqueue.expires_in, v_kind.expires_in), enqueue.rate_key)::conductor._task_spec;
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
      parent_id, root_id, enqueued_at, timeout, traceparent, concurrency_limit, rate_key)
    values (v_id, v_spec.queue, enqueue.kind, enqueue.payload, v_spec.priority,
            coalesce(enqueue.run_at, v_now), v_spec.max_attempts, v_spec.max_recoveries,
            enqueue.backoff_base, enqueue.backoff_factor, enqueue.backoff_max,
            v_spec.concurrency_key, enqueue.parent_id, v_root, v_now, v_spec.timeout, enqueue.traceparent,
            v_spec.concurrency_limit, enqueue.rate_key);
    if v_spec.expires_in is not null then
      perform conductor._set_deadlines(array[v_id], array[coalesce(enqueue.run_at, v_now)], array[v_spec.expires_in]);
    end if;
    perform conductor._notify_queue(v_spec.queue);
    return v_id;
  end if;
  if not (v_dedupe is null) then
    return conductor._enqueue_held(v_spec, v_id, v_root, v_now);
  end if;

  insert into conductor.tasks as t (
    id, queue, kind, payload, priority, run_at, max_attempts, max_recoveries,
    backoff_base, backoff_factor, backoff_max, dedupe_key, concurrency_key,
    parent_id, root_id, enqueued_at, timeout, traceparent, concurrency_limit, rate_key)
  values (v_id, v_spec.queue, enqueue.kind, enqueue.payload, v_spec.priority,
          coalesce(enqueue.run_at, v_now), v_spec.max_attempts, v_spec.max_recoveries,
          enqueue.backoff_base, enqueue.backoff_factor, enqueue.backoff_max, enqueue.dedupe_key,
          v_spec.concurrency_key, enqueue.parent_id, v_root, v_now, v_spec.timeout, enqueue.traceparent,
          v_spec.concurrency_limit, enqueue.rate_key)
  on conflict (dedupe_key) where dedupe_key is not null and status = any (conductor.unfinished_statuses())
  do nothing;
  if found then
    if v_spec.expires_in is not null then
      perform conductor._set_deadlines(array[v_id], array[coalesce(enqueue.run_at, v_now)], array[v_spec.expires_in]);
    end if;
    perform conductor._notify_queue(v_spec.queue);
    return v_id;
  end if;

  -- a dedupe holder, committed before this statement began or while it waited
  select holder.id into v_id
    from conductor.tasks holder
   where holder.dedupe_key = enqueue.dedupe_key
     and holder.status = any (conductor.unfinished_statuses());
  if not found then
    raise exception 'the holder of dedupe_key % finished while this enqueue waited for it',
      conductor._echo(enqueue.dedupe_key)
      using errcode = '40001', hint = 'Retry the enqueue.';
  end if;
  return v_id;
end
$$;

comment on function conductor.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, bigint, integer, interval, double precision, interval, interval, text, integer, interval, text[], text, interval, interval, interval, text) is
$$Writes one task and returns its id.
kind: the handler name (1-200 characters, no surrounding spaces, no control, format or
markup characters: conductor._spec_problem). payload: a JSON object, at most 1 MiB by default.
queue, priority (higher first), concurrency_key (at most concurrency_limit running tasks
per key), concurrency_limit (1-10000, needs a key: this task starts only while fewer than
this many of its key run; NULL: the kind's, else 1),
timeout (how long one attempt may run), max_attempts, max_recoveries: NULL takes the
kind's (configure_kind), else 'default', 0, none, no limit, 1 attempt (retries are
opt-in), max_recoveries 3 (the third lost worker ends the task). backoff_*: NULL takes the kind's at each failure, else 30 s
doubling to at most 1 h, less up to 20 % jitter. run_at: NULL is now.
dedupe_key: when an unfinished task holds it, returns that task's id and writes nothing.
parent_id: the spawning task; the new task joins its run (root_id).
traceparent: the W3C traceparent of the caller's trace context (NULL: none), stored
with the task and returned by claim, so the worker's span continues that trace.
With a dedupe_key (else QC120): dedupe_window, an aligned period (date_bin from
2000-01-01 UTC) in which a finished task in dedupe_states still holds the key;
dedupe_states, the statuses that hold it (queued, running, waiting and any finished
ones, else QC121; NULL: the unfinished ones, and succeeded with a window); on_duplicate
'ignore' (NULL: the holder's id), 'replace' (a queued holder takes payload and run_at)
or 'preserve_run_at' (the payload); debounce, a queued holder takes the payload and
runs after that much quiet, never past its first enqueue + debounce_max. A holder that
started gives its key up to a new task under replace and debounce. Details:
conductor._enqueue_held.
expires_in: how long after its due time (run_at) the task may wait for its first start;
NULL takes the kind's, else none (it waits for ever). Past run_at + expires_in no claim
starts it and reap() ends it 'expired', its error naming the deadline; a task started once
never expires (a retry after a failure or a lost worker waits as long as it takes);
retry() gives it a fresh deadline.
rate_key: the task's key for per-key rate limits (set_rate_limit(per_key => true) on its
queue or kind): it starts only on a token of its key's own bucket; NULL (the default, not
taken from the kind) is limited by no per-key limit. 1-1000 bytes.
The rules apply to the values as resolved: run_at a finite time from 0001-01-02 to
9999-12-30 UTC; max_attempts >= 1, max_recoveries >= 0, backoff_base and backoff_max
0-30 days (base not over max), backoff_factor 1-10; timeout and expires_in more than 0
and at most 30 days; dedupe_key and concurrency_key at most 1000 bytes; concurrency_limit
1-10000 with a concurrency_key (the caller's or the kind's); traceparent W3C's
version-traceid-parentid-flags in lowercase hex, the version not ff, no id all zeros.
Raises QC101 kind, QC102 payload not an object, QC103 payload too large, QC104 queue,
QC106 run_at, retry policy, timeout, key, concurrency_limit, traceparent, expires_in, rate_key or a
dedupe option out of range, QC105 an unknown status in dedupe_states, QC120-QC122 dedupe
options (see conductor._spec_problem), QC203 parent not found. Any number of callers at once.$$;

-- The keys of a task object that enqueue_many's fast path reads but its payload,
-- each as the type it is stored as: jsonb_populate_record converts them with the
-- types' input functions, as the casts of the fast path's INSERT do. The batch's
-- distinct tasks are read through it first, so a value that does not convert is
-- found before anything is written.
create type conductor._task_json as (
  kind              text,
  queue             text,
  priority          integer,
  run_at            timestamptz,
  max_attempts      integer,
  concurrency_key   text,
  max_recoveries    integer,
  backoff_base      interval,
  backoff_factor    double precision,
  backoff_max       interval,
  timeout           interval,
  traceparent       text,
  concurrency_limit integer,
  rate_key          text
);

comment on type conductor._task_json is
$$The keys of an enqueue_many task object that its fast path reads but the payload, each
converted to its type (jsonb_populate_record): how the fast path finds a value that does not
convert before it writes.$$;

-- true for a valid spec, else raises its first problem (conductor._raise_spec_problem,
-- with detail): a check that an INSERT ... SELECT can make on the row it is about to write
create or replace function conductor._require_spec(s conductor._task_spec, max_payload_bytes integer, detail text)
  returns boolean
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_problem text := conductor._spec_problem(_require_spec.s, _require_spec.max_payload_bytes);
begin
  if v_problem is not null then
    perform conductor._raise_spec_problem(v_problem, _require_spec.s, _require_spec.detail);
  end if;
  return true;
end
$$;

comment on function conductor._require_spec(conductor._task_spec, integer, text) is
$$true when s breaks no rule of conductor._spec_problem (payload limit max_payload_bytes);
else raises the first problem as conductor._raise_spec_problem does, with detail.$$;

revoke execute on function conductor._require_spec(conductor._task_spec, integer, text) from public;

create or replace function conductor.enqueue_many(tasks jsonb) returns setof bigint
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
  v_max integer := conductor._max_payload_bytes();
  v_firsts bigint[];
  v_kinds text[];
  v_kind_rows conductor.kinds[];
  v_not_objects boolean;
  v_general boolean;
  v_specs conductor._task_spec[];
  v_ids bigint[];
  v_queues text[];
  v_ord bigint;
  v_task jsonb;
  v_key text;
begin
  if enqueue_many.tasks is null or pg_catalog.jsonb_typeof(enqueue_many.tasks) <> 'array' then
    raise exception 'enqueue_many takes a JSON array of task objects, got %',
      coalesce(pg_catalog.jsonb_typeof(enqueue_many.tasks), 'SQL NULL')
      using errcode = 'QC106';
  end if;
  -- one pass: every element an object, and whether a task has a key of the
  -- general path (below; a key holding JSON null counts: that path reads it)
  select coalesce(pg_catalog.bool_or(pg_catalog.jsonb_typeof(e.t) <> 'object'), false),
         coalesce(pg_catalog.bool_or(e.t ?| array['parent_id', 'dedupe_key', 'expires_in', 'dedupe_window',
                                                  'dedupe_states', 'on_duplicate', 'debounce', 'debounce_max']), false)
    into v_not_objects, v_general
    from pg_catalog.jsonb_array_elements(enqueue_many.tasks) e(t);
  if v_not_objects then
    raise exception 'enqueue_many takes a JSON array of task objects; an element is not an object'
      using errcode = 'QC106';
  end if;

  -- The values are read in a block of their own (no writes in it, so it costs a
  -- subtransaction's start and end, not an XID): a value that does not convert
  -- (a word for an integer, a malformed time or interval) is named as QC106
  -- rather than PostgreSQL's own 22P02, 22007 or 22003.
  begin
    -- The batch's distinct tasks: alike objects (the same keys and values but
    -- for the payload, and payloads the rules see alike: any object under the
    -- limit) are read once, by the first of them. Each distinct task's values
    -- are converted here and its kind looked up: a kind with a deadline to
    -- start sends the batch to the general path too.
    if not v_general then
      select pg_catalog.array_agg(d.first_ord), pg_catalog.array_agg(j.kind), pg_catalog.array_agg(k),
             coalesce(pg_catalog.bool_or(k.expires_in is not null), false)
        into v_firsts, v_kinds, v_kind_rows, v_general
        from (select pg_catalog.min(a.n) as first_ord, a.t - 'payload' as keys
                from pg_catalog.jsonb_array_elements(enqueue_many.tasks) with ordinality as a(t, n)
               group by a.t - 'payload',
                        -- the payload as the rules see it (a rule that reads more of
                        -- a payload must change this)
                        case when pg_catalog.jsonb_typeof(a.t->'payload') = 'object'
                                  and pg_catalog.pg_column_size(a.t->'payload') <= v_max then null
                             else coalesce(a.t->'payload', '{}') end) d
        cross join lateral pg_catalog.jsonb_populate_record(null::conductor._task_json, d.keys) j
        left join conductor.kinds k on k.kind = j.kind;
    end if;

    if v_general then
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
                 (t->>'timeout')::interval,
                 t->>'traceparent',
                 (t->>'concurrency_limit')::integer,
                 case when t ?| array['dedupe_window', 'dedupe_states', 'on_duplicate', 'debounce', 'debounce_max'] then
                   conductor._dedupe_options(
                     (t->>'dedupe_window')::interval,
                     case when t ? 'dedupe_states' and t->'dedupe_states' <> 'null' then
                       array(select w.word
                               from pg_catalog.jsonb_array_elements_text(t->'dedupe_states') with ordinality as w(word, n)
                              order by w.n) end,
                     t->>'on_duplicate', (t->>'debounce')::interval, (t->>'debounce_max')::interval) end,
                 (t->>'expires_in')::interval,
                 t->>'rate_key'
               )::conductor._task_spec
          from pg_catalog.jsonb_array_elements(enqueue_many.tasks) with ordinality as a(t, n)
         order by a.n);
    end if;
  exception when data_exception then
    -- the slow path, only when it happens: find the first task and key at fault
    for v_ord, v_task in
      select a.n, a.t from pg_catalog.jsonb_array_elements(enqueue_many.tasks) with ordinality as a(t, n) order by a.n
    loop
      foreach v_key in array array['priority', 'run_at', 'max_attempts', 'parent_id', 'max_recoveries',
                                   'backoff_base', 'backoff_factor', 'backoff_max', 'timeout',
                                   'concurrency_limit', 'dedupe_window', 'dedupe_states', 'debounce', 'debounce_max',
                                   'expires_in'] loop
        begin
          if v_key in ('priority', 'max_attempts', 'max_recoveries', 'concurrency_limit') then
            perform (v_task->>v_key)::integer;
          elsif v_key = 'parent_id' then
            perform (v_task->>v_key)::bigint;
          elsif v_key = 'run_at' then
            perform (v_task->>v_key)::timestamptz;
          elsif v_key = 'backoff_factor' then
            perform (v_task->>v_key)::double precision;
          elsif v_key = 'dedupe_states' then
            perform pg_catalog.jsonb_array_elements_text(v_task->v_key) where v_task ? v_key and v_task->v_key <> 'null';
          else
            perform (v_task->>v_key)::interval;
          end if;
        exception when data_exception then
          raise exception using errcode = 'QC106',
            message = pg_catalog.format('invalid %s %s in task #%s of the batch: it must be %s',
              v_key, conductor._echo(v_task->>v_key), v_ord,
              case when v_key in ('priority', 'max_attempts', 'max_recoveries', 'parent_id', 'concurrency_limit')
                   then 'an integer'
                   when v_key = 'run_at' then 'a timestamp with time zone'
                   when v_key = 'backoff_factor' then 'a number'
                   when v_key = 'dedupe_states' then 'a JSON array of statuses'
                   else 'an interval' end),
            detail = sqlerrm;
        end;
      end loop;
    end loop;
    raise;  -- no key at fault: the original error
  end;

  -- The general path: a parent, a dedupe key or options, a deadline to start
  -- (the task's or its kind's) go through conductor._enqueue with the rest of
  -- the batch, as spawn and the schedules do.
  if v_general then
    return query select pg_catalog.unnest(conductor._enqueue(v_specs));
    return;
  end if;

  -- The fast path, every task a root with none of those: one INSERT reading the
  -- JSON, each task resolved as conductor._enqueue resolves it (the caller's
  -- value, else its kind's looked up above, else the engine's). The first task
  -- of each distinct task is judged by conductor._spec_problem as it is about
  -- to be written, the rest being alike; a bad one calls _require_spec, which
  -- raises its problem (one call for a valid task: a call and its SET
  -- search_path cost about 20,000 instructions). Rows come in input order, so
  -- the first bad task is the one named, every row written before it is of a
  -- distinct task judged valid, and nothing of the batch stays. Ids are drawn
  -- in input order too: the answer is the inserted ids in order.
  with inserted as (
    insert into conductor.tasks as t (
      id, queue, kind, payload, priority, run_at, max_attempts, max_recoveries,
      backoff_base, backoff_factor, backoff_max, concurrency_key,
      root_id, enqueued_at, timeout, traceparent, concurrency_limit, rate_key)
    select r.id, r.queue, r.kind, r.payload, r.priority, coalesce(r.run_at, v_now), r.max_attempts,
           r.max_recoveries, r.backoff_base, r.backoff_factor, r.backoff_max, r.concurrency_key,
           r.id, v_now, r.timeout, r.traceparent, r.concurrency_limit, r.rate_key
      from (select a.n, pg_catalog.nextval('conductor.tasks_id_seq') as id,
                   a.t->>'kind' as kind,
                   coalesce(a.t->'payload', '{}') as payload,
                   coalesce(a.t->>'queue', (a.k).queue, 'default') as queue,
                   coalesce((a.t->>'priority')::integer, (a.k).priority, 0) as priority,
                   (a.t->>'run_at')::timestamptz as run_at,
                   coalesce((a.t->>'max_attempts')::integer, (a.k).max_attempts, 1) as max_attempts,
                   coalesce(a.t->>'concurrency_key', (a.k).concurrency_key) as concurrency_key,
                   coalesce((a.t->>'max_recoveries')::integer, (a.k).max_recoveries, 3) as max_recoveries,
                   (a.t->>'backoff_base')::interval as backoff_base,
                   (a.t->>'backoff_factor')::double precision as backoff_factor,
                   (a.t->>'backoff_max')::interval as backoff_max,
                   coalesce((a.t->>'timeout')::interval, (a.k).timeout) as timeout,
                   a.t->>'traceparent' as traceparent,
                   -- the kind's limit applies to a keyed task only (a limit without a key is refused)
                   coalesce((a.t->>'concurrency_limit')::integer,
                            case when coalesce(a.t->>'concurrency_key', (a.k).concurrency_key) is not null
                                 then (a.k).concurrency_limit end) as concurrency_limit,
                   a.t->>'rate_key' as rate_key
              from (select e.n, e.t, v_kind_rows[pg_catalog.array_position(v_kinds, e.t->>'kind')] as k
                      from pg_catalog.jsonb_array_elements(enqueue_many.tasks) with ordinality as e(t, n)
                    offset 0) a
            offset 0) r
      cross join lateral (select row(r.kind, r.payload, r.queue, r.priority, r.run_at, r.max_attempts, null,
                                     r.concurrency_key, null, r.max_recoveries, r.backoff_base, r.backoff_factor,
                                     r.backoff_max, r.timeout, r.traceparent, r.concurrency_limit, null, null,
                                     r.rate_key)::conductor._task_spec as spec) s
     where r.n <> all (v_firsts)
        or conductor._spec_problem(s.spec, v_max) is null
        or conductor._require_spec(s.spec, v_max, pg_catalog.format('task #%s of the batch', r.n))
    returning t.id, t.queue
  )
  select pg_catalog.array_agg(i.id order by i.id), pg_catalog.array_agg(distinct i.queue)
    into v_ids, v_queues
    from inserted i;
  -- due now or later: a sleeper recomputes its wake-up either way (functions/notify)
  perform conductor._notify_queue(q.queue) from pg_catalog.unnest(v_queues) as q(queue);
  return query select pg_catalog.unnest(v_ids);
end
$$;

comment on function conductor.enqueue_many(jsonb) is
$$Writes a batch of tasks in one statement; returns their ids in input order.
tasks: a JSON array of objects with the keys of enqueue (kind, payload, queue, priority,
run_at, max_attempts, dedupe_key, concurrency_key, parent_id, max_recoveries,
backoff_base, backoff_factor, backoff_max, timeout, traceparent, concurrency_limit, dedupe_window,
dedupe_states (a JSON array of statuses), on_duplicate, debounce, debounce_max, expires_in, rate_key); a missing key is resolved per task
as enqueue resolves a NULL argument: the task's kind's value (configure_kind), else the
engine's default.
All or nothing: one bad task raises (as enqueue does, the detail naming its place in the
batch) and writes none. Raises QC106 when tasks is not an array of objects, or a key holds
a value that does not convert to its type (naming the key, the task and the value).$$;

revoke execute on function conductor.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, bigint, integer, interval, double precision, interval, interval, text, integer, interval, text[], text, interval, interval, interval, text) from public;
revoke execute on function conductor.enqueue_many(jsonb) from public;
grant execute on function conductor.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, bigint, integer, interval, double precision, interval, interval, text, integer, interval, text[], text, interval, interval, interval, text)
  to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.enqueue_many(jsonb) to conductor_client, conductor_worker, conductor_admin;

commit;
