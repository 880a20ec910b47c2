-- Deploy conductor:schema/coordination to pg
-- requires: schema/owner
-- requires: schema/tasks
-- requires: schema/operations
--
-- Coordination no foreign session can hold (issue 25). v0.2.0 coordinated
-- leaders, concurrency keys and exclusive() with advisory locks, and any login
-- to the database, with no grant at all, may take any advisory lock (the keys
-- are computable from the source, and pg_locks shows them while held). These
-- tables replace them. The application roles may only read them, as every
-- table of the schema: a row lock (SELECT ... FOR UPDATE, FOR SHARE, ...) needs
-- the UPDATE privilege, which nobody but the owner has, and LOCK TABLE with
-- SELECT alone takes only ACCESS SHARE, which conflicts with no row lock nor
-- write. A login with no grant cannot even read them. So the only sessions
-- that can hold one of their rows are the engine's own definer functions.
--
--   conductor.leader_leases      one row per leader name (the scheduler,
--                                retention, 'singleton:' || name): who holds
--                                it (holder: a string the process chose; login:
--                                the role that took it) and until when, on
--                                conductor.now(). try_lead takes it when it is
--                                free or expired and renews it for its holder;
--                                release_lead expires it; the row stays, so only
--                                a name's first lease inserts (functions/leader).
--                                A lease taken through the v0.2.0 signature
--                                try_lead(name) belongs to its session
--                                (session_pid): it lasts while that backend
--                                lives, as v0.2.0's session lock did.
--   conductor.concurrency_slots  a fixed set of 65536 rows; a concurrency key
--                                maps to slot hashtextextended(key, 0) & 65535.
--                                claim locks the slots of the keys it may claim
--                                FOR UPDATE SKIP LOCKED (functions/claim): the
--                                rows exist before any claim, so a claim never
--                                inserts one and never waits for another
--                                session, and no enqueue touches them. Two keys
--                                that share a slot only make one claim pass
--                                over the other key's tasks while the first
--                                claim is uncommitted.
--   conductor.exclusive_locks    one row per name exclusive(name) was called
--                                with (keyed by md5(name), so a name of any
--                                length fits the index); exclusive() inserts it
--                                when missing and locks it FOR UPDATE, so only
--                                other exclusive() callers of that name make it
--                                wait (functions/bus). Rows not locked are
--                                deleted a day after they were made
--                                (conductor._forget_exclusive_locks).

begin;
set local role conductor_owner;

create table conductor.leader_leases (
  name             text primary key,
  holder           text not null,
  login            text not null,
  since            timestamptz not null,
  renewed_at       timestamptz not null,
  expires_at       timestamptz not null,
  session_pid      integer,
  pid              integer,
  application_name text,
  constraint leader_leases_name_valid check (name <> '' and pg_catalog.length(name) <= 200),
  constraint leader_leases_holder_valid check (holder <> '' and pg_catalog.length(holder) <= 200)
);
comment on table conductor.leader_leases is
  'Leader leases (try_lead, release_lead, leaders): who holds each leader name and until when (conductor.now()). '
  'Only the engine''s functions write or lock its rows; the application roles read it.';
comment on column conductor.leader_leases.holder is
  'The holder''s own name for itself (pyconductor: host, pid and a random part), the same at every renewal.';
comment on column conductor.leader_leases.login is
  'The role that took the lease (conductor._caller()); only that role renews or releases it before it expires.';
comment on column conductor.leader_leases.session_pid is
  'A lease taken through v0.2.0''s try_lead(name): held while this backend lives (expires_at is infinity).';
comment on column conductor.leader_leases.pid is
  'The backend that last took or renewed the lease (through a pooler: the server session that ran it).';
revoke all on conductor.leader_leases from public;
grant select on conductor.leader_leases to conductor_client, conductor_worker, conductor_admin;

create table conductor.concurrency_slots (
  slot integer primary key,
  constraint concurrency_slots_slot_valid check (slot between 0 and 65535)
);
comment on table conductor.concurrency_slots is
  'The row claim locks (FOR UPDATE SKIP LOCKED) for a concurrency key while it claims one of its tasks: '
  'slot hashtextextended(key, 0) & 65535. 65536 fixed rows; only the engine''s functions lock them.';
revoke all on conductor.concurrency_slots from public;
grant select on conductor.concurrency_slots to conductor_client, conductor_worker, conductor_admin;
insert into conductor.concurrency_slots (slot) select s from pg_catalog.generate_series(0, 65535) s;

create table conductor.exclusive_locks (
  key        uuid primary key,
  name       text not null,
  created_at timestamptz not null
);
comment on table conductor.exclusive_locks is
  'One row per exclusive() name (key: md5(name)), locked FOR UPDATE by exclusive() for the caller''s transaction. '
  'Only the engine''s functions write or lock its rows; rows not locked are forgotten a day after they were made.';
revoke all on conductor.exclusive_locks from public;
grant select on conductor.exclusive_locks to conductor_client, conductor_worker, conductor_admin;

commit;
