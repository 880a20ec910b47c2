"""A handler's own transaction: its writes and its task's completion commit together.

A handler that writes to the application's tables and then returns commits
twice: its writes, then (on the reporter's connection) the task's success. A
crash between the two runs the handler again on writes already committed.
``ctx.transaction()`` gives it a connection in a transaction instead, on which
the completion (``conductor.complete_in_transaction``) commits with the writes::

    def place_order(payload, ctx):
        with ctx.transaction() as conn:
            row = conn.execute("insert into orders (item) values (%s) returning id",
                               [payload["item"]]).fetchone()
            ctx.complete_in(conn, {"order_id": row[0]})

    async def place_order(payload, ctx):          # the same, async
        async with ctx.transaction() as conn:
            cur = await conn.execute("insert into orders ...")
            ctx.complete_in(conn, {"order_id": (await cur.fetchone())[0]})

The shape, and why it cannot complete twice nor with another result:

- ``ctx.complete_in(conn, result)`` names the result inside the block; the
  block's clean exit then sends ``complete_in_transaction`` on ``conn`` and
  commits. Once per attempt: a second ``complete_in`` or a second completing
  block raises RuntimeError. A block without ``complete_in`` commits the
  writes only (and the steps it saved: ``ctx.step(name, fn, conn=conn)``),
  and the task goes on.
- Once the block committed the completion the task has succeeded: the worker
  reports nothing more for it (its ledger, listeners and metrics count a
  success), and the handler's return value is not a result (a value other
  than None is logged at WARNING and dropped).
- An exception leaving the block rolls everything back (the writes, the
  completion, the steps saved on ``conn``) and goes on up: a handler that
  lets it out fails as any handler does. A refusal is raised there too:
  ``LeaseLost`` (the lease was lost and the task taken back, or it was
  completed already), ``TaskCancelled``; then the worker discards the
  attempt's outcome, as for a refused step.
- A connection lost during the COMMIT leaves it unknown whether it committed.
  The worker finds out from the database before it reports anything: it ends
  the old server session (``pg_terminate_backend`` of its pid and start time,
  waiting for it; through a transaction-mode pooler, which shares server
  sessions, it does not) and reads the attempt's outcome
  (``conductor.list_attempts``): 'succeeded' is a success; an attempt that still holds
  its task raises the connection error in the handler (its writes were rolled
  back; it fails as any handler does); otherwise ``LeaseLost``.

The transaction is READ COMMITTED (the database refuses others, QC213: a
heartbeat would make the task row unlockable). The sync block takes a
connection of the worker's handler pool (:class:`~pyconductor.steps.StepRuntime`);
the async block opens an ``AsyncConnection`` of its own for the block.
Everything the engine decides (the fence, waiting for a held row) is the
SQL function's; see docs/transactions.md.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AbstractContextManager, suppress
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, NoReturn

import psycopg
from psycopg import IsolationLevel
from psycopg.rows import dict_row

from pyconductor import defaults, queries
from pyconductor.errors import ConductorError, LeaseLost, translate
from pyconductor.ledger import task_extra
from pyconductor.wire import dumps_json

if TYPE_CHECKING:
    from pyconductor.context import TaskContext, _Runtime

__all__ = ["HandlerTransaction"]

logger = logging.getLogger("pyconductor")

_UNSET = object()


class HandlerTransaction:
    """``with`` / ``async with`` a handler's transaction; see the module doc."""

    def __init__(self, ctx: TaskContext, runtime: _Runtime | None) -> None:
        self.ctx = ctx
        self.runtime = runtime
        self.conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any] | None = None
        self.result: str | object = _UNSET  # the JSON text complete_in gave
        self.steps: list[str] = []  # the steps saved on conn (forgotten again on a rollback)
        self._pooled: AbstractContextManager[psycopg.Connection[Any]] | None = None
        self._tx: Any = None
        self._session: tuple[int, datetime] | None = None  # the server session's pid and start (for a lost COMMIT)

    # -- what the context calls ------------------------------------------------------

    def complete_with(self, conn: object, result: object) -> None:
        """ctx.complete_in: complete with ``result`` when this block commits."""
        if conn is not self.conn:
            raise ValueError("complete_in needs the connection of the open ctx.transaction() block")
        if self.result is not _UNSET:
            raise RuntimeError(f"task {self.ctx.task_id} is already completed in this transaction")
        try:
            self.result = dumps_json(result)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"the result of task {self.ctx.task_id} ({self.ctx.kind}) is not JSON: {exc}") from exc

    @property
    def sync(self) -> bool:
        """Whether the block is a sync one (a psycopg Connection)."""
        return isinstance(self.conn, psycopg.Connection)

    def save_step(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        """ctx.step(conn=...): conductor.save_step in this transaction, refusals noted on ctx."""
        conn = self.conn
        assert isinstance(conn, psycopg.Connection)
        try:
            with conn.cursor(row_factory=dict_row) as cur:
                cur.execute(queries.SAVE_STEP, params)
                return cur.fetchall()
        except psycopg.Error as exc:
            self._raise(exc)

    def _start(self) -> _Runtime:
        ctx = self.ctx
        if ctx._transaction is not None:
            raise RuntimeError("ctx.transaction() blocks do not nest")
        if ctx._completed:
            raise RuntimeError(f"task {ctx.task_id} was completed already in a transaction")
        if self.runtime is None:
            raise RuntimeError("this TaskContext has no database: ctx.transaction() runs under a Worker")
        ctx.raise_if_cancelled()
        ctx._transaction = self
        return self.runtime

    def _rolled_back(self) -> None:
        for key in self.steps:
            self.ctx.steps.pop(key, None)

    def _raise(self, exc: BaseException) -> NoReturn:
        """Raise ``exc`` of a call in the transaction: mapped (QC201 is LeaseLost, ...), a
        refusal noted on ctx so the worker discards the outcome."""
        new = translate(exc) if isinstance(exc, psycopg.Error) else exc
        if isinstance(new, ConductorError):
            self.ctx._note_refusal(new)
        if new is exc:
            raise exc
        raise new from exc

    # -- sync ------------------------------------------------------------------------

    def __enter__(self) -> psycopg.Connection[Any]:
        runtime = self._start()
        try:
            self._pooled = runtime.connection()
            conn = self._pooled.__enter__()
            conn.isolation_level = IsolationLevel.READ_COMMITTED  # BEGIN ISOLATION LEVEL READ COMMITTED
            self._tx = conn.transaction()
            self._tx.__enter__()
        except BaseException:
            self.ctx._transaction = None
            if self._pooled is not None:
                self._pooled.__exit__(None, None, None)
            raise
        self.conn = conn
        return conn

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:  # fmt: skip
        conn = self.conn
        assert isinstance(conn, psycopg.Connection) and self._pooled is not None
        try:
            if exc is None and self.result is not _UNSET:
                try:
                    with conn.cursor(row_factory=dict_row) as cur:
                        cur.execute(queries.COMPLETE_IN_TRANSACTION,
                                    {"attempt_id": self.ctx.attempt_id, "result": self.result})  # fmt: skip
                        row = cur.fetchone()
                        assert row is not None
                        self._session = (conn.info.backend_pid, row["backend_start"])
                except BaseException as failure:  # noqa: BLE001 - rolled back, raised again by _raise
                    self._end_quietly(failure)
                    self._raise(failure)
                try:
                    self._tx.__exit__(None, None, None)
                except psycopg.Error as lost:
                    if not conn.broken:
                        self._rolled_back()
                        raise
                    self._settle(lost)
                    return
                self._committed()
                return
            if exc is not None:
                self._end_quietly(exc)
            else:
                self._tx.__exit__(None, None, None)
        finally:
            self.ctx._transaction = None
            self._pooled.__exit__(None, None, None)

    def _end_quietly(self, failure: BaseException) -> None:
        """Roll back after ``failure`` (a broken connection cannot: its server session rolls back itself)."""
        with suppress(psycopg.Error):
            self._tx.__exit__(type(failure), failure, failure.__traceback__)
        self._rolled_back()

    # -- async -----------------------------------------------------------------------

    async def __aenter__(self) -> psycopg.AsyncConnection[Any]:
        runtime = self._start()
        try:
            conn = await psycopg.AsyncConnection.connect(
                runtime.dsn, autocommit=True, connect_timeout=defaults.CONNECT_TIMEOUT,
                application_name=f"pyconductor tx {self.ctx.worker_id}"[:63],
                **runtime.profile.connect_options(runtime.dsn),
            )  # fmt: skip
        except BaseException:
            self.ctx._transaction = None
            raise
        self._tx = conn.transaction()
        try:
            await conn.set_isolation_level(IsolationLevel.READ_COMMITTED)
            await self._tx.__aenter__()
        except BaseException:
            self.ctx._transaction = None
            await conn.close()
            raise
        self.conn = conn
        return conn

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:  # fmt: skip
        conn = self.conn
        assert isinstance(conn, psycopg.AsyncConnection)
        try:
            if exc is None and self.result is not _UNSET:
                try:
                    async with conn.cursor(row_factory=dict_row) as cur:
                        await cur.execute(queries.COMPLETE_IN_TRANSACTION,
                                          {"attempt_id": self.ctx.attempt_id, "result": self.result})  # fmt: skip
                        row = await cur.fetchone()
                        assert row is not None
                        self._session = (conn.info.backend_pid, row["backend_start"])
                except BaseException as failure:  # noqa: BLE001 - rolled back, raised again by _raise
                    with suppress(psycopg.Error):  # a broken connection: its session rolls back itself
                        await self._tx.__aexit__(type(failure), failure, failure.__traceback__)
                    self._rolled_back()
                    self._raise(failure)
                try:
                    await self._tx.__aexit__(None, None, None)
                except psycopg.Error as lost:
                    if not conn.broken:
                        self._rolled_back()
                        raise
                    await asyncio.to_thread(self._settle, lost)
                    return
                self._committed()
                return
            if exc is not None:
                with suppress(psycopg.Error):  # a broken connection: its session rolls back itself
                    await self._tx.__aexit__(type(exc), exc, exc.__traceback__)
                self._rolled_back()
            else:
                await self._tx.__aexit__(None, None, None)
        finally:
            self.ctx._transaction = None
            await conn.close()

    # -- the outcome -----------------------------------------------------------------

    def _committed(self) -> None:
        self.ctx._completed = True

    def _settle(self, lost: BaseException) -> None:
        """The connection dropped during the COMMIT: learn from the database whether it committed."""
        ctx, runtime = self.ctx, self.runtime
        assert runtime is not None
        logger.warning("task %d (%s): the connection was lost during the commit of its transaction; asking the "
                       "database whether it committed", ctx.task_id, ctx.kind, extra=task_extra(ctx))  # fmt: skip
        if self._session is not None and runtime.profile.keeps_session:
            # the old session ends (committed or rolled back) before the attempt is read
            pid, started = self._session
            runtime.ctx_rows(ctx, queries.END_SESSION, {"pid": pid, "started": started})
        rows = runtime.ctx_rows(ctx, queries.ATTEMPT_OUTCOME,
                                {"task_id": ctx.task_id, "attempt_id": ctx.attempt_id})  # fmt: skip
        outcome = rows[0]["outcome"] if rows else None
        held = bool(rows) and outcome is None  # an attempt without an outcome still holds its task
        if outcome == "succeeded":
            self._committed()
            return
        self._rolled_back()
        if held:
            raise lost  # not committed: the writes rolled back; the handler fails as any does
        refusal = LeaseLost(f"task {ctx.task_id}: attempt {ctx.attempt_id} no longer holds it ({outcome or 'lost'}); "
                            "its transaction did not commit")  # fmt: skip
        ctx._note_refusal(refusal)
        raise refusal from lost
