-- Deploy conductor:schema/tasks to pg
--
-- conductor.tasks: every unit of queued work, finished or not.
--
-- The hot path (claim, heartbeat, complete) touches only unfinished rows, so
-- every index here is partial over the rows a query needs, except the primary
-- key. A claim changes status, so it is never a HOT update; a heartbeat
-- changes only lease_expires_at, which no index covers, so it can be HOT, and
-- the fillfactor leaves room for that.
--
-- Indexes and who uses them:
--   tasks_pkey            every lookup by id
--   tasks_ready_by_queue  claim from one queue      (status = 'queued')
--   tasks_ready           claim from several queues (status = 'queued')
--   tasks_running         reap; a worker's running tasks (status = 'running')
--   tasks_waiting         reap: waits past their deadline (status = 'waiting')
--   tasks_waiting_event   emit_event: the waiters of an event
--   tasks_ready_keyed     claim: ready tasks that have a concurrency_key
--   tasks_running_keyed   claim: is a task of this concurrency_key running?
--   tasks_dedupe_key      at most one unfinished task per dedupe_key
--   tasks_unsuccessful    listing failed, dead and timed-out tasks, newest first
--   tasks_children        cancel cascade, a parent reading its children
--   tasks_run             every task of a run (root_id), non-roots only

begin;

create sequence conductor.tasks_id_seq as bigint;

create table conductor.tasks (
  id               bigint primary key default nextval('conductor.tasks_id_seq'),
  queue            text not null default 'default',
  kind             text not null,
  payload          jsonb not null default '{}',
  priority         integer not null default 0,      -- higher runs first
  run_at           timestamptz not null,            -- due time
  status           conductor.task_status not null default 'queued',

  -- failures (handler raised): opt-in retries with backoff
  attempt          integer not null default 0,      -- attempts begun, less the ones lost or released
  max_attempts     integer not null default 1,
  backoff_base     interval,                        -- null: 30 seconds
  backoff_factor   double precision,                -- null: 2
  backoff_max      interval,                        -- null: 1 hour

  -- recoveries (worker lost): automatic, bounded
  recoveries       integer not null default 0,
  max_recoveries   integer not null default 3,

  dedupe_key       text,                            -- unique among unfinished tasks
  concurrency_key  text,                            -- at most one running task per key

  parent_id        bigint,                          -- the task that spawned this one
  root_id          bigint not null,                 -- the run: the root's own id for a root

  -- the lease; attempt_id is the fencing token of the current claim while
  -- running, and names the last claim afterwards
  attempt_id       bigint,
  claimed_by       text,
  lease_expires_at timestamptz,

  -- a suspended task: what it waits for, until when, and the step its wake-up
  -- is checkpointed under
  wait_for         text,                            -- 'children_all', 'children_any', 'event', 'sleep'
  wait_event       text,
  wait_until       timestamptz,
  wait_step        text,

  result           jsonb,
  error            text,                            -- the last error; every one is kept in attempts

  enqueued_at      timestamptz not null,
  started_at       timestamptz,                     -- first claim
  finished_at      timestamptz,

  constraint tasks_kind_not_empty check (kind <> ''),
  constraint tasks_payload_is_object check (jsonb_typeof(payload) = 'object'),
  constraint tasks_attempts_valid check (max_attempts >= 1 and attempt >= 0),
  constraint tasks_recoveries_valid check (max_recoveries >= 0 and recoveries >= 0),
  constraint tasks_running_has_lease check (
    (status = 'running') = (lease_expires_at is not null)
    and (status <> 'running' or attempt_id is not null)),
  constraint tasks_finished_when_terminal check (
    (status in ('queued', 'running', 'waiting')) = (finished_at is null)),
  constraint tasks_wait_for_valid check (
    wait_for in ('children_all', 'children_any', 'event', 'sleep'))
) with (
  fillfactor = 80,
  autovacuum_vacuum_scale_factor = 0.02,
  autovacuum_vacuum_insert_scale_factor = 0.05,
  autovacuum_analyze_scale_factor = 0.02
);

alter sequence conductor.tasks_id_seq owned by conductor.tasks.id;

create index tasks_ready_by_queue on conductor.tasks (queue, priority desc, run_at, id)
  where status = 'queued';
create index tasks_ready on conductor.tasks (priority desc, run_at, id)
  where status = 'queued';
-- keyed on a column a heartbeat never changes, so heartbeats stay HOT; the
-- running set is bounded by the workers' slots, so reap scans it whole
create index tasks_running on conductor.tasks (claimed_by)
  where status = 'running';
-- waits: reap ends the ones past their deadline; emit_event finds an event's waiters
create index tasks_waiting on conductor.tasks (wait_until)
  where status = 'waiting';
create index tasks_waiting_event on conductor.tasks (wait_event)
  where status = 'waiting' and wait_for = 'event';
-- concurrency keys: the ready keyed tasks, and which keys have a running task
create index tasks_ready_keyed on conductor.tasks (priority desc, run_at, id)
  where status = 'queued' and concurrency_key is not null;
create index tasks_running_keyed on conductor.tasks (concurrency_key)
  where status = 'running' and concurrency_key is not null;
create unique index tasks_dedupe_key on conductor.tasks (dedupe_key)
  where dedupe_key is not null and status in ('queued', 'running', 'waiting');
-- the rare rows a person looks for (dashboard, pyconductor tasks --status failed)
create index tasks_unsuccessful on conductor.tasks (id)
  where status in ('failed', 'dead', 'timed_out');
create index tasks_children on conductor.tasks (parent_id)
  where parent_id is not null;
create index tasks_run on conductor.tasks (root_id)
  where parent_id is not null;

comment on table conductor.tasks is
  'Every unit of queued work. Write through the conductor functions; read freely.';
comment on column conductor.tasks.attempt is
  'Attempts begun that count against max_attempts: a claim adds one, a lost worker or a release gives it back.';
comment on column conductor.tasks.attempt_id is
  'The fencing token of the current claim (conductor.attempts.id) while running; the last claim otherwise.';

grant select on conductor.tasks to conductor_client, conductor_worker, conductor_admin;

commit;
