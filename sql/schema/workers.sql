-- Deploy conductor:schema/workers to pg
--
-- conductor.workers: who is alive. A worker registers at start, its
-- heartbeats keep last_seen_at fresh, it deregisters at a clean exit; reap()
-- deletes rows not seen for a long while. Forensics and the dashboard read it;
-- no correctness depends on it (leases do that).

begin;

create table conductor.workers (
  id           text primary key,
  host         text,
  pid          integer,
  queues       text[],                   -- null: every queue
  concurrency  integer,
  roles        text[] not null default '{}',
  version      text,
  metadata     jsonb not null default '{}',
  started_at   timestamptz not null,
  last_seen_at timestamptz not null,
  constraint workers_id_not_empty check (id <> '')
) with (fillfactor = 70);

comment on table conductor.workers is
  'Live workers (and recently dead ones until reap() cleans them up).';

grant select on conductor.workers to conductor_client, conductor_worker, conductor_admin;

commit;
