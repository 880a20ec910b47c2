-- Deploy conductor:schema/operations to pg
--
-- What an operator of a fleet controls and reads (issue 17):
--
--   conductor.paused_queues      a paused queue is not claimed; its tasks stay
--                                queued (pause_queue, resume_queue)
--   conductor.rate_limits        at most per_second task starts per second
--                                across the fleet, per queue or per kind: a
--                                token bucket (burst tokens at most) that
--                                claim draws from (set_rate_limit)
--   conductor.settings.retain_*  how long finished runs and events are kept
--   conductor.kinds.retain_*     the same per kind of a run's root (NULL: the
--                                settings'); applied by apply_retention()
--   conductor.settings.max_log_bytes
--                                the handler log lines kept per attempt
--   conductor.attempt_logs       the log records a handler emitted during an
--                                attempt, bounded (save_log)
--   conductor.subscriptions      sessions listening on the event bus, per
--                                topic: publish() notifies only when one does
--   conductor.schedule_fires.manual
--                                a fire by fire_schedule ("Run now"), not a
--                                due time of the cron line: a due time fires
--                                once among the other fires, a manual fire
--                                never takes its place
--
-- Every column is new and NULL or has a constant default: no table rewrite.

begin;
set local role conductor_owner;

create table conductor.paused_queues (
  queue     text primary key,
  paused_at timestamptz not null,
  paused_by text
);
comment on table conductor.paused_queues is
  'Queues an operator paused (pause_queue): claim takes nothing from them; their tasks stay queued.';

create table conductor.rate_limits (
  scope       text not null check (scope in ('queue', 'kind')),
  name        text not null,
  per_second  double precision not null check (per_second > 0 and per_second <= 1000000),
  burst       double precision not null check (burst >= 1),
  tokens      double precision not null,
  refilled_at timestamptz not null,
  primary key (scope, name)
);
comment on table conductor.rate_limits is
  'At most per_second task starts per second across the fleet for a queue or a kind '
  '(set_rate_limit): a token bucket of at most burst tokens, refilled continuously, that claim draws from.';

alter table conductor.settings
  add column retain_succeeded interval default interval '7 days'
    check (retain_succeeded >= interval '0'),
  add column retain_failed    interval default interval '30 days'
    check (retain_failed >= interval '0'),
  add column retain_events    interval default interval '30 days'
    check (retain_events >= interval '0'),
  add column max_log_bytes    integer not null default 65536 check (max_log_bytes between 0 and 16777216);
comment on column conductor.settings.retain_succeeded is
  'apply_retention() deletes a run whose tasks all finished and that succeeded this long ago (NULL: never).';
comment on column conductor.settings.retain_failed is
  'The same for a run that did not succeed (failed, dead, timed out, cancelled) (NULL: never).';
comment on column conductor.settings.retain_events is
  'apply_retention() deletes events emitted this long ago that no task waits for (NULL: never).';
comment on column conductor.settings.max_log_bytes is
  'The handler log lines kept per attempt, in bytes of their jsonb form (default 64 KiB; 0 keeps none).';

alter table conductor.kinds
  add column retain_succeeded interval check (retain_succeeded >= interval '0'),
  add column retain_failed    interval check (retain_failed >= interval '0');
comment on column conductor.kinds.retain_succeeded is
  'settings.retain_succeeded for runs whose root is of this kind (NULL: the settings'').';
comment on column conductor.kinds.retain_failed is
  'settings.retain_failed for runs whose root is of this kind (NULL: the settings'').';

create table conductor.attempt_logs (
  attempt_id bigint primary key references conductor.attempts (id) on delete cascade,
  lines      jsonb not null,
  dropped    integer not null default 0
);
comment on table conductor.attempt_logs is
  'The log records a handler emitted during one attempt (save_log): a JSON array of '
  '{"at", "level", "logger", "message"}, at most settings.max_log_bytes; dropped counts those left out.';

create table conductor.subscriptions (
  topic text not null,
  pid   integer not null,
  since timestamptz not null,
  primary key (topic, pid)
);
comment on table conductor.subscriptions is
  'Sessions (backend pid) listening on the event bus (channel conductor_bus) for a topic '
  '(''*'': every topic); publish() notifies only when one does. subscribe()/unsubscribe() write it, '
  'reap() forgets sessions that ended.';

alter table conductor.schedule_fires add column manual boolean not null default false;
comment on column conductor.schedule_fires.manual is
  'A fire by fire_schedule (Run now) at due_at = when it was asked, not a due time of the cron line.';
-- a due time fires once; manual fires are extra rows that never take a due time's place
alter table conductor.schedule_fires drop constraint schedule_fires_pkey;
create unique index schedule_fires_due on conductor.schedule_fires (schedule_name, due_at) where not manual;
create index schedule_fires_by_schedule on conductor.schedule_fires (schedule_name, due_at);

revoke all on conductor.paused_queues, conductor.rate_limits, conductor.attempt_logs, conductor.subscriptions
  from public;
grant select on conductor.paused_queues, conductor.rate_limits, conductor.attempt_logs, conductor.subscriptions
  to conductor_client, conductor_worker, conductor_admin;

commit;
