"""Due-time wake-ups: how late an idle worker starts delayed tasks.

    .venv/bin/python bench/delayed.py --dsn URL [--tasks 200] [--spread 5] [--lead 2] [--rounds 1]

A throwaway database (it deletes the tasks of queue pybench_delayed first).
A Worker (poll interval 10 s, the default) starts on that queue and goes idle;
then --tasks no-op tasks are enqueued at once (enqueue_many) with run_at spread
evenly over --spread seconds, the first --lead seconds ahead, so the worker
sleeps between them. Once all have run it prints, over the tasks, how long
after its run_at each was claimed (attempts.claimed_at - tasks.run_at, the
database's clock) and how long after its run_at its handler started (the
handler's own clock, the same machine): p50, p99, max in milliseconds.
The goal (issue 15): p99 under 100 ms. Before the due-time wake-up a task
waited for the next poll: up to 10 s.

A claim commits (it writes the attempt), and a slow commit delays the claim
after it: during the round another connection times a durable commit of one
row (table pybench_commit_floor, dropped after) every 20 ms, and the line
ends with that floor, so a late tail can be told from the disk's.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import psycopg

from pyconductor import Conductor, Worker

QUEUE = "pybench_delayed"


def clean(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %s",
                     [QUEUE])  # fmt: skip
        conn.execute("delete from conductor.tasks where queue = %s", [QUEUE])


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered):.1f} ms, p99 {p99:.1f} ms, max {ordered[-1]:.1f} ms"


def commit_floor(dsn: str, stop: threading.Event, out: list[float]) -> None:
    """Durable commit latencies (ms) every 20 ms until ``stop``."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set synchronous_commit = on")  # whatever the DSN says: the disk's floor
        conn.execute("create table if not exists pybench_commit_floor (at timestamptz)")
        while not stop.wait(0.02):
            t = time.perf_counter()
            conn.execute("insert into pybench_commit_floor values (now())")
            out.append((time.perf_counter() - t) * 1000)
        conn.execute("drop table pybench_commit_floor")


def one_round(dsn: str, tasks: int, spread: float, lead: float,
              concurrency: int) -> tuple[list[float], list[float], list[float]]:  # fmt: skip
    clean(dsn)
    floor: list[float] = []
    stop_floor = threading.Event()
    sampler = threading.Thread(target=commit_floor, args=(dsn, stop_floor, floor), daemon=True)
    app = Conductor(dsn)
    started: dict[int, datetime] = {}

    @app.task("delayed.noop", queue=QUEUE)
    def noop(payload: dict[str, Any], ctx: Any) -> None:
        started[ctx.task_id] = datetime.now(timezone.utc)

    worker = Worker(app, queues=[QUEUE], concurrency=concurrency, run_scheduler=False)
    worker.start()
    try:
        deadline = time.monotonic() + 30
        while not worker.producer.sleeping and time.monotonic() < deadline:
            time.sleep(0.01)
        first = datetime.now(timezone.utc) + timedelta(seconds=lead)
        sampler.start()
        step = spread / max(1, tasks - 1)
        ids = app.enqueue_many([{"kind": "delayed.noop", "queue": QUEUE,
                                 "run_at": (first + timedelta(seconds=i * step)).isoformat()}
                                for i in range(tasks)])  # fmt: skip
        deadline = time.monotonic() + lead + spread + 30
        while worker.stats["succeeded"] < tasks and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop_floor.set()
        worker.stop(grace=5)
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "select t.id, t.run_at, extract(epoch from a.claimed_at - t.run_at)::float8 * 1000"
            "  from conductor.tasks t join conductor.attempts a on a.task_id = t.id"
            " where t.id = any(%s) and t.status = 'succeeded'", [ids]).fetchall()  # fmt: skip
    app.close()
    if len(rows) != tasks:
        raise SystemExit(f"only {len(rows)} of {tasks} delayed tasks succeeded")
    claim_ms = [ms for _, _, ms in rows]
    start_ms = [(started[task_id] - run_at).total_seconds() * 1000 for task_id, run_at, _ in rows]
    return claim_ms, start_ms, floor


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True)
    p.add_argument("--tasks", type=int, default=200)
    p.add_argument("--spread", type=float, default=5.0, help="seconds over which the run_at times spread")
    p.add_argument("--lead", type=float, default=2.0, help="seconds from the enqueue to the first run_at")
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--rounds", type=int, default=1)
    args = p.parse_args(argv)
    for n in range(1, args.rounds + 1):
        claim_ms, start_ms, floor = one_round(args.dsn, args.tasks, args.spread, args.lead, args.concurrency)
        print(f"round {n}: {args.tasks} delayed tasks over {args.spread:g} s on an idle worker (poll 10 s): "
              f"claimed after run_at {percentiles(claim_ms)}; handler started after run_at {percentiles(start_ms)}; "
              f"meanwhile a durable commit took {percentiles(floor)}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
