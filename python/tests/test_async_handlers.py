"""``async def`` handlers (issue 16): run by the worker on one event loop, each
holding one slot of its concurrency, against a real PostgreSQL.

They run concurrently on the loop's one thread; their outcomes go the way a
thread handler's do (results, failures with traceback, RetryLater); at the
deadline the asyncio task is really cancelled, so a timed-out or cancelled
async handler is never stuck; sync and async kinds share one worker.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest
from helpers import wait_until

from pyconductor import Conductor, RetryLater, TaskContext, Worker

Conn = psycopg.Connection[Any]


@pytest.fixture
def app(db_dsn: str) -> Iterator[Conductor]:
    with Conductor(db_dsn, pool_max=2) as app:
        yield app


def fast_worker(app: Conductor, **options: Any) -> Worker:
    defaults: dict[str, Any] = {"heartbeat_interval": 0.2, "poll_interval": 0.5, "reap_interval": 0.5,
                                "shutdown_grace": 5, "run_scheduler": False}  # fmt: skip
    return Worker(app, **{**defaults, **options})


def finished(app: Conductor, *ids: int) -> bool:
    return all(app.get(i).finished for i in ids)


def test_fifty_async_tasks_run_at_once_on_one_loop(app: Conductor) -> None:
    in_flight = 0
    peak = 0
    threads: set[int] = set()

    @app.task("nap")
    async def nap(payload: dict[str, int]) -> dict[str, int]:
        nonlocal in_flight, peak
        threads.add(threading.get_ident())
        in_flight += 1  # one thread: no lock needed
        peak = max(peak, in_flight)
        await asyncio.sleep(0.2)
        in_flight -= 1
        return {"n": payload["n"]}

    ids = [nap.enqueue({"n": n}) for n in range(50)]
    with fast_worker(app, concurrency=50) as worker:
        started = time.monotonic()
        wait_until(lambda: finished(app, *ids), timeout=30, interval=0.02)
        took = time.monotonic() - started
        wait_until(lambda: worker.stats["succeeded"] == 50)  # counted after the commit the test saw
        assert worker.running == 0 and worker.stuck == 0
    assert took < 3.0, f"50 x 0.2 s took {took:.2f} s: they did not run concurrently (serial: 10 s)"
    assert peak > 10, f"at most {peak} ran at once"
    assert len(threads) == 1, "they all ran on the one event loop thread"
    assert [app.get(i).result for i in ids] == [{"n": n} for n in range(50)]


def test_an_async_task_holds_one_slot_of_the_concurrency(app: Conductor) -> None:
    in_flight = 0
    peak = 0

    @app.task("nap")
    async def nap(payload: Any) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.05)
        in_flight -= 1

    ids = [nap.enqueue() for _ in range(12)]
    with fast_worker(app, concurrency=3) as worker:
        wait_until(lambda: finished(app, *ids), timeout=30)
        wait_until(lambda: worker.stats["succeeded"] == 12)  # counted after the commit the test saw
    assert peak == 3, f"concurrency 3, yet {peak} ran at once"


def test_an_async_handler_that_raises_fails_with_its_traceback_and_retry_later_works(app: Conductor) -> None:
    asked = datetime.now(timezone.utc) + timedelta(hours=2)

    @app.task("boom", max_attempts=1)
    async def boom(payload: Any, ctx: TaskContext) -> None:
        await asyncio.sleep(0)
        raise ValueError(f"bad payload in task {ctx.task_id}")

    @app.task("limited", max_attempts=3)
    async def limited(payload: Any) -> None:
        await asyncio.sleep(0)
        raise RetryLater("the API said 429", at=asked)

    @app.task("not_json")
    async def not_json(payload: Any) -> object:
        return object()

    failed = boom.enqueue()
    retried = limited.enqueue()
    bad = not_json.enqueue()
    with fast_worker(app, concurrency=4) as worker:
        wait_until(lambda: finished(app, failed, bad) and app.get(retried).attempts
                   and app.get(retried).status == "queued")  # fmt: skip
        assert worker.stuck == 0
    info = app.get(failed)
    assert (info.status, info.error) == ("failed", f"ValueError: bad payload in task {failed}")
    tb = info.attempts[0].traceback or ""
    assert "Traceback" in tb and "in boom" in tb and "ValueError: bad payload" in tb
    info = app.get(retried)
    assert info.attempts[0].error == "RetryLater: the API said 429"
    assert abs((info.run_at - asked).total_seconds()) < 0.01, "the retry is due when the handler asked"
    assert app.get(bad).status == "failed" and "not JSON-serialisable" in (app.get(bad).error or "")


def test_an_async_handler_past_its_timeout_is_cancelled_and_never_stuck(app: Conductor) -> None:
    cancelled = threading.Event()

    @app.task("forever", timeout=1, max_attempts=1)
    async def forever(payload: Any) -> None:
        try:
            await asyncio.Event().wait()  # nothing ever sets it
        except asyncio.CancelledError:
            cancelled.set()
            raise

    @app.task("after")
    async def after(payload: Any) -> str:
        return "ran"

    hung = forever.enqueue()
    with fast_worker(app, concurrency=1, cancel_grace=1.0) as worker:
        started = time.monotonic()
        wait_until(lambda: finished(app, hung), timeout=10)
        assert cancelled.wait(5), "the asyncio task was cancelled"
        info = app.get(hung)
        assert (info.status, info.error) == ("failed", "timed out after 1 s")
        assert time.monotonic() - started < 5
        nxt = after.enqueue()  # concurrency 1: its slot is free again
        wait_until(lambda: finished(app, nxt), timeout=10)
        assert app.get(nxt).result == "ran"
        # it ended, so its slot was never freed as stuck (and never can be now)
        wait_until(lambda: not worker.ledger.running)
        assert worker.stuck == 0 and worker.health()["status"] == "ok"
        assert worker.stats["timed_out"] == 1


def test_an_async_handler_that_ignores_its_cancel_is_stuck_after_the_grace(app: Conductor) -> None:
    release = threading.Event()

    @app.task("deaf", timeout=1, max_attempts=1)
    async def deaf(payload: Any) -> None:
        while not release.is_set():
            try:
                await asyncio.sleep(0.05)
            except asyncio.CancelledError:
                pass  # ignores it

    @app.task("after")
    async def after(payload: Any) -> str:
        return "ran"

    hung = deaf.enqueue()
    try:
        with fast_worker(app, concurrency=1, cancel_grace=0.5) as worker:
            wait_until(lambda: app.get(hung).error == "timed out after 1 s", timeout=10)
            wait_until(lambda: worker.stuck == 1, timeout=5)
            nxt = after.enqueue()  # its slot was freed: the next task runs
            wait_until(lambda: finished(app, nxt), timeout=10)
            release.set()
            wait_until(lambda: worker.stuck == 0, timeout=5)
    finally:
        release.set()


def test_a_cancelled_async_task_has_its_asyncio_task_cancelled(app: Conductor) -> None:
    started = threading.Event()
    cancelled = threading.Event()
    seen: list[str | None] = []

    @app.task("waits")
    async def waits(payload: Any, ctx: TaskContext) -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            seen.append(ctx.cancel_reason)
            cancelled.set()
            raise

    task_id = waits.enqueue()
    with fast_worker(app, concurrency=2) as worker:
        assert started.wait(10)
        assert app.cancel(task_id) == 1
        assert cancelled.wait(10)
        wait_until(lambda: worker.running == 0 and not worker.held)
        assert worker.stuck == 0 and worker.stats["discarded"] == 1
    assert seen == ["cancelled"]
    assert app.get(task_id).status == "cancelled"


def test_sync_and_async_kinds_in_one_worker(app: Conductor) -> None:
    where: dict[str, set[str]] = {"sync": set(), "async": set()}
    outcomes: list[tuple[str, str]] = []

    @app.task("sync.add")
    def add(payload: dict[str, int]) -> int:
        where["sync"].add(threading.current_thread().name)
        return payload["a"] + payload["b"]

    @app.task("async.mul")
    async def mul(payload: dict[str, int], ctx: TaskContext) -> int:
        where["async"].add(threading.current_thread().name)
        # a durable step is a synchronous call: in a thread, not on the loop
        doubled = await asyncio.to_thread(ctx.step, "double", lambda: payload["a"] * 2)
        await asyncio.sleep(0.01)
        return doubled * payload["b"]

    sums = [add.enqueue({"a": n, "b": 1}) for n in range(10)]
    products = [mul.enqueue({"a": n, "b": 3}) for n in range(10)]
    worker = fast_worker(app, concurrency=4)
    worker.outcome_listeners.append(lambda ctx, outcome, ms: outcomes.append((ctx.kind, outcome)))
    with worker:
        wait_until(lambda: finished(app, *sums, *products), timeout=30)
        wait_until(lambda: worker.stats["succeeded"] == 20)  # counted after the commit the test saw
    assert [app.get(i).result for i in sums] == [n + 1 for n in range(10)]
    assert [app.get(i).result for i in products] == [n * 6 for n in range(10)]
    assert where["async"] == {"pyconductor-loop"}
    assert all(name.startswith("pyconductor-task_") for name in where["sync"])
    assert sorted(outcomes) == sorted([("sync.add", "succeeded")] * 10 + [("async.mul", "succeeded")] * 10)


def test_stop_gives_async_tasks_the_grace_then_cancels_and_releases_them(app: Conductor) -> None:
    started = threading.Event()
    cancelled: list[str | None] = []

    @app.task("quick")
    async def quick(payload: Any) -> str:
        started.set()
        await asyncio.sleep(0.3)
        return "done"

    @app.task("slow")
    async def slow(payload: Any, ctx: TaskContext) -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(ctx.cancel_reason)
            raise

    done = quick.enqueue()
    held = slow.enqueue()
    worker = fast_worker(app, concurrency=2).start()
    try:
        assert started.wait(10)
        wait_until(lambda: worker.running == 2)
    finally:
        worker.stop(grace=1.0)
    assert app.get(done).result == "done", "the grace let it finish"
    assert cancelled == ["released"]
    assert app.get(held).status == "queued", "released, to run again"
    assert worker.abandoned == 1 and worker.stuck == 0
