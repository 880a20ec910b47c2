"""pyconductor.aio.AsyncConductor against a real PostgreSQL, with a real Worker
(threads in this process) where a task has to run. Each test drives its
coroutine with ``asyncio.run`` (no pytest plugin)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from helpers import wait_until
from psycopg.pq import TransactionStatus

from pyconductor import Conductor, InvalidArgument, InvalidPayload, NotFound, TaskContext, TaskInfo, Worker
from pyconductor.aio import AsyncConductor

Conn = psycopg.Connection[Any]


@pytest.fixture
def app(db_dsn: str) -> Iterator[Conductor]:
    with Conductor(db_dsn, pool_max=4) as app:

        @app.task("aio.add", queue="math", priority=3, max_attempts=2)
        def add(payload: dict[str, Any]) -> dict[str, Any]:
            return {"sum": payload["a"] + payload["b"]}

        @app.task("aio.approve")
        def approve(payload: dict[str, Any], ctx: TaskContext) -> Any:
            return ctx.wait_for_event(payload["event"])

        yield app


def fast_worker(app: Conductor) -> Worker:
    return Worker(app, queues=["default", "math"], heartbeat_interval=0.2, poll_interval=0.5,
                  reap_interval=30, shutdown_grace=5, run_scheduler=False, concurrency=4)  # fmt: skip


def visible(conn: Conn, ids: list[int]) -> list[int]:
    rows = conn.execute("select id from conductor.tasks where id = any(%s) order by id", (ids,)).fetchall()
    return [int(r[0]) for r in rows]


def test_enqueue_and_enqueue_many_apply_the_registered_defaults(app: Conductor, db_dsn: str) -> None:
    async def main() -> tuple[TaskInfo, list[TaskInfo]]:
        async with AsyncConductor(db_dsn, app=app) as aapp:
            one = await aapp.enqueue("aio.add", {"a": 1, "b": 2})
            many = await aapp.enqueue_many([("aio.add", {"a": 2, "b": 2}), {"kind": "aio.add", "priority": 9},
                                            ("other.kind", {})])  # fmt: skip
            assert await aapp.enqueue_many([]) == []
            return await aapp.get(one), [await aapp.get(i) for i in many]

    one, many = asyncio.run(main())
    assert (one.kind, one.queue, one.priority, one.max_attempts, one.payload) == ("aio.add", "math", 3, 2, {"a": 1, "b": 2})
    assert [(t.queue, t.priority) for t in many] == [("math", 3), ("math", 9), ("default", 0)]
    assert many[0].id < many[1].id < many[2].id


def test_without_an_app_the_database_decides(app: Conductor, db_dsn: str) -> None:
    async def main() -> TaskInfo:
        async with AsyncConductor(db_dsn) as aapp:
            return await aapp.get(await aapp.enqueue("aio.add", {"a": 1, "b": 1}))

    assert asyncio.run(main()).queue == "default"  # no registry, no configure_kind yet


def test_errors_are_mapped(db_dsn: str) -> None:
    async def main() -> None:
        async with AsyncConductor(db_dsn) as aapp:
            with pytest.raises(NotFound):
                await aapp.get(10**12)
            with pytest.raises(InvalidPayload):
                await aapp.enqueue("aio.add", [1])
            with pytest.raises(InvalidArgument):
                await aapp.enqueue("aio.add", {"x": object()})
            with pytest.raises(TypeError):
                await aapp.enqueue("aio.add", {}, colour="blue")  # type: ignore[call-arg]

    asyncio.run(main())


def test_result_waits_for_a_task_a_worker_completes(app: Conductor, db_dsn: str) -> None:
    async def main() -> tuple[TaskInfo, float]:
        async with AsyncConductor(db_dsn, app=app) as aapp:
            task_id = await aapp.enqueue("aio.add", {"a": 20, "b": 22}, run_at="now")
            # nothing runs it yet: result times out
            with pytest.raises(TimeoutError):
                await aapp.result(task_id, timeout=0.3)
            with fast_worker(app):
                started = time.monotonic()
                info = await aapp.result(task_id, timeout=10)
                return info, time.monotonic() - started

    info, took = asyncio.run(main())
    assert info.status == "succeeded" and info.result == {"sum": 42}
    assert took < 5, f"result took {took:.2f}s"


def test_result_of_a_finished_task_returns_at_once(app: Conductor, db_dsn: str) -> None:
    task_id = app.enqueue("aio.add", {"a": 1, "b": 1})
    with fast_worker(app):
        app.result(task_id, timeout=10)

    async def main() -> TaskInfo:
        async with AsyncConductor(db_dsn) as aapp:
            with pytest.raises(NotFound):
                await aapp.result(10**12, timeout=5)
            return await aapp.result(task_id, timeout=0.5)

    assert asyncio.run(main()).result == {"sum": 2}


def test_emit_event_wakes_a_waiting_run(app: Conductor, db_dsn: str, db_conn: Conn) -> None:
    task_id = app.enqueue("aio.approve", {"event": "aio.ok"})

    def waiting() -> bool:
        return app.get(task_id).status == "waiting"

    async def main(worker: Worker) -> TaskInfo:
        async with AsyncConductor(db_dsn, app=app) as aapp:
            await asyncio.to_thread(wait_until, waiting, 10)
            await asyncio.to_thread(wait_until, lambda: worker.running == 0 and worker.held == [], 10)
            assert await aapp.emit_event("aio.ok", {"by": "alice"}) == 1
            return await aapp.result(task_id, timeout=10)

    with fast_worker(app) as worker:
        info = asyncio.run(main(worker))
    assert info.status == "succeeded" and info.result == {"by": "alice"}


def test_conn_commit_and_rollback(app: Conductor, db_dsn: str, db_conn: Conn) -> None:
    async def main() -> tuple[list[int], list[int], int]:
        async with AsyncConductor(db_dsn, app=app) as aapp:
            async with await psycopg.AsyncConnection.connect(db_dsn) as own:
                rolled = [await aapp.enqueue("aio.add", {"a": 0, "b": 0}, conn=own)]
                rolled += await aapp.enqueue_many([("aio.add", {})], conn=own)
                assert (await aapp.get(rolled[0], conn=own)).queue == "math"  # its own transaction sees it
                await own.rollback()

                async with own.cursor() as cur:  # a cursor of the caller's transaction
                    committed = [await aapp.enqueue("aio.add", {"a": 1, "b": 1}, conn=cur)]
                async with own.transaction():  # a savepoint inside it, released
                    committed.append(await aapp.enqueue("aio.add", {}, conn=own))
                    committed += await aapp.enqueue_many([{"kind": "aio.add", "payload": {"n": 2}}], conn=own)
                    await aapp.emit_event("aio.never", conn=own)
                with pytest.raises(InvalidPayload):
                    async with own.transaction():  # a savepoint rolled back by the error
                        dropped = await aapp.enqueue("aio.add", {}, conn=own)
                        await aapp.enqueue("aio.add", "no", conn=own)
                assert own.info.transaction_status == TransactionStatus.INTRANS  # only the savepoint was lost
                assert visible(db_conn, committed) == []
                await own.commit()
            with pytest.raises(TypeError, match="AsyncConnection or AsyncCursor"):
                await aapp.enqueue("aio.add", {}, conn=db_conn)  # type: ignore[arg-type]
            return rolled + [dropped], committed, (await aapp.get(committed[2])).priority

    rolled, committed, priority = asyncio.run(main())
    assert visible(db_conn, rolled) == []
    assert visible(db_conn, committed) == sorted(committed) and priority == 3


def test_close_then_use_opens_a_new_pool(db_dsn: str) -> None:
    async def main() -> None:
        aapp = AsyncConductor(db_dsn)
        first = await aapp.enqueue("aio.add", {})
        await aapp.close()
        assert (await aapp.get(first)).id == first
        await aapp.close()
        await aapp.close()  # idempotent

    asyncio.run(main())
