"""Time limits and stuck handler threads (issue 15).

A task with a ``timeout`` fails as "timed out after N s" at its deadline, its
slot runs the next task at once, and the handler's thread (a thread cannot be
killed) counts as stuck, the worker degraded, until it returns. A cancelled
handler that ignores the cancel gets its slot freed the same way after
``cancel_grace``. With ``exit_on_stuck`` the worker stops and ``run()``
returns 3.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from helpers import wait_until

from pyconductor import Conductor, TaskContext, Worker
from pyconductor.ledger import Ledger
from pyconductor.link import Link
from pyconductor.maintenance import Heartbeat

Conn = psycopg.Connection[Any]  # rows as tuples; Any so the tests index them freely
HEARTBEAT = 0.5


@pytest.fixture
def app(db_dsn: str) -> Iterator[Conductor]:
    with Conductor(db_dsn, pool_max=2) as app:
        yield app


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """What hung handlers wait for; set at the end, so their threads end with the test."""
    event = threading.Event()
    yield event
    event.set()


def fast_worker(app: Conductor, **options: Any) -> Worker:
    defaults: dict[str, Any] = {"heartbeat_interval": HEARTBEAT, "poll_interval": 0.5, "reap_interval": 0.5,
                                "shutdown_grace": 2, "run_scheduler": False, "concurrency": 1}  # fmt: skip
    return Worker(app, **{**defaults, **options})


def attempt_times(conn: Conn, task_id: int) -> list[tuple[Any, ...]]:
    return conn.execute(
        "select outcome, error, extract(epoch from finished_at - claimed_at)::float8 from conductor.attempts"
        " where task_id = %s order by id", (task_id,)).fetchall()  # fmt: skip


def test_a_hung_handler_times_out_and_its_slot_runs_the_next_task(
    app: Conductor, db_conn: Conn, gate: threading.Event
) -> None:
    @app.task("hang", timeout=2)
    def hang(payload: Any) -> None:
        gate.wait()  # ignores ctx: only the gate ends it

    @app.task("after")
    def after(payload: Any) -> str:
        return "ran"

    hung = hang.enqueue()
    nxt = after.enqueue()
    with fast_worker(app) as worker:
        wait_until(lambda: app.get(nxt).status == "succeeded", timeout=2 + HEARTBEAT + 5)
        info = app.get(hung)
        assert (info.status, info.error) == ("failed", "timed out after 2 s")
        ((outcome, error, took),) = attempt_times(db_conn, hung)
        assert (outcome, error) == ("failed", "timed out after 2 s")
        assert 1.9 <= took <= 2 + HEARTBEAT + 1.0, f"timed out after {took:.2f} s"
        assert worker.stuck == 1
        health = worker.health()
        assert (health["status"], health["stuck"], health["in_flight"]) == ("degraded", 1, 0)
        assert worker.stats["timed_out"] == 1
        # a stuck thread holds up nothing else: the heartbeat still goes out
        seen = "select last_seen_at from conductor.workers where id = %s"
        before = db_conn.execute(seen, (worker.worker_id,)).fetchone()
        wait_until(lambda: db_conn.execute(seen, (worker.worker_id,)).fetchone() > before, timeout=3 * HEARTBEAT)
        gate.set()  # the stuck thread returns: its outcome is discarded, it ends
        wait_until(lambda: worker.stuck == 0)
        assert worker.health()["status"] == "ok"
        # the slots are whole again: concurrency 1 still runs the next task
        again = after.enqueue()
        wait_until(lambda: app.get(again).status == "succeeded")
    assert app.get(hung).status == "failed", "the late return changed nothing"


def test_a_timed_out_task_is_retried_per_its_policy(app: Conductor, db_conn: Conn) -> None:
    seen: list[tuple[int, str | None]] = []

    @app.task("slow", timeout=timedelta(milliseconds=500), max_attempts=2, backoff_base=0)
    def slow(payload: Any, ctx: TaskContext) -> str:
        if ctx.attempt == 2:
            return "second time"
        ctx.wait_cancelled(30)  # a cooperative handler: it stops when flagged
        seen.append((ctx.attempt, ctx.cancel_reason))
        return "too late"

    task_id = slow.enqueue()
    with fast_worker(app) as worker:
        wait_until(lambda: app.get(task_id).status == "succeeded", timeout=10)
        wait_until(lambda: worker.stuck == 0)
    assert seen == [(1, "timed_out")]
    assert [(o, e) for o, e, _ in attempt_times(db_conn, task_id)] == [
        ("failed", "timed out after 0.5 s"), ("succeeded", None)]  # fmt: skip
    assert app.get(task_id).result == "second time", "the first attempt's late result was discarded"


def test_a_cancelled_handler_that_ignores_it_frees_its_slot_after_the_grace(
    app: Conductor, gate: threading.Event
) -> None:
    started = threading.Event()

    @app.task("deaf")
    def deaf(payload: Any) -> None:
        started.set()
        gate.wait()

    @app.task("after")
    def after(payload: Any) -> str:
        return "ran"

    deaf_id = deaf.enqueue()
    with fast_worker(app, heartbeat_interval=0.2, cancel_grace=1.0) as worker:
        assert started.wait(10)
        nxt = after.enqueue()
        cancelled_at = time.monotonic()
        assert app.cancel(deaf_id) == 1
        wait_until(lambda: app.get(nxt).status == "succeeded", timeout=10)
        took = time.monotonic() - cancelled_at
        assert 1.0 <= took <= 0.2 + 1.0 + 2.0, f"the slot was freed {took:.2f} s after the cancel"
        assert worker.stuck == 1 and worker.health()["status"] == "degraded"
        gate.set()
        wait_until(lambda: worker.stuck == 0)
    assert app.get(deaf_id).status == "cancelled"


def test_exit_on_stuck_stops_the_worker_with_code_3(app: Conductor, db_conn: Conn, gate: threading.Event) -> None:
    @app.task("hang", timeout=1)
    def hang(payload: Any) -> None:
        gate.wait()

    @app.task("after")
    def after(payload: Any) -> str:
        return "ran"

    hung = hang.enqueue()
    worker = fast_worker(app, exit_on_stuck=True, worker_id="w-exit")
    codes: list[int] = []
    runner = threading.Thread(target=lambda: codes.append(worker.run()))
    runner.start()
    runner.join(timeout=1 + HEARTBEAT + 10)
    assert codes == [3], "run() returned 3 once a handler thread was stuck"
    assert (app.get(hung).status, app.get(hung).error) == ("failed", "timed out after 1 s")
    assert db_conn.execute("select count(*) from conductor.workers where id = 'w-exit'").fetchone() == (0,)
    later = after.enqueue()
    assert app.get(later).status == "queued", "it stopped claiming"


def test_a_heartbeat_answered_timed_out_ends_the_handler(db_dsn: str, db_conn: Conn) -> None:
    """The database's deadline may come first (the watchdog's is a hair later, or
    reap() failed the attempt): the heartbeat's answer ends it the same way."""
    db_conn.execute("select conductor.enqueue('k', timeout => '0.2 s')")
    (attempt_id,) = db_conn.execute(
        "select attempt_id from conductor.claim(worker_id => 'w', max_tasks => 1)").fetchone()  # fmt: skip
    time.sleep(0.3)  # past the deadline in the database's clock
    ledger = Ledger(1)
    ledger.held[attempt_id] = object()  # type: ignore[assignment]
    timed_out: list[int] = []
    link = Link(db_dsn, "heartbeat", "w")
    beat = Heartbeat(ledger, link, threading.Event(), lease=timedelta(seconds=60), interval=60,
                     on_lost=lambda ctx, state: None, on_timed_out=timed_out.append)  # fmt: skip
    try:
        rows = beat.beat()
    finally:
        link.close()
    assert [(r["attempt_id"], r["state"]) for r in rows] == [(attempt_id, "timed_out")]
    assert timed_out == [attempt_id]
    assert attempt_id in ledger.held, "held until the failure is reported"
