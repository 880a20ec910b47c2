"""The executor's local buffer (issue 26): tasks claimed while every slot is
busy wait in the worker, held, and start the moment a slot frees up.

Each test fills the one slot with a task that blocks on an event, after a
quick task has given the executor a mean duration (before any handler ended
it buffers nothing), then enqueues quick tasks that only the buffer can take.
What it checks: they start from the buffer when the slot frees; one that
waited too long, and the whole buffer at stop, go back to the queue without
counting an attempt; a cancel takes one out; async handlers are fed the same
way; a claim that crosses the stop goes back; ``prefetch=0`` buffers nothing.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from helpers import wait_until
from psycopg.rows import dict_row

from pyconductor import Conductor, TaskContext, Worker, executor, queries

Conn = psycopg.Connection[Any]


@pytest.fixture
def app(db_dsn: str) -> Iterator[Conductor]:
    with Conductor(db_dsn, pool_max=2) as app:
        yield app


def one_slot_worker(app: Conductor, **options: Any) -> Worker:
    defaults: dict[str, Any] = {"concurrency": 1, "prefetch": 4, "heartbeat_interval": 0.2, "poll_interval": 0.05,
                                "reap_interval": 30, "shutdown_grace": 10, "run_scheduler": False}  # fmt: skip
    return Worker(app, **{**defaults, **options})


def statuses(conn: Conn, ids: list[int]) -> list[str]:
    rows = conn.execute("select status::text from conductor.tasks where id = any(%s) order by id", (ids,))
    return [str(r[0]) for r in rows.fetchall()]


def outcomes(conn: Conn, ids: list[int]) -> list[str | None]:
    rows = conn.execute("select outcome from conductor.attempts where task_id = any(%s) order by id", (ids,))
    return [r[0] for r in rows.fetchall()]


class Blocked:
    """A quick kind and a kind that holds its slot until ``gate`` is set."""

    def __init__(self, app: Conductor, *, asynchronous: bool = False) -> None:
        self.gate = threading.Event()
        self.started: list[int] = []
        gate, started = self.gate, self.started
        if asynchronous:

            @app.task("quick")
            async def quick(payload: Any) -> None:
                started.append(payload["n"])

            @app.task("block")
            async def block(payload: Any) -> None:
                await asyncio.to_thread(gate.wait, 30)

        else:

            @app.task("quick")
            def quick_sync(payload: Any) -> None:
                started.append(payload["n"])

            @app.task("block")
            def block_sync(payload: Any) -> None:
                gate.wait(30)

    def fill(self, app: Conductor, worker: Worker, conn: Conn) -> int:
        """Give the executor a mean duration, then take the one slot; the blocking task's id."""
        seed = app.enqueue("quick", {"n": 0})
        wait_until(lambda: statuses(conn, [seed]) == ["succeeded"])
        blocker = app.enqueue("block", {})
        wait_until(lambda: worker.running == 1 and statuses(conn, [blocker]) == ["running"])
        return blocker


def test_a_freed_slot_starts_the_buffered_tasks(app: Conductor, db_conn: Conn) -> None:
    blocked = Blocked(app)
    worker = one_slot_worker(app)
    with worker:
        blocker = blocked.fill(app, worker, db_conn)
        ids = app.enqueue_many([("quick", {"n": n}) for n in (1, 2, 3)])
        # claimed and held (the database says running), waiting in the worker for the slot
        wait_until(lambda: worker.ledger.buffered == 3, message=lambda: f"buffered {worker.ledger.buffered}")
        assert statuses(db_conn, ids) == ["running"] * 3
        assert blocked.started == [0], "nothing starts while the slot is busy"
        blocked.gate.set()
        wait_until(lambda: statuses(db_conn, [blocker, *ids]) == ["succeeded"] * 4)
    assert blocked.started == [0, 1, 2, 3], "started from the buffer in claim order"
    assert outcomes(db_conn, ids) == ["succeeded"] * 3, "one attempt each: the buffer kept their leases"


def test_a_task_buffered_too_long_goes_back_without_counting_an_attempt(
    app: Conductor, db_conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(executor, "BUFFER_MAX_WAIT", 0.3)
    blocked = Blocked(app)
    worker = one_slot_worker(app)
    with worker:
        blocker = blocked.fill(app, worker, db_conn)
        ids = app.enqueue_many([("quick", {"n": n}) for n in (1, 2)])
        # each handed back, uncounted; a claim already in flight at the hand-back may take one
        # again (on a loaded machine), so it comes back a second time: every outcome is a release
        def handed_back() -> bool:
            released = outcomes(db_conn, ids)
            return statuses(db_conn, ids) == ["queued"] * 2 and len(released) >= 2 and set(released) == {"released"}

        wait_until(handed_back, message=lambda: f"{outcomes(db_conn, ids)}, {statuses(db_conn, ids)}")
        assert {r[0] for r in db_conn.execute("select task_id from conductor.attempts where task_id = any(%s)",
                                              (ids,)).fetchall()} == set(ids)  # fmt: skip
        attempts = db_conn.execute("select attempt from conductor.tasks where id = any(%s)", (ids,)).fetchall()
        assert attempts == [(0,), (0,)], "a hand-back is not an attempt"
        # the mean is now taken to be the wait: the buffer does not claim them again at once
        assert worker.ledger.prefetch == 0
        assert worker.ledger.buffered == 0
        blocked.gate.set()
        wait_until(lambda: statuses(db_conn, [blocker, *ids]) == ["succeeded"] * 3)
    assert sorted(blocked.started) == [0, 1, 2]


def test_stop_hands_the_buffer_back_at_once(app: Conductor, db_conn: Conn) -> None:
    blocked = Blocked(app)
    worker = one_slot_worker(app)
    worker.start()
    try:
        blocker = blocked.fill(app, worker, db_conn)
        ids = app.enqueue_many([("quick", {"n": n}) for n in (1, 2)])
        wait_until(lambda: worker.ledger.buffered == 2)
        stopping = threading.Thread(target=worker.stop, args=(10,))
        stopping.start()
        # back in the queue while the running task still has its grace
        wait_until(lambda: statuses(db_conn, ids) == ["queued"] * 2)
        assert statuses(db_conn, [blocker]) == ["running"]
        released = outcomes(db_conn, ids)  # a claim that crossed the stop goes back too (its own test below)
        assert len(released) >= 2 and set(released) == {"released"}, released
    finally:
        blocked.gate.set()
    stopping.join(15)
    assert not stopping.is_alive()
    assert statuses(db_conn, [blocker]) == ["succeeded"], "the running task finished within the grace"
    assert blocked.started == [0], "nothing started from the buffer while stopping"


def test_a_claim_that_crosses_the_stop_goes_back_when_no_slot_is_free(
    app: Conductor, db_conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The producer hands back a claim that returns after the stop; one whose rows
    # reach the executor just after stop_feeding (the stop came between the two)
    # must not wait in a buffer nothing feeds any more. Staged with a real claim
    # made for the worker, submitted as the producer would. (The buffer's own
    # time limit is set far off: at once means it was never buffered.)
    monkeypatch.setattr(executor, "BUFFER_MAX_WAIT", 60.0)
    blocked = Blocked(app)
    worker = one_slot_worker(app)
    worker.start()
    try:
        blocked.fill(app, worker, db_conn)
        stopping = threading.Thread(target=worker.stop, args=(10,))
        stopping.start()
        wait_until(lambda: worker.producer.stopping.is_set())
        late = app.enqueue("quick", {"n": 9})
        with psycopg.connect(app.dsn, autocommit=True, row_factory=dict_row) as conn:
            row = conn.execute(queries.CLAIM, {"worker_id": worker.worker_id, "queues": None, "max_tasks": 1,
                                               "lease": timedelta(seconds=60), "kinds": None}).fetchone()  # fmt: skip
        assert row is not None and row["task_id"] == late
        assert worker.executor is not None
        worker.executor.submit(TaskContext.from_claim(row, worker.worker_id), None, time.monotonic())
        wait_until(lambda: outcomes(db_conn, [late]) == ["released"], timeout=5,
                   message=lambda: str(outcomes(db_conn, [late])))  # fmt: skip
        assert statuses(db_conn, [late]) == ["queued"]
    finally:
        blocked.gate.set()
    stopping.join(15)
    assert blocked.started == [0], "the late task never started"


def test_a_cancel_takes_a_task_out_of_the_buffer(app: Conductor, db_conn: Conn) -> None:
    blocked = Blocked(app)
    worker = one_slot_worker(app)
    with worker:
        blocker = blocked.fill(app, worker, db_conn)
        ids = app.enqueue_many([("quick", {"n": n}) for n in (1, 2)])
        wait_until(lambda: worker.ledger.buffered == 2)
        assert app.cancel(ids[0])
        # the heartbeat hears it and drops the task from the buffer
        wait_until(lambda: worker.ledger.buffered == 1, message=lambda: f"buffered {worker.ledger.buffered}")
        blocked.gate.set()
        wait_until(lambda: statuses(db_conn, [blocker, ids[1]]) == ["succeeded"] * 2)
    assert statuses(db_conn, ids[:1]) == ["cancelled"]
    assert blocked.started == [0, 2], "the cancelled task never started"


def test_async_handlers_are_fed_from_the_buffer(app: Conductor, db_conn: Conn) -> None:
    blocked = Blocked(app, asynchronous=True)
    worker = one_slot_worker(app)
    with worker:
        blocker = blocked.fill(app, worker, db_conn)
        ids = app.enqueue_many([("quick", {"n": n}) for n in (1, 2, 3)])
        wait_until(lambda: worker.ledger.buffered == 3)
        assert blocked.started == [0]
        blocked.gate.set()
        wait_until(lambda: statuses(db_conn, [blocker, *ids]) == ["succeeded"] * 4)
    assert blocked.started == [0, 1, 2, 3]


def test_prefetch_zero_claims_only_into_free_slots(app: Conductor, db_conn: Conn) -> None:
    blocked = Blocked(app)
    worker = one_slot_worker(app, prefetch=0)
    with worker:
        blocker = blocked.fill(app, worker, db_conn)
        ids = app.enqueue_many([("quick", {"n": n}) for n in (1, 2)])
        # absence of a claim: ten poll intervals, each a chance to claim
        threading.Event().wait(0.5)
        assert statuses(db_conn, ids) == ["queued"] * 2
        assert worker.ledger.buffered == 0
        blocked.gate.set()
        wait_until(lambda: statuses(db_conn, [blocker, *ids]) == ["succeeded"] * 3)


def test_prefetch_must_not_be_negative(app: Conductor) -> None:
    with pytest.raises(ValueError, match="prefetch must be 0 or more, got -1"):
        one_slot_worker(app, prefetch=-1)
