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
  the recorded and the asked step, before the inserted step's body runs;
- the Node worker (workers/node, versions_scenario.js) keeps the same rule on runs a Python
  v1 worker started: it claims them only when it replays v1, resumes them through its
  markers, and fails the unmarked change with the same error.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import wait_until
from lifecycle.runner import NODE_DIR, node_problem
from processes import ChildProcess, Spawn, spawner

SHORT = ("--lease", "5", "--heartbeat", "1", "--reap", "0.5", "--poll", "0.5", "--no-scheduler",
         "--concurrency", "16")  # fmt: skip
RUNS = 100
# what both workers write when a v1 run meets the unmarked v2 (docs/protocol.md, "Replaying a run")
MISMATCH = ("ReplayMismatch: replay mismatch in task N (order): step 2 of the run is 'reserve', the handler asks for "
            "'fraud_check' (recorded under code version v1); the handler changed under the run: keep the old path "
            "behind ctx.patched(), or let a worker that still runs the old code finish it")  # fmt: skip


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


def started_on_v1(dsn: str, spawn: Spawn, runs: int = RUNS) -> list[int]:
    """A v1 worker starts ``runs`` orders and stops (a deploy) while all wait for their event."""
    worker = spawn("--code-version", "v1")
    ids = enqueue(dsn, runs)
    wait_status(dsn, ids, "waiting")
    worker.signal(signal.SIGTERM)
    assert worker.wait(30) == 0, worker.output()[-3000:]
    assert q(dsn, "select count(*) from conductor.tasks where id = any(%s) and code_version = 'v1'", (ids,)) == [(runs,)]
    assert ran(dsn, ids) == {("charge", "v1"): runs, ("reserve", "v1"): runs}
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
    assert errors == [(MISMATCH,)], errors
    # failed at once (max_attempts 3: not retried), and the inserted step's body never ran
    assert q(dsn, "select max(attempt) from conductor.tasks where id = any(%s)", (old,)) == [(1,)]
    assert q(dsn, "select count(*) from conductor.attempts where task_id = any(%s) and error is not null",
             (old,)) == [(RUNS,)]  # fmt: skip
    assert ran(dsn, old) == {("charge", "v1"): RUNS, ("reserve", "v1"): RUNS}
    assert worker.alive()


def node_worker(dsn: str, log: Path, code: str, *args: str) -> ChildProcess:
    return ChildProcess(["node", str(NODE_DIR / "main.js"), "--handlers", str(NODE_DIR / "versions_scenario.js"),
                         "--lease", "5", "--poll", "0.5", "--reap", "0.5", *args],
                        env={**os.environ, "CONDUCTOR_DSN": dsn, "CONDUCTOR_TEST_CODE": code}, cwd=NODE_DIR,
                        log=log)  # fmt: skip


def test_the_node_worker_keeps_the_same_replay_rule(side: str, apps: dict[str, Spawn], tmp_path: Path) -> None:
    if problem := node_problem():
        pytest.fail(problem)  # as the lifecycle scenario: a missing Node fails, it does not skip
    dsn = side
    runs = 20
    # a Node worker that does not replay v1 leaves the Python v1 runs alone
    resumed = started_on_v1(dsn, apps["v1"], runs)
    node = node_worker(dsn, tmp_path / "node-v2-only.log", "v2", "--code-version", "v2")
    fresh = enqueue(dsn, 5)
    wait_status(dsn, fresh, "waiting")
    pay(dsn, resumed + fresh)
    wait_status(dsn, fresh, "succeeded")
    assert statuses(dsn, resumed) == {"queued": runs}, node.output()[-3000:]
    node.signal(signal.SIGTERM)
    assert node.wait(30) == 0, node.output()[-3000:]
    # one that replays v1 resumes them through its markers, as the Python v2 does
    node = node_worker(dsn, tmp_path / "node-v2.log", "v2", "--code-version", "v2", "--replays", "v1")
    wait_status(dsn, resumed, "succeeded")
    assert ran(dsn, resumed) == {("charge", "v1"): runs, ("reserve", "v1"): runs, ("ship", "node-v2"): runs}
    assert ran(dsn, fresh) == {("charge", "node-v2"): 5, ("fraud_check", "node-v2"): 5,
                               ("reserve_stock", "node-v2"): 5, ("ship", "node-v2"): 5}  # fmt: skip
    assert per_run_once(dsn, resumed + fresh)
    node.signal(signal.SIGTERM)
    assert node.wait(30) == 0, node.output()[-3000:]
    # the unmarked change fails them with the message the Python worker writes
    broken = started_on_v1(dsn, apps["v1"], runs)
    node = node_worker(dsn, tmp_path / "node-v2-unsafe.log", "v2_unsafe", "--code-version", "v2", "--replays", "v1")
    pay(dsn, broken)
    wait_status(dsn, broken, "failed")
    errors = q(dsn, "select distinct regexp_replace(error, 'task [0-9]+', 'task N') from conductor.tasks"
                    " where id = any(%s)", (broken,))  # fmt: skip
    assert errors == [(MISMATCH,)], errors
    assert ran(dsn, broken) == {("charge", "v1"): runs, ("reserve", "v1"): runs}
    assert node.alive()


def test_a_worker_refuses_to_start_with_a_code_version_the_engine_refuses(side: str, apps: dict[str, Spawn]) -> None:
    worker = apps["v1"]("--code-version", "v1<b>", "--replays", "v0")
    assert worker.wait(30) != 0
    assert "invalid code_versions '{v1<b>,v0}'" in worker.output(), worker.output()[-3000:]
    assert q(side, "select count(*) from conductor.attempts") == [(0,)]
