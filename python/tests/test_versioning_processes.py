"""Deploying new code under runs that are waiting (issue 31, docs/versioning.md), with real
worker processes (``pyconductor worker --code-version ... [--replays ...]``) and a real
PostgreSQL. Handler v1 leaves 100 runs waiting for an event; v2 renames a step and inserts
one (apps/versions_app.py). Every step body records itself in step_runs, so a step that ran
twice or never is counted, not assumed:

- a v2 worker that does not replay v1 takes none of the woken v1 runs; a worker that still
  has v1 finishes them, each step once;
- a v2 worker that replays v1 finishes them through ctx.patched: the old path for the old
  runs (nothing inserted runs, the old name replays), the new path for new runs;
- a v2 without the markers, told it replays v1, fails each v1 run at once with QC211 naming
  the recorded and the asked step, before the inserted step's body runs.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import wait_until
from processes import Spawn, spawner

SHORT = ("--lease", "5", "--heartbeat", "1", "--reap", "0.5", "--poll", "0.5", "--no-scheduler",
         "--concurrency", "16")  # fmt: skip
RUNS = 100


def q(dsn: str, query: str, params: Any = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


@pytest.fixture
def side(db_dsn: str) -> str:
    q(db_dsn, "create table step_runs (task_id bigint not null, step text not null, code text not null,"
              " pid integer not null)")  # fmt: skip
    return db_dsn


@pytest.fixture
def apps(side: str, tmp_path: Path) -> Iterator[dict[str, Spawn]]:
    with (spawner(side, tmp_path, "apps.versions_app:v1", *SHORT, named=False) as v1,
          spawner(side, tmp_path, "apps.versions_app:v2", *SHORT, named=False) as v2,
          spawner(side, tmp_path, "apps.versions_app:v2_unsafe", *SHORT, named=False) as v2_unsafe):  # fmt: skip
        yield {"v1": v1, "v2": v2, "v2_unsafe": v2_unsafe}


def statuses(dsn: str, ids: list[int]) -> dict[str, int]:
    return dict(q(dsn, "select status::text, count(*) from conductor.tasks where id = any(%s) group by 1", (ids,)))


def enqueue(dsn: str, n: int) -> list[int]:
    return [row[0] for row in q(dsn, "select conductor.enqueue('order', jsonb_build_object('n', g), max_attempts => 3)"
                                     " from generate_series(1, %s) g", (n,))]  # fmt: skip


def wait_status(dsn: str, ids: list[int], status: str, timeout: float = 60) -> None:
    wait_until(lambda: statuses(dsn, ids).get(status) == len(ids), timeout=timeout, interval=0.1,
               message=lambda: f"waiting for {len(ids)} {status}: {statuses(dsn, ids)}")  # fmt: skip


def pay(dsn: str, ids: list[int]) -> None:
    q(dsn, "select conductor.emit_event('paid-' || id, '{}') from unnest(%s::bigint[]) id", (ids,))


def ran(dsn: str, ids: list[int]) -> dict[tuple[str, str], int]:
    """(step, code) -> how many times a body ran, over the runs ids."""
    rows = q(dsn, "select step, code, count(*) from step_runs where task_id = any(%s) group by 1, 2", (ids,))
    return {(step, code): n for step, code, n in rows}


def per_run_once(dsn: str, ids: list[int]) -> bool:
    """No step body ran twice for one run."""
    return not q(dsn, "select 1 from step_runs where task_id = any(%s) group by task_id, step having count(*) > 1",
                 (ids,))  # fmt: skip


def started_on_v1(dsn: str, spawn: Spawn) -> list[int]:
    """A v1 worker starts RUNS orders and stops (a deploy) while all wait for their event."""
    worker = spawn("--code-version", "v1")
    ids = enqueue(dsn, RUNS)
    wait_status(dsn, ids, "waiting")
    worker.signal(signal.SIGTERM)
    assert worker.wait(30) == 0, worker.output()[-3000:]
    assert q(dsn, "select count(*) from conductor.tasks where id = any(%s) and code_version = 'v1'", (ids,)) == [(RUNS,)]
    assert ran(dsn, ids) == {("charge", "v1"): RUNS, ("reserve", "v1"): RUNS}
    return ids


def test_v1_runs_wait_for_a_worker_that_still_has_v1(side: str, apps: dict[str, Spawn]) -> None:
    dsn = side
    old = started_on_v1(dsn, apps["v1"])
    # v2 is deployed alone; it cannot replay v1 (no --replays)
    v2 = apps["v2"]("--code-version", "v2")
    new = enqueue(dsn, 10)
    wait_status(dsn, new, "waiting")
    pay(dsn, old + new)
    wait_status(dsn, new, "succeeded")
    # the v2 worker took its own runs after the woken v1 ones stood before them in the queue
    assert statuses(dsn, old) == {"queued": RUNS}, v2.output()[-3000:]
    assert q(dsn, "select count(*) from conductor.attempts a join conductor.tasks t on t.id = a.task_id"
                  " where t.id = any(%s) and a.outcome is distinct from 'suspended'", (old,)) == [(0,)]  # fmt: skip
    assert ran(dsn, new) == {("charge", "v2"): 10, ("fraud_check", "v2"): 10, ("reserve_stock", "v2"): 10,
                             ("ship", "v2"): 10}  # fmt: skip
    # a worker that still has v1 (beside v2) finishes them: every step once, v1's code
    apps["v1"]("--code-version", "v1")
    wait_status(dsn, old, "succeeded")
    assert ran(dsn, old) == {("charge", "v1"): RUNS, ("reserve", "v1"): RUNS, ("ship", "v1"): RUNS}
    assert per_run_once(dsn, old + new)
    assert q(dsn, "select count(*) from conductor.tasks where id = any(%s) and code_version = 'v2'", (new,)) == [(10,)]


def test_v1_runs_resume_on_v2_through_its_patch_markers(side: str, apps: dict[str, Spawn]) -> None:
    dsn = side
    old = started_on_v1(dsn, apps["v1"])
    apps["v2"]("--code-version", "v2", "--replays", "v1")
    new = enqueue(dsn, 10)
    wait_status(dsn, new, "waiting")
    pay(dsn, old + new)
    wait_status(dsn, old + new, "succeeded")
    # the old runs replayed charge and reserve (under its old name), ran nothing inserted, then shipped on v2
    assert ran(dsn, old) == {("charge", "v1"): RUNS, ("reserve", "v1"): RUNS, ("ship", "v2"): RUNS}
    assert ran(dsn, new) == {("charge", "v2"): 10, ("fraud_check", "v2"): 10, ("reserve_stock", "v2"): 10,
                             ("ship", "v2"): 10}  # fmt: skip
    assert per_run_once(dsn, old + new)
    # the markers were checkpointed only where a run took the new path
    assert q(dsn, "select count(*) from conductor.steps where task_id = any(%s) and name like 'patch:%%'",
             (old,)) == [(0,)]  # fmt: skip
    assert q(dsn, "select count(*) from conductor.steps where task_id = any(%s) and name like 'patch:%%'",
             (new,)) == [(20,)]  # fmt: skip
    assert q(dsn, "select distinct code_version from conductor.tasks where id = any(%s)", (old,)) == [("v1",)]


def test_a_handler_changed_without_markers_fails_the_v1_runs_naming_the_step(side: str, apps: dict[str, Spawn]) -> None:
    dsn = side
    old = started_on_v1(dsn, apps["v1"])
    # a mistaken deploy: the changed handler, told it replays v1
    worker = apps["v2_unsafe"]("--code-version", "v2", "--replays", "v1")
    pay(dsn, old)
    wait_status(dsn, old, "failed")
    errors = q(dsn, "select distinct regexp_replace(error, 'task [0-9]+', 'task N') from conductor.tasks"
                    " where id = any(%s)", (old,))  # fmt: skip
    assert len(errors) == 1, errors
    error = errors[0][0]
    assert "ReplayMismatch" in error and "step 2 of the run is 'reserve', the handler asks for 'fraud_check'" in error
    # failed at once (max_attempts 3: not retried), and the inserted step's body never ran
    assert q(dsn, "select max(attempt) from conductor.tasks where id = any(%s)", (old,)) == [(1,)]
    assert q(dsn, "select count(*) from conductor.attempts where task_id = any(%s) and error is not null",
             (old,)) == [(RUNS,)]  # fmt: skip
    assert ran(dsn, old) == {("charge", "v1"): RUNS, ("reserve", "v1"): RUNS}
    assert worker.alive()
