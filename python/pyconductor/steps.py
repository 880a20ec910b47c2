"""The handlers' durable calls: what a running handler's ``ctx`` talks to.

:class:`StepRuntime` is the runtime of every :class:`~pyconductor.context.TaskContext`
a worker claims: ``ctx.step``, ``ctx.spawn`` and the waits send their one
statement through it, on a small connection pool of their own (opened on the
first such call, up to two connections a slot: one a handler's own
transaction holds, one for the step calls it makes meanwhile), so a handler never waits
for the worker's own connections nor they for it. A handler's own transaction
(``ctx.transaction()``, :mod:`pyconductor.transaction`) takes its connection
from the same pool. A lost connection is waited
out for up to ``retry_for`` seconds (:func:`pyconductor.link.retry`): each call is
idempotent per step name (a suspend that did commit answers LeaseLost when
sent again, which discards the outcome; the task waits). A wait that parks
the task tells the reaper to read ``next_wake`` again (``on_wait``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from pyconductor import defaults
from pyconductor.errors import mapped_errors
from pyconductor.ledger import task_extra
from pyconductor.link import Aborted, retry
from pyconductor.profile import DIRECT, ConnectionProfile
from pyconductor.wire import use_fast_loads

if TYPE_CHECKING:
    from pyconductor.context import TaskContext
    from pyconductor.registry import Registry

__all__ = ["StepRuntime"]

RETRY_FOR = 30.0  # seconds a step call waits out a lost connection


class StepRuntime:
    """ctx_rows / spawn_defaults / waiting for the contexts of one worker."""

    def __init__(self, dsn: str, worker_id: str, size: int, registry: Registry, on_wait: Callable[[], None], *,
                 retry_for: float = RETRY_FOR, profile: ConnectionProfile = DIRECT) -> None:  # fmt: skip
        self.dsn = dsn
        self.profile = profile  # through a transaction-mode pooler the pool prepares no statement
        self.worker_id = worker_id
        self.size = size
        self.registry = registry
        self.on_wait = on_wait
        self.retry_for = retry_for
        self.closed = threading.Event()  # the worker stopped: a lost connection is no longer waited out
        self._lock = threading.Lock()
        self._pool: ConnectionPool | None = None

    def _get_pool(self) -> ConnectionPool:
        with self._lock:
            if self._pool is None:
                self._pool = ConnectionPool(
                    self.dsn, min_size=1, max_size=2 * self.size, open=True, name=f"pyconductor-ctx-{self.worker_id}",
                    configure=use_fast_loads,
                    kwargs={"autocommit": True, "connect_timeout": defaults.CONNECT_TIMEOUT,
                            "application_name": f"pyconductor ctx {self.worker_id}"[:63],
                            **self.profile.connect_options(self.dsn)},
                )  # fmt: skip
            return self._pool

    def ctx_rows(self, ctx: TaskContext, query: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """One statement for a handler's ctx (save_step, spawn, suspend), Conductor errors mapped."""

        def once() -> list[dict[str, Any]]:
            with mapped_errors(), self._get_pool().connection() as conn, conn.cursor(row_factory=dict_row) as cur:
                cur.execute(query, params)
                return cur.fetchall()

        try:
            return retry(once, what=f"task {ctx.task_id} ({ctx.kind}) step", abort=self.closed, extra=task_extra(ctx),
                         until=time.monotonic() + self.retry_for)  # fmt: skip
        except Aborted as exc:
            assert exc.__cause__ is not None  # retry raises Aborted from the error it gave up on
            raise exc.__cause__ from None

    def connection(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        """A connection of the pool, for a handler's own transaction (pyconductor.transaction)."""
        return self._get_pool().connection()

    def spawn_defaults(self, kind: str) -> dict[str, Any]:
        """The enqueue options registered for ``kind`` on this worker's app."""
        task = self.registry.get(kind)
        return task.options() if task is not None else {}

    def waiting(self, ctx: TaskContext) -> None:
        """A handler's wait parked its task: the reaper re-reads next_wake."""
        self.on_wait()

    def close(self) -> None:
        self.closed.set()
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close(timeout=1.0)
