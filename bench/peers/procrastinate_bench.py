"""Procrastinate, used as its docs say for many short async jobs: an App on a
PsycopgConnector (psycopg 3 async pool), the schema applied with
``app.schema_manager.apply_schema_async()``, an async no-op task, and
``app.run_worker_async(wait=False, concurrency=N, listen_notify=True)``, which
returns once the queue is drained. Procrastinate's durability is PostgreSQL's
(logged tables, no per-session setting).

Run with bench/.venv-peers/bin/python (bench/peers/setup.sh), never the
project's venv:

    --dsn URL --jobs 20000 [--concurrency 16] [--workers 1]

The database is Procrastinate's alone (schema applied if missing, its jobs
deleted first). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import time

import procrastinate
import psycopg


def make_app(dsn: str, pool_size: int) -> procrastinate.App:
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn, min_size=1, max_size=pool_size))

    @app.task(name="noop", queue="bench")
    async def noop(n: int) -> None:
        return None

    return app


async def run(args: argparse.Namespace) -> dict:
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        installed = conn.execute("select to_regclass('procrastinate_jobs') is not null").fetchone()[0]
    app = make_app(args.dsn, args.concurrency + 4)
    async with app.open_async():
        if not installed:
            await app.schema_manager.apply_schema_async()
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            conn.execute("delete from procrastinate_events")
            conn.execute("delete from procrastinate_jobs")
        task = app.tasks["noop"]
        t0 = time.perf_counter()
        for start in range(0, args.jobs, 1000):
            k = min(1000, args.jobs - start)
            await task.batch_defer_async(*({"n": start + i} for i in range(k)))
        enqueue_rate = args.jobs / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        await asyncio.gather(*(
            app.run_worker_async(queues=["bench"], wait=False, concurrency=args.concurrency, listen_notify=True,
                                 install_signal_handlers=False, name=f"bench-{i}",
                                 delete_jobs=args.delete_jobs)
            for i in range(args.workers)
        ))  # fmt: skip
        dt = time.perf_counter() - t0
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        done = conn.execute("select count(*) from procrastinate_jobs where status = 'succeeded'").fetchone()[0]
        if args.delete_jobs != "never":
            done = args.jobs - conn.execute("select count(*) from procrastinate_jobs").fetchone()[0]
    return {"peer": "procrastinate", "measure": "drain", "jobs": args.jobs, "done": done, "seconds": round(dt, 3),
            "rate": round(args.jobs / dt, 1), "concurrency": args.concurrency, "workers": args.workers,
            "delete_jobs": args.delete_jobs,
            "enqueue_batch_1000_rate": round(enqueue_rate, 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True)
    p.add_argument("--jobs", type=int, default=20000)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--delete-jobs", choices=["never", "successful", "always"], default="never",
                   help="Procrastinate's delete_jobs worker option (its default: never)")
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    print(json.dumps(asyncio.run(run(args))), flush=True)


if __name__ == "__main__":
    main()
