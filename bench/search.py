"""Search on a big history (issue 29): how long one page of conductor.search_tasks
takes with --tasks (1,000,000) finished tasks, through the SQL function and through
the dashboard's /search page over HTTP.

The fixture is set-based INSERT ... SELECT straight into conductor.tasks as the
owner (a benchmark fixture, not the API): --tasks finished tasks (98 % succeeded,
2 % failed), one every 100 ms of enqueued time (so a million span about 28 hours),
over ten queues; kind 'common' except every 100,000th, 'rare'; payload
{"order_id": n, "customer": "c<n mod 1000>"}; every 10th carries dedupe_key
'order-<n>'; then 1,000 queued tasks on top, VACUUM ANALYZE and a CHECKPOINT.

Each search is timed --rounds times (the median and the worst are printed), the
SQL on one session (`select * from conductor.search_tasks(...)`, all rows
fetched), the page by a GET of /search on a DashboardServer in this process
(the whole HTML read). Also: walking the whole history for the rare kind by
following next_before_id ("search further") until the search ends.

    .venv/bin/python bench/search.py [--dsn URL] [--tasks 1000000] [--rounds 12]

Without --dsn it starts a throwaway cluster (pyconductor devdb, in a temporary
directory, stopped and removed at the end) and migrates it from the working tree.
With --dsn it destroys every task in that database: a throwaway database only.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def fill(conn: psycopg.Connection, tasks: int) -> float:
    t0 = time.perf_counter()
    conn.execute("set role conductor_owner")
    conn.execute("truncate conductor.attempts, conductor.tasks cascade")
    conn.execute(
        """
        insert into conductor.tasks (id, queue, kind, payload, run_at, status, attempt, dedupe_key, root_id,
                                     enqueued_at, started_at, finished_at, result, error)
        select s.id, 'q' || (s.n %% 10), case when s.n %% 100000 = 0 then 'rare' else 'common' end,
               jsonb_build_object('order_id', s.n, 'customer', 'c' || (s.n %% 1000)),
               s.at, case when s.n %% 50 = 0 then 'failed' else 'succeeded' end::conductor.task_status, 1,
               case when s.n %% 10 = 0 then 'order-' || s.n end, s.id,
               s.at, s.at + interval '1 second', s.at + interval '2 seconds',
               case when s.n %% 50 = 0 then null else '{"ok": true}'::jsonb end,
               case when s.n %% 50 = 0 then 'boom' end
          from (select nextval('conductor.tasks_id_seq') as id, g as n,
                       timestamptz '2031-01-01 00:00:00+00' + g * interval '100 milliseconds' as at
                  from generate_series(1, %(tasks)s) g) s""",
        {"tasks": tasks},
    )
    conn.execute(
        """
        insert into conductor.tasks (id, queue, kind, payload, run_at, dedupe_key, root_id, enqueued_at)
        select s.id, 'q0', 'common', jsonb_build_object('order_id', -g), s.at, 'pending-' || g, s.id, s.at
          from (select nextval('conductor.tasks_id_seq') as id, g,
                       timestamptz '2031-01-01 00:00:00+00' + (%(tasks)s + g) * interval '100 milliseconds' as at
                  from generate_series(1, 1000) g) s""",
        {"tasks": tasks},
    )
    conn.execute("reset role")
    conn.execute("vacuum analyze conductor.tasks")
    conn.execute("checkpoint")
    return time.perf_counter() - t0


def timed(fn: Any, rounds: int) -> tuple[float, float, Any]:
    fn()  # warm: plan caches, the pages the search reads
    took, last = [], None
    for _ in range(rounds):
        t0 = time.perf_counter()
        last = fn()
        took.append((time.perf_counter() - t0) * 1000)
    return statistics.median(took), max(took), last


SEARCH = ('select pg_catalog.cardinality(tasks) as found, next_before_id, scanned, cut_short '
          'from conductor.search_tasks(kind => %(kind)s, queue => %(queue)s, status => %(status)s, '
          'dedupe_key => %(dedupe_key)s, payload_contains => %(payload)s::jsonb, enqueued_after => %(enqueued_after)s, '
          'enqueued_before => %(enqueued_before)s, finished_after => %(finished_after)s, '
          'finished_before => %(finished_before)s, before_id => %(before)s)')  # fmt: skip
FIELDS = ("kind", "queue", "status", "dedupe_key", "payload", "enqueued_after", "enqueued_before",
          "finished_after", "finished_before", "before")  # fmt: skip


def run(dsn: str, tasks: int, rounds: int) -> None:
    from pyconductor.dashboard import DashboardServer

    with psycopg.connect(dsn, autocommit=True) as conn:
        print(f"fill: {tasks:,} finished tasks + 1,000 queued in {fill(conn, tasks):.1f} s", flush=True)
        top = conn.execute("select max(id) from conductor.tasks where status = 'succeeded'").fetchone()[0]
        base = datetime(2031, 1, 1, tzinfo=UTC)
        mid = base + timedelta(milliseconds=100 * tasks // 2)  # the middle of the enqueued history
        cases: list[tuple[str, dict[str, Any]]] = [
            ("rare kind, first page (cut short at 10,000)", {"kind": "rare"}),
            ("payload field {customer: c42}", {"payload": '{"customer": "c42"}'}),
            (
                "payload field + kind, 1 hour enqueued",
                {
                    "payload": '{"customer": "c42"}',
                    "kind": "common",
                    "enqueued_after": mid.isoformat(),
                    "enqueued_before": (mid + timedelta(hours=1)).isoformat(),
                },
            ),
            (
                "enqueued time range, 10 minutes, mid-history",
                {"enqueued_after": mid.isoformat(), "enqueued_before": (mid + timedelta(minutes=10)).isoformat()},
            ),
            (
                "finished time range, 10 minutes, mid-history",
                {"finished_after": mid.isoformat(), "finished_before": (mid + timedelta(minutes=10)).isoformat()},
            ),
            ("dedupe key of a queued task", {"dedupe_key": "pending-500", "status": "queued"}),
            ("dedupe key of a finished task, first page", {"dedupe_key": f"order-{tasks - 20}"}),
            ("status failed, queue q0", {"status": "failed", "queue": "q0"}),
            ("kind common, second page", {"kind": "common", "before": None}),
        ]
        first = conn.execute(SEARCH, {**dict.fromkeys(FIELDS), "kind": "common"}).fetchone()
        cases[-1][1]["before"] = first[1]
        results = []
        with DashboardServer(dsn) as server:
            for label, params in cases:
                args = {**dict.fromkeys(FIELDS), **params}
                sql_med, sql_max, row = timed(lambda: conn.execute(SEARCH, args).fetchone(), rounds)  # noqa: B023
                query = {k: v for k, v in params.items() if v is not None}
                url = f"{server.url}/search?{urllib.parse.urlencode(query)}"

                def get(url: str = url) -> int:
                    with urllib.request.urlopen(url) as r:
                        return len(r.read())

                http_med, http_max, _ = timed(get, rounds)
                found = row[0]
                results.append((label, sql_med, sql_max, http_med, http_max, found, row[2], row[3]))
                print(f"{label:50} sql {sql_med:7.1f} ms (max {sql_max:6.1f})  http {http_med:7.1f} ms "
                      f"(max {http_max:6.1f})  found {found:3} scanned {row[2]:6} cut_short {row[3]}",
                      flush=True)  # fmt: skip

        # the whole history for the rare kind, page after page
        t0, pages, found, before = time.perf_counter(), 0, 0, None
        while True:
            row = conn.execute(SEARCH, {**dict.fromkeys(FIELDS), "kind": "rare", "before": before}).fetchone()
            pages += 1
            found += row[0]
            if row[1] is None:
                break
            before = row[1]
        print(f"rare kind, the whole history by search further: {pages} pages, {found} found, "
              f"{time.perf_counter() - t0:.2f} s ({(time.perf_counter() - t0) * 1000 / pages:.1f} ms a page); "
              f"newest id {top:,}")  # fmt: skip
        print("\n| search | SQL median (max) | page median (max) | found | examined | cut short |")
        print("|---|---|---|---|---|---|")
        for label, sm, sx, hm, hx, f, sc, cs in results:
            print(
                f"| {label} | {sm:.1f} ms ({sx:.1f}) | {hm:.1f} ms ({hx:.1f}) | {f} | {sc} | {'yes' if cs else 'no'} |"
            )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", help="a throwaway database (every task in it is destroyed)")
    p.add_argument("--tasks", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=12)
    args = p.parse_args()
    if args.dsn:
        run(args.dsn, args.tasks, args.rounds)
        return
    with tempfile.TemporaryDirectory(prefix="conductor-bench-search.") as tmp:
        Path(tmp).chmod(0o755)  # the postgres OS user must reach the data directory
        data = Path(tmp) / "data"
        url = subprocess.run([PY, "-m", "pyconductor", "devdb", "start", "--datadir", str(data), "--dbname", "bench"],
                             check=True, capture_output=True, text=True, cwd=ROOT).stdout.strip()  # fmt: skip
        try:
            subprocess.run([PY, "-m", "pyconductor", "migrate", "--dsn", url], check=True, capture_output=True,
                           cwd=ROOT)  # fmt: skip
            run(url, args.tasks, args.rounds)
        finally:
            subprocess.run([PY, "-m", "pyconductor", "devdb", "stop", "--datadir", str(data)], cwd=ROOT,
                           capture_output=True)  # fmt: skip


if __name__ == "__main__":
    main()
