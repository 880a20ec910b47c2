"""Real worker processes started with the CLI (``python -m pyconductor worker``)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from helpers import wait_until
from processes import Spawn, spawner

from pyconductor import Conductor

Conn = psycopg.Connection[tuple[object, ...]]


@pytest.fixture
def spawn(db_dsn: str, tmp_path: Path) -> Iterator[Spawn]:
    with spawner(db_dsn, tmp_path, "apps.proc_app:app", "--heartbeat", "1", "--poll", "2", "--reap", "5",
                 named=False) as start:  # fmt: skip
        yield start


@pytest.fixture
def side_table(db_conn: Conn) -> Conn:
    db_conn.execute("create table executions (task_id bigint, attempt_id bigint, pid integer)")
    return db_conn


def registered(conn: Conn, n: int) -> bool:
    return conn.execute("select count(*) from conductor.workers").fetchone() == (n,)


def test_2000_tasks_over_3_worker_processes_run_exactly_once(db_dsn: str, side_table: Conn, spawn) -> None:  # type: ignore[no-untyped-def]
    workers = [spawn("--concurrency", "16") for _ in range(3)]
    wait_until(lambda: registered(side_table, 3), timeout=30)
    with Conductor(db_dsn) as app:
        ids: list[int] = []
        for start in range(0, 2000, 250):
            ids += app.enqueue_many([("record", {"n": n}) for n in range(start, start + 250)])
    assert len(set(ids)) == 2000

    wait_until(
        lambda: side_table.execute(
            "select count(*) = 2000 from conductor.tasks where status = 'succeeded'").fetchone()[0],  # fmt: skip
        timeout=120, interval=0.2,
    )
    per_task = side_table.execute(
        "select t.id, count(e.task_id), t.result->>'n' = t.payload->>'n', (t.result->>'pid')::int = min(e.pid)"
        "  from conductor.tasks t left join executions e on e.task_id = t.id group by t.id"
    ).fetchall()
    assert len(per_task) == 2000
    assert all(count == 1 for _, count, _, _ in per_task), "a task ran twice or never"
    assert all(same_n and same_pid for _, _, same_n, same_pid in per_task), "a result is missing or wrong"
    pids = {row[0] for row in side_table.execute("select distinct pid from executions").fetchall()}
    assert pids <= {w.proc.pid for w in workers} and len(pids) >= 2
    assert side_table.execute("select count(*) from conductor.attempts where outcome is distinct from 'succeeded'").fetchone() == (0,)

    for w in workers:
        w.signal(signal.SIGTERM)
    for w in workers:
        assert w.wait(30) == 0, w.output()
        assert "stopped" in w.output()
    assert registered(side_table, 0)


def test_sigterm_lets_short_tasks_finish_and_releases_long_ones(db_dsn: str, side_table: Conn, spawn) -> None:  # type: ignore[no-untyped-def]
    worker = spawn("--concurrency", "8", "--shutdown-grace", "3")
    wait_until(lambda: registered(side_table, 1), timeout=30)
    with Conductor(db_dsn) as app:
        long_ids = app.enqueue_many([("sleep", {"seconds": 600}) for _ in range(3)])
        short_ids = app.enqueue_many([("sleep", {"seconds": 1.5}) for _ in range(3)])
        wait_until(lambda: side_table.execute("select count(*) from executions").fetchone() == (6,), timeout=30)
        worker.signal(signal.SIGTERM)
        assert worker.wait(30) == 0, worker.output()
        for task_id in short_ids:
            info = app.get(task_id)
            assert (info.status, info.result) == ("succeeded", {"slept": 1.5})
        for task_id in long_ids:
            info = app.get(task_id)
            assert (info.status, info.attempt) == ("queued", 0), worker.output()
            assert [a.outcome for a in info.attempts] == ["released"]
    assert registered(side_table, 0)


def test_a_second_sigterm_exits_at_once_with_130(db_dsn: str, side_table: Conn, spawn) -> None:  # type: ignore[no-untyped-def]
    worker = spawn("--concurrency", "2", "--shutdown-grace", "600")
    wait_until(lambda: registered(side_table, 1), timeout=30)
    with Conductor(db_dsn) as app:
        ids = app.enqueue_many([("sleep", {"seconds": 600}) for _ in range(2)])
        wait_until(lambda: side_table.execute("select count(*) from executions").fetchone() == (2,), timeout=30)
        worker.signal(signal.SIGTERM)
        wait_until(lambda: "stop requested" in worker.output(), timeout=10)
        worker.signal(signal.SIGTERM)
        assert worker.wait(10) == 130, worker.output()
        # nothing was handed back: the reaper will take them when the lease expires
        assert [app.get(i).status for i in ids] == ["running", "running"]
