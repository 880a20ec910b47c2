"""Pickup latency: tasks enqueued one at a time at a steady rate to an idle
pyconductor Worker; for each task, the time from the producer's commit to the
handler's start (time.time() on both sides: same host, same clock).

    .venv/bin/python bench/latency.py --dsn URL [--rate 100] [--seconds 20] [--concurrency 32]

The producer calls ``app.enqueue`` (one statement, autocommit: it returns after
the commit) and records time.time() before the call and after it returns; the
handler records time.time() as its first line. Reported: p50/p99/max of
handler start - after commit (the figure), and of handler start - before the
call (an upper bound that includes the commit itself); and, measured first at
the same pace, the machine's floor: a bare ``select 1`` round trip on an idle
connection (a pickup needs at least the notification and a claim round trip,
so its p99 cannot be below this one's). The worker runs with
its defaults (LISTEN/NOTIFY wake-up, poll_interval 10 s as the backstop), in
the same process as the producer but on its own threads and connections.
Works in queue 'pybench_lat' (its tasks are deleted first). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time

import psycopg

from pyconductor import Conductor, Worker

QUEUE = "pybench_lat"


def summary(values: list[float], prefix: str) -> dict:
    values = sorted(values)
    if not values:
        return {}

    def pct(p: float) -> float:
        return round(values[min(len(values) - 1, int(p * len(values)))], 2)

    return {f"{prefix}_p50_ms": pct(0.50), f"{prefix}_p99_ms": pct(0.99), f"{prefix}_max_ms": round(values[-1], 2),
            f"{prefix}_mean_ms": round(statistics.fmean(values), 2)}


def round_trip_floor(dsn: str, rate: float, samples: int) -> list[float]:
    """``select 1`` round trips (ms) at ``rate`` per second on an idle connection."""
    out = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("select 1")
        t_next = time.perf_counter()
        for _ in range(samples):
            t = time.perf_counter()
            conn.execute("select 1").fetchall()
            out.append((time.perf_counter() - t) * 1000)
            t_next += 1.0 / rate
            delay = t_next - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True)
    p.add_argument("--rate", type=float, default=100.0)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--floor-samples", type=int, default=1000, help="select 1 round trips measured first (0: none)")
    args = p.parse_args()

    floor = round_trip_floor(args.dsn, args.rate, args.floor_samples) if args.floor_samples else []
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.execute("delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %s", [QUEUE])
        conn.execute("delete from conductor.tasks where queue = %s", [QUEUE])

    app = Conductor(args.dsn, pool_min=1, pool_max=2)
    started: dict[int, float] = {}
    lock = threading.Lock()

    @app.task("lat.noop", queue=QUEUE)
    def noop(payload: dict) -> None:
        t = time.time()
        with lock:
            started[payload["n"]] = t

    worker = Worker(app, queues=[QUEUE], concurrency=args.concurrency, run_scheduler=False)
    worker.start()
    app.enqueue("lat.noop", {"n": -1}, queue=QUEUE)  # warm the pool, the worker's plans
    time.sleep(1.5)  # idle: the worker waits on LISTEN
    n = int(args.rate * args.seconds)
    committed: dict[int, tuple[float, float]] = {}
    t_next = time.perf_counter()
    for i in range(n):
        before = time.time()
        app.enqueue("lat.noop", {"n": i}, queue=QUEUE)
        committed[i] = (before, time.time())
        t_next += 1.0 / args.rate
        delay = t_next - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
    deadline = time.perf_counter() + 10
    while len(started) < n + 1 and time.perf_counter() < deadline:
        time.sleep(0.05)
    worker.stop(grace=2)
    app.close()
    after = [(started[i] - committed[i][1]) * 1000 for i in committed if i in started]
    before = [(started[i] - committed[i][0]) * 1000 for i in committed if i in started]
    commit = [(committed[i][1] - committed[i][0]) * 1000 for i in committed]
    print(json.dumps({"peer": "pyconductor", "measure": "latency", "sent": n, "seen": len(after),
                      "rate": args.rate, "concurrency": args.concurrency, **summary(after, "after_commit"),
                      **summary(before, "from_before_commit"), **summary(commit, "enqueue_call"),
                      **summary(floor, "select1_round_trip")}), flush=True)


if __name__ == "__main__":
    main()
