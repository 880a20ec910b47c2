-- Deploy conductor:schema/runs to pg
--
-- The state of durable runs beside conductor.tasks:
--   conductor.steps   a checkpoint per (task, step name): a resumed run reads
--                     these (claim returns them) instead of running the step again
--   conductor.events  named events; the first payload for a name wins, and an
--                     event emitted before anyone waits still counts

begin;

create table conductor.steps (
  task_id    bigint not null,
  name       text not null,
  result     jsonb,
  attempt_id bigint,                  -- the attempt that saved it (null: a wake-up wrote it)
  saved_at   timestamptz not null,
  primary key (task_id, name),
  constraint steps_name_valid check (name <> '' and octet_length(name) <= 1000)
);

comment on table conductor.steps is
  'Checkpoints of durable runs: (task_id, step name) -> result. Written by save_step, spawn, suspend and wake-ups.';

create table conductor.events (
  name       text primary key,
  payload    jsonb,
  emitted_at timestamptz not null,
  constraint events_name_valid check (name <> '' and octet_length(name) <= 1000)
);

comment on table conductor.events is
  'Named events (emit_event): the first payload for a name wins; waiters before or after are woken with it.';

grant select on conductor.steps, conductor.events to conductor_client, conductor_worker, conductor_admin;

commit;
