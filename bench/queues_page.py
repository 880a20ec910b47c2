"""The queues page on a big history (issue 29): does it stay under 200 ms with a million
finished tasks and a day of per-minute samples?

    .venv/bin/python bench/queues_page.py --dsn URL [--finished 1000000] [--queued 10000]

URL: a throwaway database with the schema deployed, as a superuser (the owner's direct
inserts). Destroys every task and sample in it. Fills, with generate_series, directly
into conductor.tasks: --finished tasks finished over the last 24 hours in 8 queues (1 in
20 failed, the rest succeeded) and --queued ready tasks; then one sample_queues() call
backfills the day (timed: the first sample on a live history), and one more under the
fake clock a minute later writes one minute (timed: the call the maintenance role makes
each minute). After ANALYZE, prints the milliseconds (min / median / p95 of --runs, warm)
of the queues page's reads (pyconductor.web.reads.DashboardData.queues: stats(),
paused queues, workers, leaders, waiting_reasons(), queue_series()) for the hour and the
day, and of the whole page over HTTP (a DashboardServer on loopback).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from pyconductor.dashboard import DashboardServer  # noqa: E402
from pyconductor.web.reads import DashboardData  # noqa: E402

FILL_FINISHED = """
insert into conductor.tasks (id, root_id, queue, kind, payload, run_at, enqueued_at, started_at, finished_at,
                             status, attempt)
select id, id, 'q' || (id %% 8), 'bench.kind', '{}', f - interval '2 seconds', f - interval '2 seconds',
       f - interval '1 second', f, case when id %% 20 = 0 then 'failed' else 'succeeded' end::conductor.task_status, 1
  from (select nextval('conductor.tasks_id_seq') as id,
               now() - interval '24 hours' + (i * interval '24 hours' / %(n)s) - interval '1 minute' as f
          from generate_series(1, %(n)s) i) s
"""
FILL_QUEUED = """
insert into conductor.tasks (id, root_id, queue, kind, payload, run_at, enqueued_at)
select id, id, 'q' || (id %% 8), 'bench.kind', '{}', now() - interval '30 minutes', now() - interval '30 minutes'
  from (select nextval('conductor.tasks_id_seq') as id from generate_series(1, %(n)s)) s
"""


def timed(call: Callable[[], object], runs: int) -> tuple[float, float, float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        call()
        out.append((time.perf_counter() - t0) * 1000)
    out.sort()
    return round(out[0], 1), round(statistics.median(out), 1), round(out[int(0.95 * (len(out) - 1))], 1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True)
    p.add_argument("--finished", type=int, default=1_000_000)
    p.add_argument("--queued", type=int, default=10_000)
    p.add_argument("--runs", type=int, default=30)
    args = p.parse_args()
    adm = psycopg.connect(args.dsn, autocommit=True)
    adm.execute("delete from conductor.attempts")
    adm.execute("delete from conductor.tasks")
    adm.execute("delete from conductor.queue_samples")
    adm.execute("delete from conductor.sample_minutes")
    t0 = time.perf_counter()
    adm.execute(FILL_FINISHED, {"n": args.finished})
    adm.execute(FILL_QUEUED, {"n": args.queued})
    adm.execute("vacuum analyze conductor.tasks")
    print(f"filled {args.finished} finished and {args.queued} queued tasks in {time.perf_counter() - t0:.1f} s")

    t0 = time.perf_counter()
    minutes = adm.execute("select conductor.sample_queues()").fetchone()[0]
    print(f"first sample_queues(): {minutes} minutes backfilled in {(time.perf_counter() - t0) * 1000:.0f} ms")
    adm.execute("update conductor.settings set fake_clock = true where one")
    adm.execute("select set_config('conductor.fake_now', (now() + interval '1 minute')::text, false)")
    t0 = time.perf_counter()
    minutes = adm.execute("select conductor.sample_queues()").fetchone()[0]
    print(f"next sample_queues(), a minute later: {minutes} minute(s) in {(time.perf_counter() - t0) * 1000:.1f} ms")
    adm.execute("select set_config('conductor.fake_now', '', false)")
    adm.execute("update conductor.settings set fake_clock = false where one")
    rows = adm.execute("select count(*) from conductor.queue_samples").fetchone()[0]
    print(f"samples: {rows} rows of conductor.queue_samples")
    adm.execute("analyze conductor.queue_samples, conductor.sample_minutes")

    data = DashboardData(args.dsn)
    data.open()
    try:
        for name in ("hour", "day"):
            data.queues(name)  # warm
            print(f"queues page reads, range={name} (min / median / p95 ms):", timed(lambda n=name: data.queues(n), args.runs))
        print("of which queue_series, range=day:", timed(lambda: data.series("day"), args.runs))
        print("of which stats():", timed(lambda: data._rows("select * from conductor.stats()"), args.runs))
    finally:
        data.close()
    with DashboardServer(args.dsn, "127.0.0.1", 0) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        for path in ("/", "/?range=day"):
            assert client.get(path).status_code == 200
            print(f"GET {path} over HTTP (min / median / p95 ms):",
                  timed(lambda p=path: client.get(p).raise_for_status(), args.runs))


if __name__ == "__main__":
    main()
