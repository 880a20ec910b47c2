"""WAL per task of the engine's own hot path, by record type (pg_walinspect).

    .venv/bin/python bench/wal_per_task.py --dsn URL [--batches 200] [--batch 50]

Where bench/layouts.py measures SQL twins of the tables, this goes through the
functions themselves: ``enqueue_many`` of 500, then ``claim(max_tasks => batch,
durable => false)`` and ``complete_many`` of what it claimed, as a worker under
load does, in a throwaway database (it empties conductor.tasks and
conductor.attempts first). WAL is read back with ``pg_get_wal_stats`` (it
creates pg_walinspect if missing, which needs a superuser, and sets
``wal_keep_size`` so the segments are still there to read). Full-page images are
counted apart: they depend on when the last checkpoint was (one is forced between
the two phases). The figures depend on no timing, so a loaded machine reads the
same as an idle one.
"""

from __future__ import annotations

import argparse
from typing import Any

import psycopg

ENQUEUE = """
select count(*) from conductor.enqueue_many(
  (select jsonb_agg(jsonb_build_object('kind', 'bench.wal', 'queue', 'bench-wal',
                                       'payload', jsonb_build_object('n', g)))
     from generate_series(1, 500) g))"""
CLAIM = """
select attempt_id from conductor.claim(worker_id => 'bench-wal', queues => array['bench-wal'],
                                       max_tasks => %s, durable => false)"""
OPTIONS = """
select string_agg(relname || ' ' || coalesce(array_to_string(reloptions, ','), '-'), '; ' order by relname)
  from pg_class where oid in ('conductor.tasks'::regclass, 'conductor.attempts'::regclass)"""
STATS = """
select "resource_manager/record_type", count, record_size, fpi_size
  from pg_get_wal_stats(%s, %s, true) where count > 0 order by record_size desc"""


def report(conn: psycopg.Connection[Any], title: str, start: str, end: str, tasks: int) -> None:
    rows = conn.execute(STATS, (start, end)).fetchall()
    size = sum(r[2] for r in rows)
    records = sum(r[1] for r in rows)
    fpi = sum(r[3] for r in rows)
    print(
        f"{title}: {size / tasks:.0f} B a task in {records / tasks:.1f} records "
        f"(full-page images apart: {fpi / tasks:.0f} B)"
    )
    for kind, count, record_size, _ in rows:
        if record_size / tasks >= 1:
            print(f"  {kind:28s} {count / tasks:6.2f} records {record_size / tasks:7.0f} B")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dsn", required=True, help="a throwaway database with the conductor schema")
    parser.add_argument("--batches", type=int, default=200, help="claim + complete_many rounds")
    parser.add_argument("--batch", type=int, default=50, help="tasks a claim")
    args = parser.parse_args()
    tasks = args.batches * args.batch
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.execute("create extension if not exists pg_walinspect")
        conn.execute("alter system set wal_keep_size = '4GB'")
        conn.execute("select pg_reload_conf()")
        conn.execute("truncate conductor.attempts, conductor.tasks cascade")
        for table in ("conductor.tasks", "conductor.attempts"):
            conn.execute(f"vacuum analyze {table}")
        options = conn.execute(OPTIONS).fetchone()
        print(f"{tasks} tasks, claims of {args.batch}; {options[0] if options else ''}")
        start = conn.execute("select pg_current_wal_lsn()::text").fetchone()[0]  # type: ignore[index]
        for _ in range(-(-tasks // 500)):
            conn.execute(ENQUEUE)
        enqueued = conn.execute("select pg_current_wal_lsn()::text").fetchone()[0]  # type: ignore[index]
        report(conn, "enqueue_many", start, enqueued, -(-tasks // 500) * 500)
        conn.execute("checkpoint")
        start = conn.execute("select pg_current_wal_lsn()::text").fetchone()[0]  # type: ignore[index]
        for _ in range(args.batches):
            ids = [r[0] for r in conn.execute(CLAIM, (args.batch,))]
            refused = conn.execute("select * from conductor.complete_many(%s)", (ids,)).fetchall()
            if len(ids) != args.batch or refused:
                raise SystemExit(f"claimed {len(ids)} of {args.batch}, {len(refused)} refused: not a clean run")
        end = conn.execute("select pg_current_wal_lsn()::text").fetchone()[0]  # type: ignore[index]
        report(conn, "claim + complete_many", start, end, tasks)


if __name__ == "__main__":
    main()
