"""Expiry before start (issue 30): a task no worker starts within ``expires_in`` of
its due time ends ``expired``, and whoever waits for it hears so.

Real workers, no sleeps: the reaper of a worker serving another queue ends the
task (reap is global), the client's result() waits on the completion
notification; the options reach the database from the sync and async clients
and from a kind's registration.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import timedelta, timezone
from typing import Any

import psycopg
import pytest
from helpers import wait_until

from pyconductor import Conductor, Worker
from pyconductor.aio import AsyncConductor


@pytest.fixture
def app(db_dsn: str) -> Iterator[Conductor]:
    with Conductor(db_dsn, pool_max=2) as app:
        yield app


def elsewhere_worker(app: Conductor) -> Worker:
    """A worker of another queue: it never claims the task, but its reaper runs."""
    return Worker(app, queues=["elsewhere"], concurrency=1, heartbeat_interval=0.5, poll_interval=0.5,
                  reap_interval=0.5, shutdown_grace=2, run_scheduler=False)  # fmt: skip


def test_a_task_nobody_starts_in_time_ends_expired_and_its_waiter_hears_why(app: Conductor, db_dsn: str) -> None:
    @app.task("elsewhere.noop")
    def noop(payload: Any) -> None:
        return None

    task_id = app.enqueue("nobody.serves.this", {"n": 1}, queue="unserved", expires_in=timedelta(seconds=1))
    with psycopg.connect(db_dsn) as conn:
        (deadline,) = conn.execute("select expires_at from conductor.tasks where id = %s", (task_id,)).fetchone()
    started = time.monotonic()
    with elsewhere_worker(app):
        info = app.result(task_id, timeout=20)  # woken by the completion notification
    assert info.status == "expired"
    assert info.started_at is None and info.attempts == []
    utc = deadline.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert info.error == f"expired: not started by its deadline {utc} (expires_in 00:00:01 after it was due)"
    assert time.monotonic() - started < 15


def test_a_task_started_in_time_never_expires(app: Conductor) -> None:
    @app.task("expiry.quick", expires_in=30)
    def quick(payload: Any) -> str:
        return "ran"

    task_id = quick.enqueue()
    with Worker(app, concurrency=1, heartbeat_interval=0.5, poll_interval=0.5, reap_interval=0.5,
                shutdown_grace=2, run_scheduler=False):  # fmt: skip
        info = wait_until(lambda: (i := app.get(task_id)).finished and i, timeout=20)
    assert (info.status, info.result) == ("succeeded", "ran")


def test_the_options_reach_the_database_from_every_client(app: Conductor, db_dsn: str) -> None:
    @app.task("expiry.kind", expires_in=timedelta(minutes=5))
    def kind(payload: Any) -> None:
        return None

    registered = kind.enqueue()
    given = app.enqueue("expiry.other", expires_in="90 seconds")
    (batched,) = app.enqueue_many([{"kind": "expiry.other", "expires_in": 45}])

    async def from_async() -> int:
        async with AsyncConductor(db_dsn, pool_max=1) as aapp:
            return await aapp.enqueue("expiry.other", expires_in=timedelta(seconds=20))

    awaited = asyncio.run(from_async())
    with psycopg.connect(db_dsn) as conn:
        stored = dict(conn.execute(
            "select id, extract(epoch from expires_in)::int from conductor.tasks where id = any(%s)",
            ([registered, given, batched, awaited],)).fetchall())  # fmt: skip
    assert stored == {registered: 300, given: 90, batched: 45, awaited: 20}

    with Worker(app, queues=["expiry-none"], concurrency=1, run_scheduler=False):
        pass  # a worker's start writes its kinds' registered options (configure_kind)
    with psycopg.connect(db_dsn) as conn:
        row = conn.execute("select extract(epoch from expires_in)::int from conductor.kinds where kind = 'expiry.kind'")
        assert row.fetchone() == (300,)


def test_a_registered_expiry_must_be_positive(app: Conductor) -> None:
    with pytest.raises(ValueError, match="expires_in of 'expiry.bad' must be more than 0 seconds"):
        app.task("expiry.bad", expires_in=0)(lambda payload: None)
