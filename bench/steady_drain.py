"""A Worker's steady drain rate, without its start and its tail.

    .venv/bin/python bench/steady_drain.py --dsn URL [--tasks 60000] [--concurrency 32]

bench/bench_python.py times a 20,000-task drain from ``Worker.start()`` to the
last report: 2-3 s, of which the ramp and the tail are a fair part. This one
enqueues --tasks no-op tasks (queue pybench; a throwaway database: it deletes
every task first), starts a Worker and prints the tasks finished in each
--interval after its first claim, and the rate over the whole drain.
"""

from __future__ import annotations

import argparse
import time

from bench_python import QUEUE_DRAIN, clean
from pyconductor import Conductor, Worker


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True)
    p.add_argument("--tasks", type=int, default=60000)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--interval", type=float, default=0.5, help="seconds between two readings")
    args = p.parse_args(argv)

    clean(args.dsn, others=True)
    app = Conductor(args.dsn)

    @app.task("noop")
    def noop(payload: dict) -> None:
        return None

    for start in range(0, args.tasks, 1000):
        app.enqueue_many([{"kind": "noop", "payload": {"n": start + i}, "queue": QUEUE_DRAIN}
                          for i in range(min(1000, args.tasks - start))])  # fmt: skip
    worker = Worker(app, queues=[QUEUE_DRAIN], concurrency=args.concurrency, run_scheduler=False)
    worker.start()
    try:
        deadline = time.monotonic() + max(120.0, args.tasks / 50)
        while worker.stats["claimed"] == 0 and time.monotonic() < deadline:
            time.sleep(0.001)
        first_claim = time.monotonic()
        readings: list[int] = []
        while worker.stats["succeeded"] < args.tasks and time.monotonic() < deadline:
            time.sleep(args.interval)
            readings.append(worker.stats["succeeded"])
        seconds = time.monotonic() - first_claim
    finally:
        worker.stop(grace=5)
        app.close()
    done = worker.stats["succeeded"]
    per_interval = [round((b - a) / args.interval) for a, b in zip([0, *readings], readings)]
    full = per_interval[:-1] or per_interval  # the last interval is the tail
    print(f"steady drain, concurrency {args.concurrency}: {done / seconds:.0f} tasks/s over {done} tasks "
          f"from the first claim; per {args.interval:g} s interval (tasks/s): {per_interval}; "
          f"full intervals min {min(full)} median {sorted(full)[len(full) // 2]} max {max(full)}")
    return 0 if done == args.tasks else 1


if __name__ == "__main__":
    raise SystemExit(main())
