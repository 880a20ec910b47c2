"""Cost as work grows: the drain rate with 10 k tasks queued, with 1 M queued,
and with N finished rows (default 5 M) not yet pruned, by two drivers:

- pgbench, bench/api_claim_complete_50.sql (claim 50 + complete_many 50, two
  commits per 50 tasks), -c 2 -j 2, a fixed number of transactions
  (--pgbench-tx per client: 2 x 50 x 50 = 5,000 tasks per run by default);
- the pyconductor Worker (concurrency 32, no-op handler), timed from start
  until it has reported --worker-tasks successes.

Each state is measured --rounds times. Fixtures are set-based INSERT ... SELECT
straight into conductor.tasks / conductor.attempts (a benchmark fixture, not
the API): queued rows in queue 'bench'; finished history as 'succeeded' tasks
in queue 'history', each with one finished attempt row, then VACUUM ANALYZE.

    .venv/bin/python bench/scale.py --dsn URL [--history 5000000] [--queued-large 1000000]

Destroys every task in the database: a throwaway database only. Prints one
line per run and a summary table (mean rates and the ratios 1M/10k and
with-history/clean).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import time
from pathlib import Path

import psycopg

from pyconductor import Conductor, Worker
from pyconductor.dev.devdb import find_bindir

ROOT = Path(__file__).resolve().parent.parent
QUEUE = "bench"


def sql(dsn: str, *stmts: str) -> list:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows: list = []
        for s in stmts:
            cur = conn.execute(s)
            rows = cur.fetchall() if cur.description else []
        return rows


def fill_queued(dsn: str, want: int) -> float:
    """Top queue 'bench' up to `want` queued tasks; returns seconds spent."""
    t0 = time.perf_counter()
    have = sql(dsn, f"select count(*) from conductor.tasks where queue = '{QUEUE}' and status = 'queued'")[0][0]
    left = want - have
    while left > 0:
        k = min(left, 500_000)
        sql(dsn, f"""
            insert into conductor.tasks (id, queue, kind, payload, run_at, enqueued_at, root_id)
            select id, '{QUEUE}', 'noop', jsonb_build_object('n', id), now() - interval '1 second', now(), id
              from (select nextval('conductor.tasks_id_seq') as id from generate_series(1, {k})) s""")
        left -= k
    return time.perf_counter() - t0


def prune_live(dsn: str) -> None:
    """Delete what the runs finished and every queued task (history stays)."""
    sql(dsn,
        "delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue <> 'history'",
        "delete from conductor.tasks where queue <> 'history'")


def settle(dsn: str) -> None:
    sql(dsn, "vacuum analyze conductor.tasks", "vacuum analyze conductor.attempts", "checkpoint")


def add_history(dsn: str, n: int) -> float:
    t0 = time.perf_counter()
    left = n
    while left > 0:
        k = min(left, 1_000_000)
        sql(dsn, f"""
            with t as (
              insert into conductor.tasks (id, queue, kind, payload, run_at, status, attempt, result,
                                           enqueued_at, started_at, finished_at, root_id, attempt_id)
              select id, 'history', 'noop', jsonb_build_object('n', id), now() - interval '1 hour', 'succeeded', 1,
                     'null', now() - interval '1 hour', now() - interval '1 hour', now() - interval '59 minutes',
                     id, nextval('conductor.attempts_id_seq')
                from (select nextval('conductor.tasks_id_seq') as id from generate_series(1, {k})) s
              returning id, attempt_id)
            insert into conductor.attempts (id, task_id, attempt, worker_id, claimed_at, finished_at, outcome)
            select attempt_id, id, 1, 'history', now() - interval '1 hour', now() - interval '59 minutes', 'succeeded'
              from t""")
        left -= k
    return time.perf_counter() - t0


def pgbench_rate(dsn: str, tx: int) -> float:
    out = subprocess.run(
        [str(find_bindir() / "pgbench"), "-n", "-M", "simple", "-c", "2", "-j", "2", "-t", str(tx),
         "-f", str(ROOT / "bench/api_claim_complete_50.sql"), dsn],
        capture_output=True, text=True, check=True).stdout
    m = re.search(r"^tps = ([0-9.]+) \(without initial connection time\)", out, re.M)
    assert m, out
    return float(m.group(1)) * 50


def worker_rate(dsn: str, tasks: int) -> float:
    app = Conductor(dsn)

    @app.task("noop")
    def noop(payload: dict) -> None:
        return None

    worker = Worker(app, queues=[QUEUE], concurrency=32, run_scheduler=False)
    t0 = time.perf_counter()
    worker.start()
    while worker.stats["succeeded"] < tasks:
        time.sleep(0.005)
        if time.perf_counter() - t0 > 300:
            raise RuntimeError("worker drain timed out")
    dt = time.perf_counter() - t0
    done = worker.stats["succeeded"]
    worker.stop(grace=5)
    app.close()
    return done / dt


def sizes(dsn: str) -> dict:
    rows = sql(dsn, """select c.relname, pg_total_relation_size(c.oid) from pg_class c
                        where c.oid in ('conductor.tasks'::regclass, 'conductor.attempts'::regclass)""")
    return {r[0]: r[1] for r in rows}


def measure(dsn: str, state: str, queued: int, args: argparse.Namespace, results: dict) -> None:
    for r in range(args.rounds):
        for driver in ("pgbench", "worker"):
            prune_live(dsn) if queued < 100_000 else None
            fill = fill_queued(dsn, queued)
            settle(dsn)
            rate = pgbench_rate(dsn, args.pgbench_tx) if driver == "pgbench" else worker_rate(dsn, args.worker_tasks)
            results.setdefault((state, driver), []).append(rate)
            print(json.dumps({"state": state, "driver": driver, "round": r + 1, "queued": queued,
                              "rate": round(rate, 1), "fill_s": round(fill, 1),
                              "load": open("/proc/loadavg").read().split()[:3]}), flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True)
    p.add_argument("--queued-small", type=int, default=10_000)
    p.add_argument("--queued-large", type=int, default=1_000_000)
    p.add_argument("--history", type=int, default=5_000_000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--pgbench-tx", type=int, default=50, help="transactions per pgbench client (x2 clients x50 tasks)")
    p.add_argument("--worker-tasks", type=int, default=5000)
    args = p.parse_args()
    results: dict = {}
    sql(args.dsn, "delete from conductor.attempts", "delete from conductor.tasks")
    settle(args.dsn)
    measure(args.dsn, "10k queued", args.queued_small, args, results)
    measure(args.dsn, "1M queued", args.queued_large, args, results)
    prune_live(args.dsn)
    secs = add_history(args.dsn, args.history)
    settle(args.dsn)
    print(json.dumps({"history_rows": args.history, "insert_s": round(secs, 1), "sizes": sizes(args.dsn)}), flush=True)
    measure(args.dsn, f"10k queued + {args.history / 1e6:g}M finished", args.queued_small, args, results)
    print()
    print("| state | pgbench claim 50 + complete_many 50, tasks/s (per round) | Worker c=32, tasks/s (per round) |")
    print("|---|---|---|")
    means = {}
    for state in dict.fromkeys(s for s, _ in results):
        cells = []
        for driver in ("pgbench", "worker"):
            v = results[(state, driver)]
            means[(state, driver)] = statistics.fmean(v)
            cells.append(f"{statistics.fmean(v):,.0f} ({', '.join(f'{x:,.0f}' for x in v)})")
        print(f"| {state} | {cells[0]} | {cells[1]} |")
    states = list(dict.fromkeys(s for s, _ in results))
    for driver in ("pgbench", "worker"):
        print(f"ratio {driver}: 1M/10k = {means[(states[1], driver)] / means[(states[0], driver)]:.2f}, "
              f"with-history/clean = {means[(states[2], driver)] / means[(states[0], driver)]:.2f}")


if __name__ == "__main__":
    main()
