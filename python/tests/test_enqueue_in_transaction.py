"""Enqueue in the caller's transaction (``conn=``), against a real PostgreSQL.

The application's own connection (not autocommit, as psycopg opens it) does its
work and enqueues on the same transaction: a commit makes the task visible to
every other session (the workers') at once, a rollback leaves no task, a
rolled-back savepoint drops only what was enqueued inside it. The registered
defaults apply as without ``conn``; Conductor commits, opens and closes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.pq import TransactionStatus

from pyconductor import Conductor, InvalidArgument, InvalidPayload

Conn = psycopg.Connection[Any]


@pytest.fixture
def app(dsn: str) -> Iterator[Conductor]:
    with Conductor(dsn, pool_max=2) as app:

        @app.task("tx.mail", queue="mail", priority=7, max_attempts=4, timeout=30)
        def mail(payload: dict[str, Any]) -> None:
            pass

        yield app


@pytest.fixture
def own(dsn: str) -> Iterator[Conn]:
    """The application's connection: not autocommit, its transaction its own."""
    with psycopg.connect(dsn) as conn:
        yield conn


def visible(conn: Conn, ids: list[int]) -> list[int]:
    """The ids among ``ids`` another session (autocommit ``conn``) sees."""
    rows = conn.execute("select id from conductor.tasks where id = any(%s) order by id", (ids,)).fetchall()
    return [int(r[0]) for r in rows]


def test_a_commit_makes_the_task_visible_with_the_registered_defaults(app: Conductor, own: Conn, conn: Conn) -> None:
    task_id = app.enqueue("tx.mail", {"to": "a"}, conn=own)
    assert own.info.transaction_status == TransactionStatus.INTRANS  # nothing committed for the caller
    assert visible(conn, [task_id]) == []
    assert app.get(task_id, conn=own).status == "queued"  # the caller's transaction sees its own task
    own.commit()
    assert visible(conn, [task_id]) == [task_id]
    info = app.get(task_id)
    assert (info.queue, info.priority, info.max_attempts, info.timeout.total_seconds()) == ("mail", 7, 4, 30)  # type: ignore[union-attr]
    assert not own.closed  # Conductor closes nothing of the caller's


def test_a_rollback_enqueues_nothing(app: Conductor, own: Conn, conn: Conn) -> None:
    task_id = app.enqueue("tx.mail", {"to": "b"}, conn=own)
    ids = app.enqueue_many([("tx.mail", {"n": 1}), {"kind": "tx.other", "payload": {"n": 2}}], conn=own)
    own.rollback()
    assert visible(conn, [task_id, *ids]) == []


def test_enqueue_many_commits_with_the_caller_and_keeps_the_defaults(app: Conductor, own: Conn, conn: Conn) -> None:
    ids = app.enqueue_many([("tx.mail", {"n": 1}), {"kind": "tx.mail", "payload": {"n": 2}, "priority": 1}], conn=own)
    assert visible(conn, ids) == []
    own.commit()
    assert visible(conn, ids) == sorted(ids)
    assert [(app.get(i).queue, app.get(i).priority) for i in ids] == [("mail", 7), ("mail", 1)]
    assert app.enqueue_many([], conn=own) == []


def test_a_savepoint_rollback_drops_only_its_enqueue(app: Conductor, own: Conn, conn: Conn) -> None:
    with own.transaction():
        kept = app.enqueue("tx.mail", {"step": "outer"}, conn=own)
        with pytest.raises(RuntimeError), own.transaction():
            dropped = app.enqueue("tx.mail", {"step": "inner"}, conn=own)
            raise RuntimeError("the request fails after enqueueing")
        assert visible(conn, [kept, dropped]) == []  # nothing committed yet
    assert visible(conn, [kept, dropped]) == [kept]


def test_a_cursor_of_the_caller_works_and_keeps_its_own_results(app: Conductor, own: Conn, conn: Conn) -> None:
    with own.cursor() as cur:
        cur.execute("select 41 + 1")
        task_id = app.enqueue("tx.mail", {"via": "cursor"}, conn=cur)
        assert cur.fetchone() == (42,)  # the call ran on a cursor of its own, on the same transaction
        ids = app.enqueue_many([("tx.mail", {})], conn=cur)
    assert visible(conn, [task_id, *ids]) == []
    own.commit()
    assert visible(conn, [task_id, *ids]) == sorted([task_id, *ids])


def test_task_enqueue_takes_conn(app: Conductor, own: Conn, conn: Conn) -> None:
    task = app.registry.get("tx.mail")
    assert task is not None
    task_id = task.enqueue({"via": "task"}, conn=own)
    own.rollback()
    assert visible(conn, [task_id]) == []
    task_id = task.enqueue({"via": "task"}, conn=own, priority=2)
    own.commit()
    assert (app.get(task_id).queue, app.get(task_id).priority) == ("mail", 2)


def test_an_autocommit_connection_commits_at_once(app: Conductor, dsn: str, conn: Conn) -> None:
    with psycopg.connect(dsn, autocommit=True) as auto:
        task_id = app.enqueue("tx.mail", {}, conn=auto)
        assert auto.info.transaction_status == TransactionStatus.IDLE
        assert visible(conn, [task_id]) == [task_id]


def test_a_server_error_is_mapped_and_leaves_the_callers_transaction_aborted(
    app: Conductor, own: Conn, conn: Conn
) -> None:
    """A server error aborts the caller's transaction, as any failed statement
    does in PostgreSQL: psycopg reports it INERROR and the caller must roll
    back (the whole transaction, or the savepoint the call ran in)."""
    before = app.enqueue("tx.mail", {"n": 1}, conn=own)
    with pytest.raises(InvalidPayload) as caught:
        app.enqueue("tx.mail", [1, 2], conn=own)  # not a JSON object: QC102 from the server
    assert caught.value.sqlstate == "QC102"
    assert own.info.transaction_status == TransactionStatus.INERROR
    with pytest.raises(psycopg.errors.InFailedSqlTransaction):
        own.execute("select 1")
    own.rollback()
    assert visible(conn, [before]) == []

    # in a savepoint, only the savepoint is lost
    kept = app.enqueue("tx.mail", {"n": 2}, conn=own)
    with pytest.raises(InvalidPayload), own.transaction():
        app.enqueue_many([("tx.mail", "not an object")], conn=own)
    assert own.info.transaction_status == TransactionStatus.INTRANS
    own.commit()
    assert visible(conn, [kept]) == [kept]


def test_a_payload_that_is_not_json_is_refused_before_the_database(app: Conductor, own: Conn) -> None:
    app.enqueue("tx.mail", {}, conn=own)
    with pytest.raises(InvalidArgument):
        app.enqueue("tx.mail", {"x": object()}, conn=own)
    assert own.info.transaction_status == TransactionStatus.INTRANS  # nothing was sent
    own.rollback()


def test_conn_must_be_a_sync_psycopg_connection_or_cursor(app: Conductor) -> None:
    with pytest.raises(TypeError, match="psycopg.Connection or Cursor"):
        app.enqueue("tx.mail", {}, conn="postgresql://")  # type: ignore[arg-type]
