-- Deploy conductor:schema/attempts to pg
--
-- conductor.attempts: one row per claim, kept for forensics. Its id is the
-- fencing token a worker carries for everything it does with that claim.
--
-- outcome is null while the attempt holds its task, then one of:
--   succeeded  complete() by the holder
--   failed     fail() by the holder (the task may still be retried)
--   released   release() by the holder: handed back, counts nothing
--   lost       the lease expired and reap() took the task back
--   cancelled  cancel() ended the task while this attempt held it
--   suspended  suspend() parked the task (waiting) and freed the worker

begin;

create sequence conductor.attempts_id_seq as bigint;

create table conductor.attempts (
  id           bigint primary key default nextval('conductor.attempts_id_seq'),
  task_id      bigint not null,
  attempt      integer not null,          -- tasks.attempt at the claim
  worker_id    text not null,
  host         text,
  pid          integer,
  claimed_at   timestamptz not null,
  finished_at  timestamptz,
  outcome      text,
  error        text,
  traceback    text,
  constraint attempts_outcome_valid check (
    outcome in ('succeeded', 'failed', 'released', 'lost', 'cancelled', 'suspended')),
  constraint attempts_finished_with_outcome check (
    (outcome is null) = (finished_at is null))
) with (
  fillfactor = 85,
  autovacuum_vacuum_scale_factor = 0.05,
  autovacuum_vacuum_insert_scale_factor = 0.05
);

alter sequence conductor.attempts_id_seq owned by conductor.attempts.id;

create index attempts_task on conductor.attempts (task_id);

comment on table conductor.attempts is
  'One row per claim: who ran a task, when, and how it ended, with the full error.';

grant select on conductor.attempts to conductor_client, conductor_worker, conductor_admin;

commit;
