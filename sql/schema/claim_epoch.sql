-- Deploy conductor:schema/claim_epoch to pg
--
-- conductor.claim_epoch: one row saying that the attempt ids handed out since
-- this server's WAL was last lost can never be handed out again.
--
-- An attempt id is the fencing token of a claim (conductor.attempts_id_seq). A
-- claim committed without waiting for its WAL flush (synchronous_commit off: a
-- claim(durable => false), or a server or session configured so) is lost in a
-- crash before the flush, and so is the sequence's advance: after recovery the
-- sequence hands out the same ids again, and the lost claim's holder, still
-- running its task, would then report under the fencing token of another
-- worker's claim. Unlogged, the table is emptied by every crash recovery, and
-- is empty on a promoted standby or a restored base backup (the cases where WAL
-- the old server wrote may be lost), while a clean shutdown keeps its row. A
-- claim that finds it empty first moves attempts_id_seq 10^9 past its value
-- (no server hands out that many ids between two WAL flushes), writes the row
-- and commits that claim durably; claims after it see the row (functions/claim,
-- conductor._claim_epoch). Deployed with its row: nothing was lost before.
--
-- The roles may read it, as every table; only claim writes it.

begin;
set local role conductor_owner;

create unlogged table conductor.claim_epoch (
  one        boolean primary key default true check (one),
  started_at timestamptz not null
);
comment on table conductor.claim_epoch is
  'Unlogged, emptied by crash recovery: its row says attempts_id_seq was moved past every id a lost WAL may have '
  'handed out, since started_at (written by claim).';
insert into conductor.claim_epoch (started_at) values (pg_catalog.clock_timestamp());
grant select on conductor.claim_epoch to conductor_client, conductor_worker, conductor_admin;

commit;
