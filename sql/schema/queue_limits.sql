-- Deploy conductor:schema/queue_limits to pg
--
-- A cap on a queue's running tasks across the fleet (issue 30): "at most 20
-- running in this queue, whatever the number of workers".
--
--   conductor.queue_limits   one row per capped queue: max_running, when and by
--                            whom it was set (owner: conductor._caller(), the
--                            ownership rule of rate limits, QC208). Written by
--                            set_queue_limit (functions/controls); read by
--                            claim (functions/claim), which locks a capped
--                            queue's row to start its tasks, and by
--                            why_waiting (functions/waiting)
--
-- No column or index on conductor.tasks: claim counts a capped queue's running
-- tasks through tasks_running (the running set, bounded by the fleet's slots),
-- so a fleet without caps pays nothing, not even an index entry per claim.
-- Listed before the functions that read it (functions/controls, functions/claim,
-- functions/waiting; claim's verify claims), as schema/traceparent is.

begin;
set local role conductor_owner;

create table conductor.queue_limits (
  queue       text primary key,
  max_running integer not null check (max_running between 1 and 1000000),
  set_at      timestamptz not null,
  owner       text
);
comment on table conductor.queue_limits is
  'At most max_running tasks of the queue running at once across the fleet (set_queue_limit): '
  'claim starts no more than max_running minus those running.';
comment on column conductor.queue_limits.owner is
  'The login (conductor._caller()) that last set the cap with set_queue_limit; only it or an admin may '
  'change or remove it (QC208).';

revoke all on conductor.queue_limits from public;
grant select on conductor.queue_limits to conductor_client, conductor_worker, conductor_admin;

commit;
