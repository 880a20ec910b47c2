"""Exactly-once effects under kill -9 (issue 31, "Done means"), for the Python and the Node worker.

Real worker processes (``apps.txchaos_app``, or the Node worker with
``apps/txchaos.js``) run tasks whose handler writes a
row to the application's table ``effects`` and completes the task in the same
transaction (``ctx.transaction()`` + ``ctx.complete_in``). A loop keeps
``WORKERS`` of them running and kills each with SIGKILL at a random moment of
its life, starting a new one in its place, while the queue is kept fed; once
enough kills happened, the enqueueing stops, one last worker finishes what the
dead ones held (after their leases ran out), and the test counts in the
database: every task succeeded, and each has exactly one effect row, written
by the attempt that completed it. ``effects`` has no unique key: nothing but
the shared transaction keeps a second row out.

The default run kills ``KILLS`` (hundreds of) times; ``CONDUCTOR_SLOW_TESTS=1``
runs ``KILLS_SLOW`` (thousands; minutes). The counts are printed (``-s``).
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import REPO, wait_until
from lifecycle.runner import NODE_DIR, node_problem
from processes import TESTS, ChildProcess

SHORT = ("--lease", "2", "--heartbeat", "0.5", "--reap", "0.5", "--poll", "0.5", "--concurrency", "4")
COMMANDS = {  # the worker of each language running the 'effect' kind, and where it runs
    "python": ([sys.executable, "-m", "pyconductor", "worker", "--app", "apps.txchaos_app:app", "--log-level", "INFO",
                *SHORT], TESTS),
    "node": (["node", str(NODE_DIR / "main.js"), "--handlers", str(TESTS / "apps" / "txchaos.js"), *SHORT], REPO),
}  # fmt: skip
WORKERS = 4  # killed and restarted at once
KILLS = 250
KILLS_SLOW = 2500
LIFETIME = (0.4, 1.4)  # seconds a worker lives before its kill (it starts in about 0.5 s)
DEPTH = 40  # the queue is topped up to this many ready tasks


def q(dsn: str, query: str, params: Any = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


@pytest.fixture(params=["python", "node"])
def spawn(db_dsn: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[[], ChildProcess]]:
    """``spawn()`` starts a worker of the language (python, node); all are killed at the end."""
    if request.param == "node" and (problem := node_problem()):
        pytest.fail(problem)
    q(db_dsn, "create table effects (task_id bigint not null, attempt_id bigint not null)")
    q(db_dsn, "create index on effects (task_id)")
    # kills are recoveries: let no task, and no run, end dead or failed for them
    q(db_dsn, "update conductor.settings set max_run_recoveries = 1000000")
    command, cwd = COMMANDS[request.param]
    env = {**os.environ, "CONDUCTOR_DSN": db_dsn, "PYTHONUNBUFFERED": "1"}
    procs: list[ChildProcess] = []

    def start() -> ChildProcess:
        procs.append(ChildProcess(command, env=env, cwd=cwd, log=tmp_path / f"worker{len(procs)}.log"))
        return procs[-1]

    try:
        yield start
    finally:
        for proc in procs:
            proc.close()


def top_up(dsn: str) -> int:
    ready = q(dsn, "select count(*) from conductor.tasks where kind = 'effect' and status = 'queued'")[0][0]
    missing = max(0, DEPTH - int(ready))
    if missing:
        q(dsn, "select conductor.enqueue(kind => 'effect', payload => '{\"pause_ms\": 20}', max_recoveries => 1000000)"
               " from generate_series(1, %s)", (missing,))  # fmt: skip
    return missing


@pytest.mark.parametrize("kills", [
    pytest.param(KILLS, id="hundreds", marks=pytest.mark.timeout(600)),
    pytest.param(KILLS_SLOW, id="thousands", marks=[pytest.mark.timeout(1800), pytest.mark.skipif(
        not os.environ.get("CONDUCTOR_SLOW_TESTS"), reason="minutes: set CONDUCTOR_SLOW_TESTS=1")]),
])  # fmt: skip
def test_every_effect_exactly_once_under_kill_9(db_dsn: str, spawn: Callable[[], ChildProcess], kills: int) -> None:
    rng = random.Random()
    started = time.monotonic()
    workers: list[tuple[ChildProcess, float]] = []
    done = 0
    top_up(db_dsn)
    while done < kills:
        while len(workers) < WORKERS:
            workers.append((spawn(), time.monotonic() + rng.uniform(*LIFETIME)))
        due = min(at for _, at in workers)
        time.sleep(max(0.0, due - time.monotonic()))  # the kill's random moment (chosen above), not a wait
        for proc, at in [w for w in workers if w[1] <= time.monotonic()]:
            proc.kill9()
            proc.close()
            workers.remove((proc, at))
            done += 1
        top_up(db_dsn)
    for proc, _ in workers:
        proc.kill9()
        proc.close()
        done += 1
    killed_in = time.monotonic() - started

    last = spawn()
    total = q(db_dsn, "select count(*) from conductor.tasks where kind = 'effect'")[0][0]
    wait_until(lambda: q(db_dsn, "select count(*) from conductor.tasks where kind = 'effect' and status = 'succeeded'")
               [0][0] == total, timeout=120, interval=0.2,
               message=lambda: f"{q(db_dsn, 'select status::text, count(*) from conductor.tasks group by 1')}\n"
                               f"{last.output()[-3000:]}")  # fmt: skip

    lost = q(db_dsn, "select count(*) from conductor.attempts a join conductor.tasks t on t.id = a.task_id "
                     "where t.kind = 'effect' and a.outcome = 'lost'")[0][0]  # fmt: skip
    # rows inserted by transactions that never committed: kills between a write and its commit
    # (the statistics count every insert; they reach the view within a second or so)
    committed = q(db_dsn, "select count(*) from effects")[0][0]
    rolled_back = wait_until(lambda: q(db_dsn, "select n_tup_ins from pg_stat_user_tables where relname = 'effects'")
                             [0][0] - committed, timeout=15, interval=0.2,
                             message="no kill landed between a handler's write and its commit")  # fmt: skip
    print(
        f"\n{done} kill -9 in {killed_in:.0f} s; {total} tasks, {lost} attempts lost to a kill, "
        f"{rolled_back} effect rows rolled back by a kill between the write and the commit; "
        f"every task succeeded with one effect row"
    )
    assert lost > 0, "no kill landed while a worker held a task: the test proved nothing"
    wrong = q(
        db_dsn,
        """
        select t.id, count(e.task_id) from conductor.tasks t left join effects e on e.task_id = t.id
         where t.kind = 'effect' group by t.id having count(e.task_id) <> 1""",
    )
    assert wrong == [], f"tasks without exactly one effect row (task, rows): {wrong[:20]}"
    foreign = q(
        db_dsn,
        """
        select t.id from conductor.tasks t join effects e on e.task_id = t.id
         where t.kind = 'effect'
           and (e.attempt_id <> t.attempt_id or (t.result->>'attempt_id')::bigint <> t.attempt_id)""",
    )
    assert foreign == [], f"effect rows not written by the attempt that completed their task: {foreign[:20]}"
    assert "Traceback" not in last.output() and "TypeError" not in last.output(), last.output()[-3000:]
