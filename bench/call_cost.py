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

With ``--raw`` it also measures, per task at batches of 50, the engine
(``enqueue_many`` of 50; ``claim`` of 50 and their ``complete_many``) beside
the raw twin of bench/raw_schema.sql (created in schema ``bench_raw``): a
50-row INSERT, and the claim UPDATE ... SKIP LOCKED of 50 then their UPDATE
to done, the statements of bench/raw_*_50.sql. pgbench's pairs compare
throughput, which the commit's flush bounds at two clients; these compare
what each task costs the server's CPU.

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
    p.add_argument("--raw", action="store_true", help="also per task at batches of 50, beside the raw twin")
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
        if args.raw:
            per_task = batches_of_50(conn, pid, max(n // 10, 100), pair(50), enqueue_batch)
    print("backend CPU per call (us): " + ", ".join(f"{name} {us:.0f}" for name, us in figures))
    if args.raw:
        for name, rounds in per_task.items():
            print(f"{name}, backend CPU per task (us), engine against raw, each round: "
                  + ", ".join(f"{api:.1f} / {raw:.1f} = {api / raw:.2f}x" for api, raw in rounds))  # fmt: skip
    return 0


RAW_INSERT = """insert into bench_raw.jobs (queue, kind, payload)
select 'callcost', 'bench', jsonb_build_object('n', i) from generate_series(1, 50) i"""
RAW_CLAIM = """with picked as (
  select r.id from bench_raw.jobs r
   where r.queue = 'callcost' and r.status = 'queued' and r.run_at <= now()
   order by r.priority desc, r.run_at, r.id limit 50 for update skip locked
), claimed as (
  update bench_raw.jobs j
     set status = 'running', attempts = j.attempts + 1, locked_by = 'bench',
         locked_until = now() + interval '60 seconds', started_at = coalesce(j.started_at, now())
    from picked where j.id = picked.id
  returning j.id
)
select array_agg(id) from claimed"""
RAW_DONE = """update bench_raw.jobs set status = 'done', result = null, locked_until = null, finished_at = now()
 where id = any(%s) and status = 'running'"""


Rounds = dict[str, list[tuple[float, float]]]


def batches_of_50(conn: psycopg.Connection[Any], pid: int, calls: int, api_pair: Callable[[], None],
                  api_enqueue: Callable[[], None], rounds: int = 3) -> Rounds:  # fmt: skip
    """Per task, each round: (the engine's, the raw twin's) enqueue and claim + complete at
    batches of 50, the order of the two sides swapped every round."""
    conn.execute((Path(__file__).parent / "raw_schema.sql").read_text())

    def raw_pair() -> None:
        row = conn.execute(RAW_CLAIM).fetchone()
        assert row and row[0] and len(row[0]) == 50, "the raw queue ran dry"
        conn.execute(RAW_DONE, [row[0]])

    def raw_enqueue() -> None:
        conn.execute(RAW_INSERT)

    fill(conn, 50 * rounds * (calls + 50))
    for _ in range(rounds * (calls + 50)):
        raw_enqueue()
    conn.execute("vacuum analyze bench_raw.jobs")
    figures: Rounds = {"claim 50 + complete_many": [], "enqueue_many 50": []}
    for r in range(rounds):
        for name, api, raw in (("claim 50 + complete_many", api_pair, raw_pair),
                               ("enqueue_many 50", api_enqueue, raw_enqueue)):  # fmt: skip
            sides = [(api, "api"), (raw, "raw")][:: 1 if r % 2 == 0 else -1]
            cost = {side: per_call(pid, calls, call) / 50 for call, side in sides}
            figures[name].append((cost["api"], cost["raw"]))
    conn.execute("drop schema bench_raw cascade")
    return figures


if __name__ == "__main__":
    raise SystemExit(main())
