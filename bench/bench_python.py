"""The Python driver end to end: enqueue rates, then a Worker draining no-op tasks.

    .venv/bin/python bench/bench_python.py --dsn URL [--tasks 20000] [--concurrency 16]

Run by bench/run.sh against its throwaway cluster; usable against any migrated
database (it works in the queues pybench_enq and pybench, and deletes their
tasks first). Prints one line per measure, rates in tasks/s.

1. enqueue, single: ``app.enqueue`` in a loop (one statement, one commit each)
   for --single-seconds.
2. enqueue, batch: ``app.enqueue_many`` of --batch tasks per call, --tasks in all.
3. drain: --tasks no-op tasks enqueued first (enqueue_many), then a
   ``pyconductor.Worker`` started on that queue and timed until no task of the
   queue is queued or running (polled every 20 ms); the time includes the
   worker's start-up and its last report.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time

import psycopg

QUEUE_ENQ = "pybench_enq"
QUEUE_DRAIN = "pybench"


def clean(dsn: str, others: bool = False) -> None:
    """Delete this bench's tasks (and every task, with others=True)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "delete from conductor.attempts a using conductor.tasks t"
            " where a.task_id = t.id and t.queue in (%s, %s)", [QUEUE_ENQ, QUEUE_DRAIN])
        conn.execute("delete from conductor.tasks where queue in (%s, %s)", [QUEUE_ENQ, QUEUE_DRAIN])
        if others:
            conn.execute("delete from conductor.attempts")
            conn.execute("delete from conductor.tasks")
        conn.execute("vacuum analyze conductor.tasks")
        conn.execute("vacuum analyze conductor.attempts")


def unfinished(conn: psycopg.Connection, queue: str) -> int:
    row = conn.execute(
        "select count(*) from conductor.tasks where queue = %s and status in ('queued', 'running')", [queue]
    ).fetchone()
    return int(row[0]) if row else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True)
    p.add_argument("--tasks", type=int, default=20000, help="tasks for the batch enqueue and the drain")
    p.add_argument("--batch", type=int, default=500, help="tasks per enqueue_many call")
    p.add_argument("--single-seconds", type=float, default=5.0, help="how long the single enqueue loop runs")
    p.add_argument("--concurrency", type=int, default=16, help="the Worker's concurrency")
    p.add_argument("--clean-all", action="store_true",
                   help="delete every task in the database before the drain (a throwaway database only)")
    args = p.parse_args(argv)

    from pyconductor import Conductor

    try:
        from pyconductor import Worker
    except ImportError:
        Worker = None  # noqa: N806 - the class, when the package has it

    clean(args.dsn)
    app = Conductor(args.dsn)

    @app.task("noop")
    def noop(payload: dict) -> None:
        return None

    # 1. single enqueue
    n = 0
    t0 = time.perf_counter()
    deadline = t0 + args.single_seconds
    while time.perf_counter() < deadline:
        app.enqueue("noop", {"n": n}, queue=QUEUE_ENQ)
        n += 1
    dt = time.perf_counter() - t0
    print(f"python enqueue, 1 per call (1 commit each):   {n / dt:10.1f} tasks/s  ({n} tasks in {dt:.2f} s)")

    # 2. batch enqueue
    t0 = time.perf_counter()
    done = 0
    while done < args.tasks:
        k = min(args.batch, args.tasks - done)
        app.enqueue_many([{"kind": "noop", "payload": {"n": done + i}, "queue": QUEUE_ENQ} for i in range(k)])
        done += k
    dt = time.perf_counter() - t0
    print(f"python enqueue_many, {args.batch} per call:          {done / dt:10.1f} tasks/s  ({done} tasks in {dt:.2f} s)")

    # 3. drain, with no other task in the database: a backlog in another queue
    # would measure the claim's index choice instead (see bench/HISTORY.md,
    # "What costs the rest", finding 3)
    clean(args.dsn, others=args.clean_all)
    for start in range(0, args.tasks, 1000):
        k = min(1000, args.tasks - start)
        app.enqueue_many([{"kind": "noop", "payload": {"n": start + i}, "queue": QUEUE_DRAIN} for i in range(k)])
    if Worker is None:
        print("python Worker drain: SKIPPED (pyconductor.Worker is not available in this checkout)")
        app.close()
        return 0
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        assert unfinished(conn, QUEUE_DRAIN) == args.tasks
        worker = Worker(app, queues=[QUEUE_DRAIN], concurrency=args.concurrency)
        t0 = time.perf_counter()
        worker.start()
        timeout = t0 + max(120.0, args.tasks / 50)
        while unfinished(conn, QUEUE_DRAIN) > 0:
            if time.perf_counter() > timeout:
                worker.stop(grace=1)
                print("python Worker drain: TIMED OUT", file=sys.stderr)
                return 1
            time.sleep(0.02)
        dt = time.perf_counter() - t0
        worker.stop(grace=5)
        row = conn.execute(
            "select count(*) filter (where status = 'succeeded'), count(*) from conductor.tasks where queue = %s",
            [QUEUE_DRAIN],
        ).fetchone()
        assert row is not None
    app.close()
    print(f"python Worker drain, concurrency {args.concurrency}:        {args.tasks / dt:10.1f} tasks/s  "
          f"({args.tasks} no-op tasks in {dt:.2f} s; {row[0]}/{row[1]} succeeded; worker stats {worker.stats})")
    return 0


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    raise SystemExit(main())
