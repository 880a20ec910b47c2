"""A queue cap (``conductor.set_queue_limit``) holding across real worker processes:
3 ``pyconductor worker`` processes of concurrency 2 each (6 slots) drain a queue capped
at 3, under load, and the attempts' intervals never overlap four deep, and do reach three
(which no one process can: the cap is filled across processes).
Also the CLI (``pyconductor queue-limit``) and the dashboard's queues page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import REPO, wait_until
from processes import Spawn, spawner

from pyconductor import Conductor

Conn = psycopg.Connection[tuple[Any, ...]]

ENV = {k: v for k, v in os.environ.items() if k not in ("CONDUCTOR_DSN", "DATABASE_URL")}
ENV["PYTHONPATH"] = str(REPO / "python")


@pytest.fixture
def spawn(db_dsn: str, tmp_path: Path) -> Iterator[Spawn]:
    with spawner(db_dsn, tmp_path, "apps.proc_app:app", "--heartbeat", "1", "--poll", "1", "--reap", "5",
                 named=False) as start:  # fmt: skip
        yield start


def cli(dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyconductor", *args, "--dsn", dsn], capture_output=True, text=True,
                          env=ENV, cwd=REPO, timeout=60, check=False)  # fmt: skip


# The most attempts running at once, from the attempts: each from its handler's start (the
# executions row, clock_timestamp(), after its claim committed) to its finished_at (the
# start of the completing transaction, before it commits): inside the time the task was
# running. Not from claimed_at: that is the claiming transaction's start, which comes
# before the claim's wait on the cap row (it counts the running tasks after that wait), so
# a claim that waited while a task finished has a claimed_at before that task's finished_at.
MAX_OVERLAP = """
with spans as (
  select a.id, e.started_at, a.finished_at
    from conductor.attempts a join executions e on e.attempt_id = a.id
)
select coalesce(max(n), 0) from (
  select (select count(*) from spans b where b.started_at <= a.started_at and b.finished_at > a.started_at) as n
    from spans a) x
"""


def test_a_cap_of_3_holds_across_3_worker_processes(db_dsn: str, db_conn: Conn, spawn: Spawn) -> None:
    db_conn.execute("create table executions (task_id bigint, attempt_id bigint, pid integer,"
                    " started_at timestamptz not null default clock_timestamp())")  # fmt: skip
    out = cli(db_dsn, "queue-limit", "default", "3")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "queue default: at most 3 tasks running at once across the fleet"
    workers = [spawn("--concurrency", "2") for _ in range(3)]
    wait_until(lambda: db_conn.execute("select count(*) from conductor.workers").fetchone() == (3,), timeout=30)

    # the running count, sampled from committed state all through the drain
    samples: list[int] = []
    done = threading.Event()

    def sample() -> None:
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            while not done.is_set():
                samples.append(conn.execute(
                    "select count(*) from conductor.tasks where queue = 'default' and status = 'running'"
                ).fetchone()[0])  # fmt: skip

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        with Conductor(db_dsn) as app:
            app.enqueue_many([("sleep", {"seconds": 0.2}) for _ in range(45)])
        wait_until(lambda: db_conn.execute("select count(*) = 45 from conductor.tasks where status = 'succeeded'")
                   .fetchone()[0], timeout=50, interval=0.2)  # fmt: skip
    finally:
        done.set()
        sampler.join()

    assert max(samples) == 3 and samples.count(3) > 10, "never more than 3 running, and 3 often"
    assert db_conn.execute(MAX_OVERLAP).fetchone() == (3,), "3 attempts at once, never 4"
    assert db_conn.execute("select count(*) from conductor.attempts").fetchone() == (45,)
    pids = {row[0] for row in db_conn.execute("select distinct pid from executions").fetchall()}
    assert len(pids) >= 2, "3 ran at once, so at least 2 processes ran them"
    assert pids <= {w.proc.pid for w in workers}

    out = cli(db_dsn, "queue-limit", "default", "off")
    assert out.returncode == 0 and out.stdout.strip() == "queue default: no cap"
    assert db_conn.execute("select count(*) from conductor.queue_limits").fetchone() == (0,)


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (("q", "many"), 2, "expected a number of running tasks or 'off'"),
        (("q", "0"), 1, "[QC106]"),
        (("bad queue", "3"), 1, "[QC104]"),
    ],
)
def test_queue_limit_refuses_what_makes_no_sense(db_dsn: str, db_conn: Conn, args: tuple[str, ...], code: int,
                                                 says: str) -> None:  # fmt: skip
    out = cli(db_dsn, "queue-limit", *args)
    assert out.returncode == code, out.stderr
    assert says in out.stderr
    assert db_conn.execute("select count(*) from conductor.queue_limits").fetchone() == (0,)


def test_the_queues_page_shows_the_cap(db_dsn: str, db_conn: Conn) -> None:
    pytest.importorskip("starlette")
    import httpx

    from pyconductor.dashboard import DashboardServer

    db_conn.execute("select conductor.register_worker('w', queues => '{capped}')")
    db_conn.execute("select conductor.set_queue_limit('capped', 2)")
    for _ in range(3):
        db_conn.execute("select conductor.enqueue('k', '{}', queue => 'capped')")
    db_conn.execute("select count(*) from conductor.claim('w', array['capped'], 10)")
    with DashboardServer(db_dsn, "127.0.0.1", 0) as server, httpx.Client(base_url=server.url, timeout=10) as client:
        home = client.get("/").text
    row = re.search(r'<tr data-queue="capped">.*?</tr>', home)
    assert row and '<td class=n data-cap="2"' in row.group(0) and ">2 / 2<" in row.group(0)
    waiting = re.search(r'<tr data-waiting-queue="capped">.*?</tr>', home)
    assert waiting and '<td class=n data-reason="queue_cap">1' in waiting.group(0)
