-- Deploy conductor:schema/schedules to pg
--
-- conductor.schedules: a cron line per schedule, with the task it enqueues.
-- conductor.schedule_fires: one row per (schedule, due time) it fired. Its
-- primary key is what makes each due time fire exactly once, however many
-- schedulers call tick() at once; the leader lock only saves duplicate work.

begin;

create table conductor.schedules (
  name            text primary key,
  cron            text not null,
  timezone        text not null default 'UTC',
  kind            text not null,
  payload         jsonb not null default '{}',
  queue           text not null default 'default',
  priority        integer not null default 0,
  max_attempts    integer,
  dedupe_key      text,
  concurrency_key text,
  catch_up        text not null default 'once',
  catch_up_limit  integer not null default 100,
  enabled         boolean not null default true,
  next_due_at     timestamptz not null,           -- the earliest due time not yet fired
  last_due_at     timestamptz,                    -- the due time of the last fire
  last_task_id    bigint,
  created_at      timestamptz not null,
  updated_at      timestamptz not null,
  constraint schedules_name_valid check (name ~ '^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,199}$'),
  constraint schedules_catch_up_valid check (catch_up in ('once', 'all')),
  constraint schedules_catch_up_limit_valid check (catch_up_limit between 1 and 10000),
  constraint schedules_payload_is_object check (jsonb_typeof(payload) = 'object')
);

create index schedules_due on conductor.schedules (next_due_at) where enabled;

create table conductor.schedule_fires (
  schedule_name text not null references conductor.schedules (name) on delete cascade,
  due_at        timestamptz not null,
  task_id       bigint,
  fired_at      timestamptz not null,
  primary key (schedule_name, due_at)
);

comment on table conductor.schedules is
  'Cron schedules; conductor.tick() enqueues their tasks when due.';
comment on table conductor.schedule_fires is
  'One row per (schedule, due time) fired: the unique key that makes each due time fire once.';

grant select on conductor.schedules, conductor.schedule_fires
  to conductor_client, conductor_worker, conductor_admin;

commit;
