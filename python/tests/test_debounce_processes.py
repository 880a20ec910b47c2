"""Debounce with real worker processes (``python -m pyconductor worker --app
apps.debounce_app:app``), the real clock and a real PostgreSQL (issue 30):

- a burst of enqueues of one key runs once, with the last payload, after the
  quiet period;
- with ``debounce_max`` a steady stream that never goes quiet still runs, each
  run no later than its first enqueue + debounce_max, each with a later
  payload than the one before, and the last payload given runs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import wait_until
from processes import Spawn, spawner

from pyconductor import Conductor

APP = "apps.debounce_app:app"
SHORT = ("--lease", "5", "--heartbeat", "1", "--reap", "1", "--poll", "0.5", "--no-scheduler")


def q(dsn: str, query: str, params: Any = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


@pytest.fixture
def side(db_dsn: str) -> str:
    q(db_dsn, "create table debounce_runs (task_id bigint not null, payload jsonb not null, pid integer not null,"
              " started_at timestamptz not null default clock_timestamp())")  # fmt: skip
    return db_dsn


@pytest.fixture
def spawn(side: str, tmp_path: Path) -> Iterator[Spawn]:
    with spawner(side, tmp_path, APP, *SHORT) as start:
        yield start


def test_a_burst_runs_once_with_the_last_payload(side: str, spawn: Spawn) -> None:
    workers = [spawn("--concurrency", "4"), spawn("--concurrency", "4")]
    with Conductor(side) as client:
        ids = {client.enqueue("reindex", {"n": n}, dedupe_key="index:burst", debounce=timedelta(seconds=1))
               for n in range(30)}  # fmt: skip
    assert len(ids) == 1, "every enqueue of the burst returned the one waiting task"
    (task_id,) = ids
    wait_until(lambda: q(side, "select status::text = 'succeeded' from conductor.tasks where id = %s",
                         (task_id,))[0][0],
               timeout=20, message=lambda: "the debounced task ran: " + workers[0].output()[-2000:])  # fmt: skip
    runs = q(side, "select task_id, payload from debounce_runs")
    assert runs == [(task_id, {"n": 29})]
    assert q(side, "select count(*) from conductor.tasks where kind = 'reindex'") == [(1,)]


def test_a_steady_stream_still_runs_by_debounce_max(side: str, spawn: Spawn) -> None:
    spawn("--concurrency", "4")
    debounce, debounce_max = timedelta(seconds=0.5), timedelta(seconds=2)
    with Conductor(side) as client:
        started = time.monotonic()
        n = 0
        while time.monotonic() - started < 5.0:  # an enqueue every 50 ms: never 0.5 s of quiet
            client.enqueue("reindex", {"n": n}, dedupe_key="index:stream", debounce=debounce,
                           debounce_max=debounce_max)  # fmt: skip
            n += 1
            time.sleep(0.05)  # the stream's pace, not a wait for a condition
        last = n - 1
    wait_until(lambda: q(side, "select bool_and(status::text = 'succeeded') from conductor.tasks"
                               " where kind = 'reindex'")[0][0],
               timeout=20, message="every debounced task finished")  # fmt: skip
    rows = q(side, "select r.payload, extract(epoch from r.started_at - t.enqueued_at)::float8"
                   " from debounce_runs r join conductor.tasks t on t.id = r.task_id"
                   " order by r.started_at")  # fmt: skip
    assert len(rows) >= 2, f"a 5 s stream under a 2 s maximum ran more than once: {rows}"
    for _, waited in rows:
        assert waited < 2.0 + 1.5, f"a run started {waited:.2f} s after its first enqueue (max 2 s + slack)"
    ns = [payload["n"] for payload, _ in rows]
    assert ns == sorted(ns) and len(set(ns)) == len(ns), f"each run took a later payload: {ns}"
    assert ns[-1] == last, "the last payload given ran"
    assert q(side, "select count(*) from conductor.tasks where kind = 'reindex'") == [(len(rows),)]
