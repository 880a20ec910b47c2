-- Deploy conductor:schema/queue_samples to pg
--
-- Queues over time (issue 29): a small per-minute history the dashboard's
-- charts read, written once a minute by one sampler of the fleet
-- (conductor.sample_queues, functions/samples), never by the hot path.
--
--   conductor.sample_minutes   one row per minute sampled: its unique key is what
--                              makes each minute written once, however many
--                              samplers run; sampled_at says when the depth and
--                              age were read (NULL: a minute backfilled later,
--                              whose depth and age nobody read)
--   conductor.queue_samples    per (queue, minute): tasks that finished in the
--                              minute, of them failed, and the ready depth and
--                              backlog age read at sampled_at
--   conductor.settings.retain_samples
--                              how long samples are kept (2 days); sample_queues
--                              deletes older ones
--
-- No index, trigger or column on conductor.tasks or conductor.attempts: the
-- finished counts are read from the index tasks_finished (functions/stats), the
-- depth and age from tasks_ready_by_queue. The roles may read both tables, as
-- every table; only sample_queues writes them.

begin;
set local role conductor_owner;

create table conductor.sample_minutes (
  minute     timestamptz primary key
             check (pg_catalog.mod(extract(epoch from minute), 60) = 0),
  sampled_at timestamptz
);
comment on table conductor.sample_minutes is
  'Each minute sample_queues() wrote, once (the key): minute is its start; sampled_at when the depth and age '
  'were read (NULL: backfilled from the finished tasks after the sampler missed it).';

create table conductor.queue_samples (
  queue      text not null,
  minute     timestamptz not null,
  finished   integer not null check (finished >= 0),
  failed     integer not null check (failed >= 0 and failed <= finished),
  depth      integer check (depth >= 0),
  oldest_age interval check (oldest_age >= interval '0'),
  primary key (queue, minute)
);
create index queue_samples_minute on conductor.queue_samples (minute);
comment on table conductor.queue_samples is
  'Per queue and sampled minute (sample_minutes): finished (tasks whose finished_at falls in '
  '[minute, minute + 1 minute), any final status), failed (of them failed or dead, as stats() counts), '
  'depth (ready tasks: queued and due) and oldest_age (the backlog age) read at the minute''s sampled_at '
  '(NULL when backfilled). A queue with no row in a sampled minute finished nothing and had nothing ready.';

alter table conductor.settings
  add column retain_samples interval not null default interval '2 days'
    check (retain_samples >= interval '1 hour' and retain_samples <= interval '400 days');
comment on column conductor.settings.retain_samples is
  'sample_queues() deletes the queue samples of minutes older than this (default 2 days, 1 hour to 400 days).';

grant select on conductor.sample_minutes, conductor.queue_samples to conductor_client, conductor_worker, conductor_admin;

commit;
