"""concurrency_limit with real worker processes (issue 30): a limit of 3 per key
holds across 3 processes under load, and keys take fair turns, so a tenant with
10 tasks queued behind one with 10,000 is not starved.

The limit is measured from conductor.attempts, each attempt's handler run
([start, end) by the handler's own clock_timestamp(), inside the attempt's
running time: after its claim committed, before its report began) grouped by
the task's key; and by sampling the running tasks of the key while it drains.
The attempts' own claimed_at and finished_at are transaction start times: a
worker's next claim starts while the report that frees the key is still on its
way, so those intervals overlap by a few milliseconds though the key never had
a fourth task running.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from helpers import wait_until
from processes import Spawn, spawner

from pyconductor import Conductor
from pyconductor.aio import AsyncConductor
from pyconductor.errors import InvalidArgument

Conn = psycopg.Connection[tuple[object, ...]]


@pytest.fixture
def spawn(db_dsn: str, tmp_path: Path) -> Iterator[Spawn]:
    with spawner(db_dsn, tmp_path, "apps.keys_app:app", "--heartbeat", "1", "--poll", "1", "--reap", "5",
                 named=False) as start:  # fmt: skip
        yield start


def registered(conn: Conn, n: int) -> bool:
    return conn.execute("select count(*) from conductor.workers").fetchone() == (n,)


def scalar(conn: Conn, query: str) -> object:
    row = conn.execute(query).fetchone()
    assert row is not None
    return row[0]


def test_enqueue_takes_concurrency_limit_sync_async_and_in_batches(db_dsn: str, db_conn: Conn) -> None:
    with Conductor(db_dsn) as app:
        one = app.enqueue("export", {"seconds": 0}, concurrency_key="c", concurrency_limit=3)
        many = app.enqueue_many([{"kind": "export", "payload": {}, "concurrency_key": "c", "concurrency_limit": 4}])
        with pytest.raises(InvalidArgument, match="invalid concurrency_limit 0"):
            app.enqueue("export", {}, concurrency_key="c", concurrency_limit=0)
        with pytest.raises(InvalidArgument, match="a limit is per concurrency_key"):
            app.enqueue("export", {}, concurrency_limit=2)

    async def enqueue_async() -> int:
        async with AsyncConductor(db_dsn) as aapp:
            return await aapp.enqueue("export", {}, concurrency_key="c", concurrency_limit=5)

    other = asyncio.run(enqueue_async())
    rows = db_conn.execute("select id, concurrency_limit from conductor.tasks order by id").fetchall()
    assert rows == [(one, 3), (many[0], 4), (other, 5)]


def test_a_limit_of_3_per_key_holds_across_3_worker_processes(db_dsn: str, db_conn: Conn, spawn: Spawn) -> None:
    db_conn.execute("create table runs (attempt_id bigint primary key, started timestamptz, ended timestamptz)")
    with Conductor(db_dsn) as app:
        # the key under test, and twenty other keys of the same limit keeping the workers busy
        app.enqueue_many([{"kind": "export", "payload": {"seconds": 0.05}, "concurrency_key": "customer-1",
                           "concurrency_limit": 3} for _ in range(45)])  # fmt: skip
        app.enqueue_many([{"kind": "export", "payload": {"seconds": 0.05}, "concurrency_key": f"other-{n % 20}",
                           "concurrency_limit": 3} for n in range(300)])  # fmt: skip
    for _ in range(3):
        spawn("--concurrency", "8")
    wait_until(lambda: registered(db_conn, 3), timeout=30)

    sampled: list[int] = []

    def drained() -> bool:
        running = scalar(db_conn, "select count(*) from conductor.tasks"
                                  " where concurrency_key = 'customer-1' and status = 'running'")  # fmt: skip
        sampled.append(int(running))  # type: ignore[call-overload]
        return scalar(db_conn, "select count(*) = 345 from conductor.tasks where status = 'succeeded'") is True

    wait_until(drained, timeout=50, interval=0.005)
    assert max(sampled) <= 3, f"the key had {max(sampled)} tasks running at once"

    overlaps = db_conn.execute(
        """
        with runs as (
          select t.concurrency_key as key, r.started, r.ended
            from conductor.attempts a
            join conductor.tasks t on t.id = a.task_id
            join runs r on r.attempt_id = a.id
        )
        select r.key, max((select count(*) from runs o
                            where o.key = r.key and o.started <= r.started and o.ended > r.started))
          from runs r group by r.key
        """
    ).fetchall()
    peak = dict(overlaps)  # type: ignore[arg-type]
    assert len(peak) == 21 and db_conn.execute("select count(*) from runs where ended is null").fetchone() == (0,)
    assert max(peak.values()) <= 3, f"a key had more than 3 attempts running at once: {peak}"
    assert peak["customer-1"] == 3, f"the limit was never reached: {peak}"
    assert scalar(db_conn, "select count(*) from conductor.attempts where outcome is distinct from 'succeeded'") == 0


def test_a_tenant_with_10_tasks_is_not_starved_by_one_with_10000(db_dsn: str, db_conn: Conn, spawn: Spawn) -> None:
    with Conductor(db_dsn) as app:
        for start in range(0, 10_000, 2_500):
            app.enqueue_many([{"kind": "noop", "payload": {"n": n}, "concurrency_key": "big-tenant",
                               "concurrency_limit": 10_000} for n in range(start, start + 2_500)])  # fmt: skip
        small = app.enqueue_many([{"kind": "noop", "payload": {"n": n}, "concurrency_key": "small-tenant",
                                   "concurrency_limit": 10_000} for n in range(10)])  # fmt: skip
    for _ in range(3):
        spawn("--concurrency", "16")
    wait_until(
        lambda: scalar(db_conn, "select count(*) = 10010 from conductor.tasks where status = 'succeeded'"),
        timeout=55,
        interval=0.1,
    )
    # the drain's order: attempt ids are drawn in claim order
    positions = [row[0] for row in db_conn.execute(
        "select n from (select a.task_id, row_number() over (order by a.id) as n from conductor.attempts a) o"
        " where o.task_id = any(%s) order by n", (small,)).fetchall()]  # fmt: skip
    assert len(positions) == 10
    assert max(positions) <= 500, f"the small tenant's tasks started at positions {positions} of 10,010"  # type: ignore[operator]
