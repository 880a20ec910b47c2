"""Completing inside the handler's own transaction (issue 31), against a real PostgreSQL.

``with ctx.transaction() as conn`` / ``async with``: the handler's writes on
``conn`` and the task's completion (``ctx.complete_in``) commit together; an
exception rolls both back and fails the task as any handler's exception does;
an attempt that no longer holds its task has its whole transaction rolled
back; ``ctx.step(..., conn=conn)`` checkpoints inside it. The worker sends no
report for a task its handler completed, and counts it a success. The Node
worker's ``ctx.transaction`` / ``ctx.completeIn`` likewise (the last test).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import REPO, wait_until
from lifecycle.runner import NODE_DIR, node_problem
from processes import TESTS, ChildProcess

from pyconductor import Conductor, LeaseLost, TaskCancelled, TaskContext, Worker

Conn = psycopg.Connection[Any]


@pytest.fixture
def app(db_dsn: str) -> Iterator[Conductor]:
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("create table effects (task_id bigint not null, note text)")
    with Conductor(db_dsn, pool_max=2) as app:
        yield app


def fast_worker(app: Conductor, **options: Any) -> Worker:
    defaults: dict[str, Any] = {"heartbeat_interval": 0.2, "poll_interval": 0.5, "reap_interval": 0.5,
                                "shutdown_grace": 5, "run_scheduler": False}  # fmt: skip
    return Worker(app, **{**defaults, **options})


def effects(dsn: str, task_id: int) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("select count(*) from effects where task_id = %s", [task_id]).fetchone()
        assert row is not None
        return int(row[0])


def outcomes(worker: Worker) -> list[tuple[int, str]]:
    seen: list[tuple[int, str]] = []
    worker.outcome_listeners.append(lambda ctx, outcome, _ms: seen.append((ctx.task_id, outcome)))
    return seen


def test_writes_and_completion_commit_together(app: Conductor, db_dsn: str) -> None:
    checks: list[str] = []

    @app.task("order")
    def order(payload: dict[str, int], ctx: TaskContext) -> str:
        with ctx.transaction() as conn:
            conn.execute("insert into effects values (%s, 'ordered')", [ctx.task_id])
            ctx.complete_in(conn, {"n": payload["n"]})
            with pytest.raises(RuntimeError, match="already completed"):
                ctx.complete_in(conn, {"n": -1})
            checks.append(f"inside: {effects(db_dsn, ctx.task_id)} {app.get(ctx.task_id).status}")
        checks.append(f"after: {effects(db_dsn, ctx.task_id)} {app.get(ctx.task_id).status}")
        return "dropped: the transaction's result stands"

    task_id = order.enqueue({"n": 7})
    with fast_worker(app) as worker:
        seen = outcomes(worker)
        wait_until(lambda: app.get(task_id).finished)
        wait_until(lambda: worker.stats["succeeded"] == 1)
        assert seen == [(task_id, "succeeded")]
        assert worker.stats["failed"] == 0 and worker.stats["refused"] == 0
    info = app.get(task_id)
    assert (info.status, info.result) == ("succeeded", {"n": 7})
    assert checks == ["inside: 0 running", "after: 1 succeeded"]
    assert effects(db_dsn, task_id) == 1


def test_an_exception_rolls_back_the_writes_and_fails_the_task(app: Conductor, db_dsn: str) -> None:
    @app.task("order")
    def order(payload: Any, ctx: TaskContext) -> None:
        with ctx.transaction() as conn:
            conn.execute("insert into effects values (%s, 'ordered')", [ctx.task_id])
            ctx.step("reserved", lambda: {"stock": 1}, conn=conn)
            assert "reserved" in ctx.steps
            ctx.complete_in(conn, {"ok": True})
            raise ValueError("out of stock")

    task_id = order.enqueue({})
    with fast_worker(app):
        wait_until(lambda: app.get(task_id).finished)
    info = app.get(task_id)
    assert info.status == "failed" and "ValueError: out of stock" in (info.error or "")
    assert effects(db_dsn, task_id) == 0
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("select count(*) from conductor.steps where task_id = %s", [task_id]).fetchone() == (0,)


def test_a_step_saved_in_the_transaction_commits_with_it(app: Conductor, db_dsn: str) -> None:
    @app.task("order")
    def order(payload: Any, ctx: TaskContext) -> None:
        with ctx.transaction() as conn:
            ctx.step("reserved", lambda: conn.execute("insert into effects values (%s, 'r')", [ctx.task_id]) and 1,
                     conn=conn)  # fmt: skip
        with pytest.raises(ValueError, match="connection of the open"):
            ctx.step("outside", lambda: 1, conn=conn)
        with ctx.transaction() as conn2:
            ctx.complete_in(conn2, ctx.steps)

    task_id = order.enqueue({})
    with fast_worker(app):
        wait_until(lambda: app.get(task_id).finished)
    info = app.get(task_id)
    assert (info.status, info.result) == ("succeeded", {"reserved": 1})
    assert effects(db_dsn, task_id) == 1


@pytest.mark.parametrize("how", ["reaped", "cancelled"])
def test_an_attempt_that_lost_its_task_rolls_back_everything(app: Conductor, db_dsn: str, how: str) -> None:
    inside = threading.Event()
    taken = threading.Event()
    raised: list[BaseException] = []

    @app.task("order")
    def order(payload: Any, ctx: TaskContext) -> str | None:
        if ctx.recoveries:
            return "the next attempt, without writes"
        try:
            with ctx.transaction() as conn:
                conn.execute("insert into effects values (%s, 'ordered')", [ctx.task_id])
                ctx.complete_in(conn, {"ok": True})
                inside.set()
                assert taken.wait(10)
        except (LeaseLost, TaskCancelled) as exc:
            raised.append(exc)
            raise
        return None

    task_id = order.enqueue({})
    with fast_worker(app) as worker:
        assert inside.wait(10)
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            if how == "reaped":  # the lease expired: in one transaction, so no beat comes between
                with conn.transaction():
                    conn.execute("update conductor.tasks set lease_expires_at = now() - interval '1 minute' "
                                 "where id = %s", [task_id])  # fmt: skip
                    conn.execute("select conductor.reap()")
            else:
                conn.execute("select conductor.cancel(%s)", [task_id])
        taken.set()
        wait_until(lambda: raised)
        wait_until(lambda: worker.stats["refused"] == 1)
        # reaped: claimed again, the next attempt succeeds without writes (the one success)
        wait_until(lambda: worker.stats["succeeded"] == (how == "reaped"))
        assert worker.stats["refused"] == 1 and worker.stats["failed"] == 0
    assert isinstance(raised[0], LeaseLost if how == "reaped" else TaskCancelled)
    assert effects(db_dsn, task_id) == 0
    info = app.get(task_id)
    if how == "reaped":
        assert (info.status, info.result) == ("succeeded", "the next attempt, without writes")
    else:
        assert info.status == "cancelled"


def test_async_writes_and_completion_commit_together(app: Conductor, db_dsn: str) -> None:
    @app.task("order")
    async def order(payload: dict[str, int], ctx: TaskContext) -> None:
        async with ctx.transaction() as conn:
            await conn.execute("insert into effects values (%s, 'ordered')", [ctx.task_id])
            ctx.complete_in(conn, {"n": payload["n"]})

    task_id = order.enqueue({"n": 3})
    with fast_worker(app) as worker:
        seen = outcomes(worker)
        wait_until(lambda: app.get(task_id).finished)
        wait_until(lambda: seen == [(task_id, "succeeded")])
    info = app.get(task_id)
    assert (info.status, info.result) == ("succeeded", {"n": 3})
    assert effects(db_dsn, task_id) == 1


def test_async_exception_rolls_back_and_fails(app: Conductor, db_dsn: str) -> None:
    @app.task("order")
    async def order(payload: Any, ctx: TaskContext) -> None:
        async with ctx.transaction() as conn:
            await conn.execute("insert into effects values (%s, 'ordered')", [ctx.task_id])
            ctx.complete_in(conn, {"ok": True})
            raise ValueError("out of stock")

    task_id = order.enqueue({})
    with fast_worker(app):
        wait_until(lambda: app.get(task_id).finished)
    info = app.get(task_id)
    assert info.status == "failed" and "ValueError: out of stock" in (info.error or "")
    assert effects(db_dsn, task_id) == 0


def test_async_cancelled_attempt_rolls_back(app: Conductor, db_dsn: str) -> None:
    inside = threading.Event()
    taken = threading.Event()

    @app.task("order")
    async def order(payload: Any, ctx: TaskContext) -> None:
        async with ctx.transaction() as conn:
            await conn.execute("insert into effects values (%s, 'ordered')", [ctx.task_id])
            ctx.complete_in(conn, {"ok": True})
            inside.set()
            await asyncio.to_thread(taken.wait, 10)

    task_id = order.enqueue({})
    with fast_worker(app, heartbeat_interval=30) as worker:
        assert inside.wait(10)
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            conn.execute("select conductor.cancel(%s)", [task_id])
        taken.set()
        wait_until(lambda: worker.stats["refused"] == 1)
        assert worker.stats["succeeded"] == 0
    assert app.get(task_id).status == "cancelled"
    assert effects(db_dsn, task_id) == 0


class _CommitAnswerLost:
    """In place of a block's psycopg Transaction: its COMMIT runs (``commits``) or the
    transaction rolls back (not), then the connection drops before the answer is read."""

    def __init__(self, real: Any, conn: Conn, commits: bool) -> None:
        self.real, self.conn, self.commits = real, conn, commits

    def __exit__(self, *exc: object) -> None:
        if self.commits:
            self.real.__exit__(None, None, None)
        else:
            self.real.__exit__(RuntimeError, RuntimeError("never"), None)
        self.conn.pgconn.finish()
        raise psycopg.OperationalError("server closed the connection unexpectedly")


@pytest.mark.parametrize("commits", [True, False], ids=["committed", "rolled-back"])
def test_a_connection_lost_during_commit_is_settled_by_the_database(
    app: Conductor, db_dsn: str, monkeypatch: pytest.MonkeyPatch, commits: bool
) -> None:
    from pyconductor.transaction import HandlerTransaction

    real_enter = HandlerTransaction.__enter__

    def enter(self: HandlerTransaction) -> Conn:
        conn = real_enter(self)
        self._tx = _CommitAnswerLost(self._tx, conn, commits)
        return conn

    monkeypatch.setattr(HandlerTransaction, "__enter__", enter)

    @app.task("order")
    def order(payload: Any, ctx: TaskContext) -> None:
        with ctx.transaction() as conn:
            conn.execute("insert into effects values (%s, 'ordered')", [ctx.task_id])
            ctx.complete_in(conn, {"ok": True})

    task_id = order.enqueue({})
    with fast_worker(app) as worker:
        wait_until(lambda: app.get(task_id).finished)
        wait_until(lambda: worker.stats["succeeded" if commits else "failed"] == 1)
        assert worker.stats["refused"] == 0
    info = app.get(task_id)
    if commits:  # the database says it committed: a success, reported once
        assert (info.status, info.result, effects(db_dsn, task_id)) == ("succeeded", {"ok": True}, 1)
    else:  # not committed, still held: the handler failed with the connection error
        assert info.status == "failed" and "OperationalError" in (info.error or "")
        assert effects(db_dsn, task_id) == 0


# -- the Node worker (workers/node), its handlers in apps/txnode.js ------------------------


@pytest.fixture
def node_worker(db_dsn: str, tmp_path: Path) -> Iterator[ChildProcess]:
    if problem := node_problem():
        pytest.fail(problem)
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("create table effects (task_id bigint not null, note text)")
        conn.execute("create table gates (task_id bigint not null)")
    command = ["node", str(NODE_DIR / "main.js"), "--handlers", str(TESTS / "apps" / "txnode.js"),
               "--heartbeat", "0.2", "--poll", "0.5", "--reap", "0.5"]  # fmt: skip
    proc = ChildProcess(command, env={**os.environ, "CONDUCTOR_DSN": db_dsn}, cwd=REPO, log=tmp_path / "node.log")
    try:
        yield proc
    finally:
        proc.close()


def test_node_completes_in_its_transaction_rolls_back_on_a_throw_and_on_a_cancel(
    db_dsn: str, node_worker: ChildProcess
) -> None:
    with Conductor(db_dsn) as client:
        ordered = client.enqueue("order", {"n": 5})
        raised = client.enqueue("raise", {})
        gated = client.enqueue("gate", {})
        wait_until(lambda: client.get(ordered).finished and client.get(raised).finished,
                   message=node_worker.output)  # fmt: skip
        wait_until(lambda: client.get(gated).status == "running", message=node_worker.output)
        client.cancel(gated)
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            conn.execute("insert into gates values (%s)", [gated])
        wait_until(lambda: f"task {gated} (gate) cancelled" in node_worker.output(), message=node_worker.output)
        info = client.get(ordered)
        assert (info.status, info.result, effects(db_dsn, ordered)) == ("succeeded", {"n": 5}, 1)
        with psycopg.connect(db_dsn) as conn:
            steps = conn.execute("select name from conductor.steps where task_id = %s", [ordered]).fetchall()
        assert steps == [("reserved",)]
        info = client.get(raised)
        assert info.status == "failed" and "out of stock" in (info.error or "")
        assert effects(db_dsn, raised) == 0
        assert (client.get(gated).status, effects(db_dsn, gated)) == ("cancelled", 0)
