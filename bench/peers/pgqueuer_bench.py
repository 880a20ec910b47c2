"""PGQueuer, the way its own drain benchmark (tools/benchmark.py in its
repository) runs it: asyncpg, uvloop, 5 QueueManagers each on its own
connection, dequeue batch_size 10, an async no-op entrypoint, mode=drain.
Durability: PGQueuer's default, Durability.durable (every table LOGGED).

Run with bench/.venv-peers/bin/python (bench/peers/setup.sh), never the
project's venv:

    drain   --dsn URL --jobs 20000 [--managers 5] [--batch 10]
    latency --dsn URL --rate 100 --seconds 20   (tasks enqueued one at a time)
    enqueue --dsn URL --seconds 5               (one job per call and commit, as fast as it goes)

The database is PGQueuer's alone (its schema is installed if missing; its
queue is cleared first). Prints one JSON line of results.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

import asyncpg
import uvloop

from pgqueuer import AsyncpgDriver, QueueManager, Queries
from pgqueuer.types import QueueExecutionMode


async def install(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        q = Queries(AsyncpgDriver(conn))
        exists = await conn.fetchval("select to_regclass('pgqueuer') is not null")
        if not exists:
            await q.install()
        await q.clear_queue()
        await q.clear_statistics_log()
    finally:
        await conn.close()


async def drain(args: argparse.Namespace) -> dict:
    await install(args.dsn)
    conn = await asyncpg.connect(args.dsn)
    q = Queries(AsyncpgDriver(conn))
    t0 = time.perf_counter()
    for start in range(0, args.jobs, 1000):
        k = min(1000, args.jobs - start)
        await q.enqueue(["noop"] * k, [None] * k, [0] * k)
    enqueue_rate = args.jobs / (time.perf_counter() - t0)
    await conn.close()

    done = 0
    managers = []
    for _ in range(args.managers):
        qm = QueueManager(Queries(AsyncpgDriver(await asyncpg.connect(args.dsn))))

        @qm.entrypoint("noop")
        async def noop(job) -> None:  # noqa: ANN001
            nonlocal done
            done += 1

        managers.append(qm)
    t0 = time.perf_counter()
    await asyncio.gather(*(qm.run(batch_size=args.batch, mode=QueueExecutionMode.drain) for qm in managers))
    dt = time.perf_counter() - t0
    return {"peer": "pgqueuer", "measure": "drain", "jobs": args.jobs, "done": done, "seconds": round(dt, 3),
            "rate": round(args.jobs / dt, 1), "managers": args.managers, "batch_size": args.batch,
            "enqueue_batch_1000_rate": round(enqueue_rate, 1)}


async def latency(args: argparse.Namespace) -> dict:
    await install(args.dsn)
    qm = QueueManager(Queries(AsyncpgDriver(await asyncpg.connect(args.dsn))))
    committed: dict[int, tuple[float, float]] = {}
    started: dict[int, float] = {}

    @qm.entrypoint("noop")
    async def noop(job) -> None:  # noqa: ANN001
        started[int(job.payload.decode())] = time.time()

    async def produce() -> None:
        conn = await asyncpg.connect(args.dsn)
        pq = Queries(AsyncpgDriver(conn))
        n = int(args.rate * args.seconds)
        await asyncio.sleep(1.0)  # the worker is idle and listening
        t_next = time.perf_counter()
        for i in range(n):
            before = time.time()
            await pq.enqueue("noop", str(i).encode(), 0)  # autocommit: returns after the commit
            committed[i] = (before, time.time())
            t_next += 1.0 / args.rate
            delay = t_next - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
        deadline = time.perf_counter() + 10
        while len(started) < n and time.perf_counter() < deadline:
            await asyncio.sleep(0.05)
        await conn.close()
        qm.shutdown.set()

    await asyncio.gather(qm.run(batch_size=args.batch), produce())
    lat = sorted((started[i] - committed[i][1]) * 1000 for i in committed if i in started)
    lat_before = sorted((started[i] - committed[i][0]) * 1000 for i in committed if i in started)
    return {"peer": "pgqueuer", "measure": "latency", "sent": len(committed), "seen": len(lat),
            **summary(lat, "after_commit"), **summary(lat_before, "from_before_commit")}


async def enqueue(args: argparse.Namespace) -> dict:
    """A web application's path: one job per call, each its own statement and commit."""
    await install(args.dsn)
    conn = await asyncpg.connect(args.dsn)
    pq = Queries(AsyncpgDriver(conn))
    n = 0
    t0 = time.perf_counter()
    deadline = t0 + args.seconds
    while time.perf_counter() < deadline:
        await pq.enqueue("noop", str(n).encode(), 0)
        n += 1
    dt = time.perf_counter() - t0
    await conn.close()
    return {"peer": "pgqueuer", "measure": "enqueue", "jobs": n, "seconds": round(dt, 3), "rate": round(n / dt, 1)}


def summary(values: list[float], prefix: str) -> dict:
    if not values:
        return {}
    def pct(p: float) -> float:
        return round(values[min(len(values) - 1, int(p * len(values)))], 2)
    return {f"{prefix}_p50_ms": pct(0.50), f"{prefix}_p99_ms": pct(0.99), f"{prefix}_max_ms": round(values[-1], 2),
            f"{prefix}_mean_ms": round(statistics.fmean(values), 2)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("measure", choices=["drain", "latency", "enqueue"])
    p.add_argument("--dsn", required=True)
    p.add_argument("--jobs", type=int, default=20000)
    p.add_argument("--managers", type=int, default=5)
    p.add_argument("--batch", type=int, default=10)
    p.add_argument("--rate", type=float, default=100.0)
    p.add_argument("--seconds", type=float, default=20.0)
    args = p.parse_args()
    fn = {"drain": drain, "latency": latency, "enqueue": enqueue}[args.measure]
    print(json.dumps(uvloop.run(fn(args))), flush=True)


if __name__ == "__main__":
    main()
