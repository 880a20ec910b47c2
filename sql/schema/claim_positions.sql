-- Deploy conductor:schema/claim_positions to pg
--
-- conductor.claim_positions: where each worker's claims go on from while full
-- claim scans are slow (dead index entries at the head of the ready index under
-- a pinned xmin horizon; see the map in functions/claim). It replaces the
-- session setting conductor.claim_position: behind a transaction-mode pooler
-- (pgbouncer) a session is shared by unrelated clients in turn, and any caller
-- could SET the setting, while this table is written only by claim (the roles
-- may read it, as every table: DESIGN) and its rows are keyed by the claiming
-- worker's id.
--
-- Unlogged: a position is a hint that saves a slow scan, never a promise. After
-- a crash, or on a promoted standby, the table is empty (the next claims scan
-- in full and remember again), and remembering costs no WAL for its rows. The
-- sequence of seq is a sequence of its own, logged (a WAL record per 32
-- values): PostgreSQL 15 makes an identity column's sequence unlogged with its
-- table, and an unlogged sequence cannot be read on a promoted standby ("bad
-- magic number in sequence"), so every claim that remembers a position failed
-- after a failover (found by python/tests/test_failover.py). An explicit
-- sequence, not an identity altered to SET LOGGED, so that a dump and restore
-- keeps it logged too.
--
-- Written only while scans are slow: one insert per claim (the new position)
-- and the deletion of the row that claim read. An insert, not an update: under
-- a pinned horizon no version can be removed, and an updated row's versions
-- form a chain that every read walks from its oldest end, growing by one per
-- claim; the newest row of a worker, found by a backward scan of the primary
-- key (worker_id, seq), is the first entry read, however many dead rows the
-- horizon keeps behind it.

begin;
set local role conductor_owner;

create sequence conductor.claim_positions_seq;

create unlogged table conductor.claim_positions (
  worker_id text not null,
  seq       bigint not null default pg_catalog.nextval('conductor.claim_positions_seq'),
  scope     text not null,
  priority  integer,
  run_at    timestamptz,
  task_id   bigint,
  until     double precision,
  primary key (worker_id, seq)
);
comment on table conductor.claim_positions is
  'Where a worker''s claims go on from while full scans are slow (claim; a hint, unlogged): the newest row per '
  'worker_id counts. scope: the claim''s queues and kinds; priority, run_at, task_id: the last task claimed; '
  'until: when the next full scan is due (epoch seconds). A row without a task is a strike: one slow scan seen.';
grant select on conductor.claim_positions to conductor_client, conductor_worker, conductor_admin;
alter sequence conductor.claim_positions_seq owned by conductor.claim_positions.seq;

commit;
