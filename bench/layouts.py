"""What a storage layout writes per task: WAL of claim + complete under three layouts of the task table.

    .venv/bin/python bench/layouts.py --dsn URL [--batches 300]

Issue 26 asks for at most 1 KB of WAL per finished task and names the levers
the peers use: keep the hot table to unfinished work (finished tasks move to a
history table partitioned by time), keep state changes HOT, write the attempt
row once. Before rebuilding the engine's storage, this measures each lever on
bare SQL twins of conductor.tasks and conductor.attempts (the same columns and
indexes as the schema, no functions, no triggers), in schemas of their own in
the database given (a throwaway one: it drops and recreates the schemas
``layout_*``). WAL is counted with pg_walinspect (created if missing: needs a
superuser), without full-page images (reported apart: they depend on when the
last checkpoint was), per task, at batches of 50 as the workers claim under load.
``--fillfactor`` sets the task tables' (80, conductor.tasks'): an update whose
new version does not fit on its page writes an extra Heap/LOCK record.

- ``inplace``: today's layout. The claim updates the task row (never HOT:
  status is in the partial indexes' predicates, claimed_by is indexed) and
  inserts the attempt; the completion updates both.
- ``history``: the hot table holds unfinished work only, and no index names a
  column a claim changes (predicates on wait_for, the lease on the attempt),
  so a claim can be HOT; the completion deletes the task and inserts it into a
  history table partitioned by finished_at.
- ``attempt_once``: in place, but the attempt row is written once, at the
  completion (the claim keeps the fencing token on the task row).

Enqueue (the same insert in every layout) is measured once, for the whole
task's figure.
"""

from __future__ import annotations

import argparse
from functools import partial
from typing import Any

import psycopg

TASK_COLUMNS = """
  id bigserial primary key, queue text not null default 'default', kind text not null,
  payload jsonb not null default '{}', priority int not null default 0, run_at timestamptz not null default now(),
  status text not null default 'queued', attempt int not null default 0, max_attempts int not null default 1,
  backoff_base interval, backoff_factor float8, backoff_max interval, recoveries int not null default 0,
  max_recoveries int not null default 3, dedupe_key text, concurrency_key text, parent_id bigint,
  root_id bigint not null default 0, attempt_id bigint, claimed_by text, lease_expires_at timestamptz,
  wait_for text, wait_event text, wait_until timestamptz, wait_step text, result jsonb, error text,
  enqueued_at timestamptz not null default now(), started_at timestamptz, finished_at timestamptz, timeout interval"""
ATTEMPT_COLUMNS = """
  id bigint primary key, task_id bigint not null, attempt int not null, worker_id text not null, host text, pid int,
  claimed_at timestamptz not null, lease_expires_at timestamptz, finished_at timestamptz, outcome text, error text,
  traceback text"""

# sql/schema.dump.sql's indexes of conductor.tasks, on the twin
INPLACE_INDEXES = """
create index on {s}.tasks (queue, priority desc, run_at, id) where status = 'queued';
create index on {s}.tasks (priority desc, run_at, id) where status = 'queued';
create index on {s}.tasks (claimed_by) where status = 'running';
create index on {s}.tasks (wait_until) where status = 'waiting';
create index on {s}.tasks (wait_event) where status = 'waiting' and wait_for = 'event';
create index on {s}.tasks (priority desc, run_at, id) where status = 'queued' and concurrency_key is not null;
create index on {s}.tasks (concurrency_key) where status = 'running' and concurrency_key is not null;
create unique index on {s}.tasks (dedupe_key)
  where dedupe_key is not null and status in ('queued', 'running', 'waiting');
create index on {s}.tasks (id) where status in ('failed', 'dead', 'timed_out');
create index on {s}.tasks (parent_id) where parent_id is not null;
create index on {s}.tasks (root_id) where parent_id is not null;
create index on {s}.tasks (finished_at) include (queue, status) where finished_at is not null;
create index on {s}.attempts (task_id);
"""
HISTORY_INDEXES = """
create index on {s}.tasks (queue, priority desc, run_at, id) where wait_for is null;
create index on {s}.tasks (priority desc, run_at, id) where wait_for is null;
create index on {s}.tasks (wait_until) where wait_for is not null;
create index on {s}.tasks (wait_event) where wait_for = 'event';
create index on {s}.tasks (priority desc, run_at, id) where wait_for is null and concurrency_key is not null;
create unique index on {s}.tasks (dedupe_key) where dedupe_key is not null;
create index on {s}.tasks (parent_id) where parent_id is not null;
create index on {s}.attempts (task_id);
create index on {s}.attempts (worker_id) where finished_at is null;
create table {s}.history (like {s}.tasks) partition by range (finished_at);
create table {s}.history_all partition of {s}.history for values from ('2000-01-01') to ('2100-01-01');
alter table {s}.history_all add primary key (id);
create index on {s}.history_all (root_id) where parent_id is not null;
create index on {s}.history_all (id) where status in ('failed', 'dead', 'timed_out');
"""

ENQUEUE = """insert into {s}.tasks (queue, kind, payload)
select 'q', 'k', jsonb_build_object('n', i, 'to', 'someone@example.com') from generate_series(1, 50) i"""
PICK = """select id from {s}.tasks where queue = 'q' and {ready} order by priority desc, run_at, id
          limit 50 for update skip locked"""
SET_RUNNING = """status = 'running', attempt = t.attempt + 1, attempt_id = nextval('{s}.attempt_ids'),
          claimed_by = 'w1', lease_expires_at = now() + interval '30 s', started_at = coalesce(t.started_at, now())"""
CLAIM_WITH_ATTEMPT = """with c as ({pick}),
  u as (update {s}.tasks t set {set_running} from c where t.id = c.id returning t.id, t.attempt_id, t.attempt),
  a as (insert into {s}.attempts (id, task_id, attempt, worker_id, host, pid, claimed_at, lease_expires_at)
        select u.attempt_id, u.id, u.attempt, 'w1', 'host', 1, now(), {lease} from u returning id)
  select array_agg(id) from a"""
CLAIM_ALONE = """with c as ({pick}),
  u as (update {s}.tasks t set {set_running} from c where t.id = c.id returning t.attempt_id)
  select array_agg(attempt_id) from u"""
FINISH_ATTEMPT = """update {s}.attempts set finished_at = now(), outcome = 'succeeded'
   where id = any(%(ids)s) returning task_id"""
INPLACE_PICK = PICK.replace("{ready}", "status = 'queued'")
HISTORY_PICK = PICK.replace("{ready}", "wait_for is null and status = 'queued'")
LAYOUTS: dict[str, dict[str, str]] = {
    "inplace": {
        "indexes": INPLACE_INDEXES,
        "claim": CLAIM_WITH_ATTEMPT.replace("{pick}", INPLACE_PICK).replace("{lease}", "null"),
        "complete": f"""with a as ({FINISH_ATTEMPT})
  update {{s}}.tasks t set status = 'succeeded', finished_at = now(), lease_expires_at = null
    from a where t.id = a.task_id""",
    },
    "history": {
        "indexes": HISTORY_INDEXES,
        "claim": CLAIM_WITH_ATTEMPT.replace("{pick}", HISTORY_PICK).replace("{lease}", "now() + interval '30 s'"),
        "complete": f"""with a as ({FINISH_ATTEMPT}),
  d as (delete from {{s}}.tasks t using a where t.id = a.task_id returning t.*)
  insert into {{s}}.history
  select id, queue, kind, payload, priority, run_at, 'succeeded', attempt, max_attempts, backoff_base,
         backoff_factor, backoff_max, recoveries, max_recoveries, dedupe_key, concurrency_key, parent_id, root_id,
         attempt_id, null, null, wait_for, wait_event, wait_until, wait_step, result, error, enqueued_at, started_at,
         now(), timeout
    from d""",
    },
    "attempt_once": {
        "indexes": INPLACE_INDEXES,
        "claim": CLAIM_ALONE.replace("{pick}", INPLACE_PICK),
        "complete": """with t as (
    update {s}.tasks t set status = 'succeeded', finished_at = now(), lease_expires_at = null
     where t.attempt_id = any(%(ids)s) returning t.id, t.attempt_id, t.attempt, t.started_at)
  insert into {s}.attempts (id, task_id, attempt, worker_id, host, pid, claimed_at, finished_at, outcome)
  select t.attempt_id, t.id, t.attempt, 'w1', 'host', 1, t.started_at, now(), 'succeeded' from t""",
    },
}


def create(conn: psycopg.Connection[Any], name: str, fillfactor: int) -> str:
    s = f"layout_{name}"
    conn.execute(f"drop schema if exists {s} cascade")
    conn.execute(f"create schema {s}")
    conn.execute(f"create table {s}.tasks ({TASK_COLUMNS}) with (fillfactor = {fillfactor})")
    conn.execute(f"create table {s}.attempts ({ATTEMPT_COLUMNS}) with (fillfactor = 85)")
    conn.execute(f"create sequence {s}.attempt_ids")
    if name == "attempt_once":  # the claim's lookup of a task by its fencing token, at completion
        conn.execute(f"create index on {s}.tasks (attempt_id) where status = 'running'")
    for statement in LAYOUTS[name]["indexes"].format(s=s).strip().split(";\n"):
        conn.execute(statement.rstrip(";"))
    return s


def wal_per_task(conn: psycopg.Connection[Any], batches: int, step: Any) -> tuple[float, float, float, str]:
    conn.execute("checkpoint")
    start = conn.execute("select pg_current_wal_insert_lsn()").fetchone()
    for _ in range(batches):
        step()
    end = conn.execute("select pg_current_wal_insert_lsn()").fetchone()
    assert start and end
    tasks = batches * 50
    rows = conn.execute(
        'select "resource_manager/record_type", count, record_size, fpi_size from pg_get_wal_stats(%s, %s, true)',
        [start[0], end[0]],
    ).fetchall()
    records = sum(r[1] for r in rows) / tasks
    size = sum(r[2] for r in rows) / tasks
    fpi = sum(r[3] for r in rows) / tasks
    top = sorted(rows, key=lambda r: -r[2])[:6]
    kinds = ", ".join(f"{r[0]} {r[1] / tasks:.2f} x {r[2] / max(r[1], 1):.0f} B" for r in top)
    return size, records, fpi, kinds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", required=True, help="a throwaway database (its layout_* schemas are replaced)")
    parser.add_argument("--batches", type=int, default=300, help="batches of 50 tasks per layout (300)")
    parser.add_argument("--fillfactor", type=int, default=80, help="of the task tables (80, conductor.tasks')")
    args = parser.parse_args()
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.execute("create extension if not exists pg_walinspect")
        print(
            f"per task, batches of 50, {args.batches * 50} tasks per layout, task tables at fillfactor "
            f"{args.fillfactor}; WAL without full-page images"
        )
        for name, layout in LAYOUTS.items():
            s = create(conn, name, args.fillfactor)
            size, records, fpi, kinds = wal_per_task(conn, args.batches, partial(conn.execute, ENQUEUE.format(s=s)))
            if name == "inplace":
                print(f"enqueue (every layout): {size:.0f} B in {records:.1f} records (+{fpi:.0f} B of FPI): {kinds}")
            conn.execute(f"vacuum analyze {s}.tasks")
            claim = layout["claim"].format(s=s, set_running=SET_RUNNING.format(s=s))
            complete = layout["complete"].format(s=s)

            def cycle(claim: str = claim, complete: str = complete) -> None:
                row = conn.execute(claim).fetchone()
                assert row and row[0] and len(row[0]) == 50, "the queue ran dry"
                conn.execute(complete, {"ids": row[0]})

            size, records, fpi, kinds = wal_per_task(conn, args.batches, cycle)
            print(f"{name}: claim + complete {size:.0f} B in {records:.1f} records (+{fpi:.0f} B of FPI): {kinds}")
            conn.execute(f"drop schema {s} cascade")


if __name__ == "__main__":
    main()
