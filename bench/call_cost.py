"""What one call of the SQL API costs its backend: CPU time per call, each call in its own
transaction, as a worker makes them.

    .venv/bin/python bench/call_cost.py --dsn URL [--calls 2000]

Needs a server on this machine (it reads the backend's user + system time from
/proc/<pid>/stat) and a throwaway database (it deletes every task first). One
connection, autocommit, prepared statements (psycopg prepares after the fifth
execution; 50 warm-up calls come first). Reports, in microseconds of backend
CPU per call:

- claim 1: ``claim`` of one task from a full queue (``durable => false``, as the
  workers claim, where the schema has it);
- claim empty: ``claim`` from an empty queue;
- complete_many empty: ``complete_many`` of no attempt (a call's fixed cost);
- pair 1, pair 20: ``claim`` of 1 (20) tasks and their ``complete_many``, per pair;
- enqueue_many 50: one ``enqueue_many`` of 50 tasks built in the client.

``bench/drain_ab.sh REF`` with ``BENCH_AB=calls`` runs it alternately against an
older commit's schema and the working tree's.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
QUEUE = "callcost"
CLAIM = "select attempt_id from conductor.claim(worker_id => 'callcost', queues => array[%s], max_tasks => %s{})"


def backend_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def fill(conn: psycopg.Connection[Any], n: int) -> None:
    conn.execute("delete from conductor.attempts")
    conn.execute("delete from conductor.tasks")
    for _ in range(0, n, 1000):
        conn.execute("select count(*) from conductor.enqueue_many(%s)",
                     [Jsonb([{"kind": "k", "queue": QUEUE} for _ in range(1000)])])  # fmt: skip
    conn.execute("vacuum analyze conductor.tasks")


def per_call(pid: int, calls: int, call: Callable[[], None]) -> float:
    for _ in range(50):
        call()
    start = backend_cpu(pid)
    for _ in range(calls):
        call()
    return (backend_cpu(pid) - start) / calls * 1e6


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True)
    p.add_argument("--calls", type=int, default=2000, help="calls measured per figure")
    args = p.parse_args(argv)
    n = args.calls

    with psycopg.connect(args.dsn, autocommit=True) as conn:
        pid = int((conn.execute("select pg_backend_pid()").fetchone() or [0])[0])
        # an older schema's claim (before 0.3.0) has no durable parameter
        durable = conn.execute(
            "select 'durable' = any(proargnames) from pg_proc where oid = 'conductor.claim'::regproc"
        ).fetchone()
        claim_sql = CLAIM.format(", durable => false" if durable and durable[0] else "")

        def claim(queue: str, k: int) -> list[int]:
            return [int(r[0]) for r in conn.execute(claim_sql, [queue, k])]

        def claim_one() -> None:
            claim(QUEUE, 1)

        def claim_empty() -> None:
            claim("callcost-empty", 1)

        def complete_nothing() -> None:
            conn.execute("select count(*) from conductor.complete_many('{}'::bigint[])")

        def pair(k: int) -> Callable[[], None]:
            def run() -> None:
                conn.execute("select count(*) from conductor.complete_many(%s)", [claim(QUEUE, k)])

            return run

        batch = Jsonb([{"kind": "k", "queue": "callcost-enqueue", "payload": {"n": i}} for i in range(50)])

        def enqueue_batch() -> None:
            conn.execute("select count(*) from conductor.enqueue_many(%s)", [batch])

        figures: list[tuple[str, float]] = []
        fill(conn, n + 100)
        figures.append(("claim 1", per_call(pid, n, claim_one)))
        figures.append(("claim empty", per_call(pid, n, claim_empty)))
        figures.append(("complete_many empty", per_call(pid, n, complete_nothing)))
        fill(conn, n + 100)
        figures.append(("pair 1", per_call(pid, n, pair(1))))
        fill(conn, 20 * (n // 10 + 60))
        figures.append(("pair 20", per_call(pid, n // 10, pair(20))))
        figures.append(("enqueue_many 50", per_call(pid, n // 10, enqueue_batch)))
    print("backend CPU per call (us): " + ", ".join(f"{name} {us:.0f}" for name, us in figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
