"""What a worker cannot report, and what it refuses at start (issue 14: H3, version, lease).

v0.1.0: one result jsonb refused (a NUL) or one error text with a NUL failed
the whole report batch; every task in it ran again and ended dead after four
"worker lost" recoveries, the real error never recorded.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from helpers import wait_until

from pyconductor import Conductor, InvalidArgument, Worker
from pyconductor.errors import SchemaMismatch
from pyconductor.migrate import migrate

Conn = psycopg.Connection[tuple[object, ...]]
BATCH = 7


@pytest.fixture
def app(db_dsn: str) -> Iterator[Conductor]:
    with Conductor(db_dsn, pool_max=2) as app:
        yield app


def fast_worker(app: Conductor, **options: Any) -> Worker:
    defaults: dict[str, Any] = {"heartbeat_interval": 0.2, "poll_interval": 0.5, "reap_interval": 0.5,
                                "shutdown_grace": 5, "concurrency": BATCH, "report_linger": 0.5}  # fmt: skip
    return Worker(app, **{**defaults, **options})


def together(app: Conductor, kind: str, outcome: Any) -> None:
    """Register ``kind``: BATCH tasks finish at the same moment (one report
    batch); the one with payload {"bad": true} ends with ``outcome``."""
    barrier = threading.Barrier(BATCH, timeout=30)

    @app.task(kind)
    def handler(payload: dict[str, Any]) -> Any:
        barrier.wait()
        if payload.get("bad"):
            return outcome()
        return {"n": payload["n"]}


def run_batch(app: Conductor, kind: str) -> tuple[list[int], int, Worker]:
    good = app.enqueue_many([(kind, {"n": n}) for n in range(BATCH - 1)])
    bad = app.enqueue(kind, {"bad": True}, max_attempts=3)
    with fast_worker(app) as worker:
        wait_until(lambda: all(app.get(i).finished for i in good)
                   and any(a.outcome for a in app.get(bad).attempts), timeout=30)  # fmt: skip
    return good, bad, worker


def test_a_result_jsonb_refuses_fails_only_its_own_task(app: Conductor) -> None:
    together(app, "nul.result", lambda: {"s": "a\x00b"})
    good, bad, worker = run_batch(app, "nul.result")
    assert [app.get(i).status for i in good] == ["succeeded"] * len(good)
    info = app.get(bad)
    assert info.status == "failed" and "result not storable" in (info.error or ""), info.error
    assert info.recoveries == 0 and len(info.attempts) == 1, "the batch was not lost and re-run"
    assert info.attempt == 1 and info.max_attempts == 3, "not retried: a new attempt would redo the handler's effects"
    assert worker.stats["succeeded"] == len(good) and worker.stats["failed"] == 1


def test_an_error_with_a_nul_byte_is_stored_escaped(app: Conductor) -> None:
    def raise_nul() -> None:
        raise ValueError("bad\x00byte")

    together(app, "nul.error", raise_nul)
    good, bad, _ = run_batch(app, "nul.error")
    assert [app.get(i).status for i in good] == ["succeeded"] * len(good)
    info = app.get(bad)
    assert info.status == "queued" and info.recoveries == 0, "a raising handler is retried as its policy says"
    assert "bad\\x00byte" in (info.attempts[0].error or ""), info.attempts[0].error


def test_an_oversized_result_fails_its_task_and_counts_as_failed(app: Conductor, db_conn: Conn) -> None:
    db_conn.execute("update conductor.settings set max_result_bytes = 1000")
    together(app, "big.result", lambda: {"blob": "x" * 5000})
    good, bad, worker = run_batch(app, "big.result")
    assert [app.get(i).status for i in good] == ["succeeded"] * len(good)
    info = app.get(bad)
    assert info.status == "failed" and "result not storable" in (info.error or ""), info.error
    assert worker.stats["failed"] == 1 and worker.stats["refused"] == 0


def test_a_worker_refuses_a_schema_of_another_release(empty_dsn: str) -> None:
    migrate(empty_dsn, to="@v0.1.0", progress=lambda line: None)
    with Conductor(empty_dsn, pool_max=1) as old:
        worker = fast_worker(old)
        with pytest.raises(SchemaMismatch, match=r"schema 0\.1\.0.*pyconductor migrate"):
            worker.start()


def test_a_lease_the_database_refuses_fails_at_start(app: Conductor) -> None:
    app.task("any")(lambda payload: None)  # a worker with a handler to claim for
    worker = fast_worker(app, lease=2 * 3600)
    with pytest.raises(InvalidArgument, match="max_lease"):
        worker.start()
