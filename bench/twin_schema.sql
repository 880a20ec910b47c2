-- The storage twin: conductor.tasks and conductor.attempts as tables alone,
-- with the same columns (status as text), the same sixteen indexes of
-- conductor.tasks (sql/schema.dump.sql) and attempts' two, the same fillfactor,
-- and nothing else: no function, no trigger, no validation. Beside the raw
-- baseline (bench/raw_schema.sql: one table, one index) it splits what the
-- engine's statements cost a task into what its storage costs (this twin
-- against raw) and what its PL/pgSQL adds (the engine against this twin);
-- bench/instructions.sh counts the three. Issue 26 asks enqueue_many for 0.8 of
-- "a bare multi-row insert into an equivalent table": this is that table.
drop schema if exists bench_twin cascade;
create schema bench_twin;

create table bench_twin.tasks (
  id bigserial primary key,
  queue text not null default 'default',
  kind text not null,
  payload jsonb not null default '{}',
  priority integer not null default 0,
  run_at timestamptz not null default now(),
  status text not null default 'queued',
  attempt integer not null default 0,
  max_attempts integer not null default 1,
  backoff_base interval,
  backoff_factor double precision,
  backoff_max interval,
  recoveries integer not null default 0,
  max_recoveries integer not null default 3,
  dedupe_key text,
  concurrency_key text,
  parent_id bigint,
  root_id bigint not null default 0,
  attempt_id bigint,
  claimed_by text,
  lease_expires_at timestamptz,
  wait_for text,
  wait_event text,
  wait_until timestamptz,
  wait_step text,
  result jsonb,
  error text,
  enqueued_at timestamptz not null default now(),
  started_at timestamptz,
  finished_at timestamptz,
  timeout interval,
  traceparent text,
  concurrency_limit integer,
  dedupe_states text[],
  dedupe_until timestamptz,
  debounce_until timestamptz,
  expires_in interval,
  expires_at timestamptz,
  rate_key text,
  code_version text,
  graph_id bigint
) with (fillfactor = 50);

create index on bench_twin.tasks (queue, priority desc, run_at, id) where status = 'queued';
create index on bench_twin.tasks (priority desc, run_at, id) where status = 'queued';
create index on bench_twin.tasks (priority desc, run_at, id) where status = 'queued' and concurrency_key is not null;
create index on bench_twin.tasks (hashtextextended(concurrency_key, 0), concurrency_key, priority desc, run_at, id)
  where status = 'queued' and concurrency_key is not null;
create index on bench_twin.tasks (claimed_by) where status = 'running';
create index on bench_twin.tasks (concurrency_key) where status = 'running' and concurrency_key is not null;
create index on bench_twin.tasks (wait_until) where status = 'waiting';
create index on bench_twin.tasks (wait_event) where status = 'waiting' and wait_for = 'event';
create unique index on bench_twin.tasks (dedupe_key)
  where dedupe_key is not null and status in ('queued', 'running', 'waiting');
create unique index on bench_twin.tasks (dedupe_key, dedupe_until)
  where dedupe_states is not null and status = any (dedupe_states);
create index on bench_twin.tasks (id) where status in ('failed', 'dead', 'timed_out', 'expired');
create index on bench_twin.tasks (parent_id) where parent_id is not null;
create index on bench_twin.tasks (root_id) where parent_id is not null;
create index on bench_twin.tasks (graph_id, status) where graph_id is not null;
create index on bench_twin.tasks (finished_at) include (queue, status) where finished_at is not null;

create sequence bench_twin.attempt_ids;
create table bench_twin.attempts (
  id bigint primary key,
  task_id bigint not null,
  attempt integer not null,
  worker_id text not null,
  host text,
  pid integer,
  claimed_at timestamptz not null,
  finished_at timestamptz,
  outcome text,
  error text,
  traceback text,
  timed_out boolean not null default false
) with (fillfactor = 50);
create index on bench_twin.attempts (task_id);
