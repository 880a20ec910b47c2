"""Durable runs with real worker processes (``python -m pyconductor worker --app
apps.runs_app:app``), real SIGKILLs and a real PostgreSQL:

- a run of 5 checkpointed steps survives a kill -9 during any one of them: the
  finished steps never run again, the killed one at most twice;
- concurrency keys under load: 200 tasks over 5 keys, 4 worker processes, never
  two running with the same key.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import wait_until
from processes import Spawn, spawner

APP = "apps.runs_app:app"
# lease 2 s, heartbeat 0.5 s, reap 0.5 s (and at next_wake), poll 0.5 s
SHORT = ("--lease", "2", "--heartbeat", "0.5", "--reap", "0.5", "--poll", "0.5", "--no-scheduler")


def q(dsn: str, query: str, params: Any = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


@pytest.fixture
def spawn(db_dsn: str, tmp_path: Path) -> Iterator[Spawn]:
    with spawner(db_dsn, tmp_path, APP, *SHORT) as start:
        yield start


@pytest.fixture
def side(db_dsn: str) -> str:
    q(db_dsn, "create table step_runs (task_id bigint not null, step integer not null, pid integer not null,"
              " recoveries integer not null, at timestamptz not null default clock_timestamp())")  # fmt: skip
    q(db_dsn, "create table running_keys (key text primary key, task_id bigint not null)")
    q(db_dsn, "create table key_runs (key text not null, task_id bigint not null, pid integer not null,"
              " started_at timestamptz not null, finished_at timestamptz not null)")  # fmt: skip
    return db_dsn


@pytest.mark.parametrize("killed_in", [1, 2, 3, 4, 5])
def test_a_run_resumes_after_its_worker_is_killed_mid_step(side: str, spawn: Spawn, killed_in: int) -> None:
    dsn = side
    (task_id,), = q(dsn, "select conductor.enqueue(kind => 'five_steps', payload => %s::jsonb)",
                    (f'{{"block": {killed_in}}}',))[0:1]  # fmt: skip
    first = spawn("--concurrency", "2")
    wait_until(lambda: q(dsn, "select 1 from step_runs where task_id = %s and step = %s", (task_id, killed_in)),
               timeout=15, message=f"step {killed_in} started")  # fmt: skip
    first.kill9()
    killed_at = time.monotonic()
    second = spawn("--concurrency", "2")
    wait_until(lambda: q(dsn, "select status::text not in ('queued', 'running') from conductor.tasks where id = %s",
                         (task_id,))[0][0], timeout=15, message="the run finished after the kill")  # fmt: skip
    recovered_in = time.monotonic() - killed_at

    (status, result, recoveries), = q(dsn, "select status::text, result, recoveries from conductor.tasks where id = %s",
                                      (task_id,))  # fmt: skip
    assert status == "succeeded", second.output()[-3000:]
    assert recoveries == 1
    runs = dict(q(dsn, "select step, count(*) from step_runs where task_id = %s group by step", (task_id,)))
    for step in range(1, 6):
        if step == killed_in:
            assert 1 <= runs[step] <= 2, runs
        else:
            assert runs.get(step) == 1, f"step {step} ran {runs.get(step, 0)} times: {runs}"
    # the steps before the kill were the first worker's, the rest the second's
    pids = [r["pid"] for r in result]
    assert pids == [first.pid] * (killed_in - 1) + [second.pid] * (6 - killed_in)
    assert recovered_in < 6, f"recovered {recovered_in:.1f}s after the kill (lease 2 s)"


def test_concurrency_keys_hold_under_load(side: str, spawn: Spawn) -> None:
    dsn = side
    keys = [f"pipeline-{k}" for k in range(5)]
    q(dsn, "select conductor.enqueue(kind => 'keyed', payload => jsonb_build_object('key', k, 'ms', 5),"
           " concurrency_key => k) from unnest(%s::text[]) k, generate_series(1, 40)", (keys,))  # fmt: skip
    workers = [spawn("--concurrency", "4", "--poll", "0.05") for _ in range(4)]
    wait_until(lambda: q(dsn, "select count(*) = 200 from conductor.tasks where status not in ('queued', 'running')")[0][0],
               timeout=60, interval=0.1, message="200 keyed tasks finished")  # fmt: skip

    assert q(dsn, "select status::text, count(*) from conductor.tasks group by 1") == [("succeeded", 200)], \
        "a failed task means two handlers held one key at once"  # fmt: skip
    overlaps = q(dsn, "select a.key, a.task_id, b.task_id from key_runs a join key_runs b"
                      " on a.key = b.key and a.task_id < b.task_id"
                      " and a.started_at < b.finished_at and b.started_at < a.finished_at")  # fmt: skip
    assert overlaps == []
    assert q(dsn, "select count(*), count(distinct key) from key_runs") == [(200, 5)]
    used = q(dsn, "select count(distinct pid) from key_runs")[0][0]
    assert used >= 2, f"the load went to {used} of {len(workers)} workers"
