-- The raw baseline: a bare SKIP LOCKED queue in one table, the fairest
-- hand-written equivalent of conductor.tasks for the hot path. Same kind of
-- columns (queue, kind, jsonb payload, priority, due time, status, lease,
-- result, timestamps), one partial index over the ready rows in the claim
-- order, no attempts table, no triggers, no validation, no PL/pgSQL.
drop schema if exists bench_raw cascade;
create schema bench_raw;

create table bench_raw.jobs (
  id           bigserial primary key,
  queue        text not null default 'default',
  kind         text not null,
  payload      jsonb not null default '{}',
  priority     integer not null default 0,
  status       text not null default 'queued',
  run_at       timestamptz not null default now(),
  attempts     integer not null default 0,
  locked_by    text,
  locked_until timestamptz,
  result       jsonb,
  enqueued_at  timestamptz not null default now(),
  started_at   timestamptz,
  finished_at  timestamptz
) with (fillfactor = 80);

create index jobs_ready on bench_raw.jobs (queue, priority desc, run_at, id)
  where status = 'queued';
