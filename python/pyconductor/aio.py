"""The asyncio client, for FastAPI, aiohttp and other asyncio applications.

    from pyconductor import Conductor
    from pyconductor.aio import AsyncConductor

    app = Conductor(DSN)                      # registers the handlers a Worker runs
    aapp = AsyncConductor(DSN, app=app)       # same registry: same registered defaults

    task_id = await aapp.enqueue("send_email", {"to": "a@example.com"})
    info = await aapp.result(task_id, timeout=30)

The calls are :mod:`pyconductor.calls`, the same the sync client runs (same
SQL, same argument building, same row decoding); only the running is async,
on a ``psycopg_pool.AsyncConnectionPool`` (autocommit, opened at the first
call, closed by :meth:`AsyncConductor.close` or ``async with``). ``conn=``
takes a psycopg AsyncConnection or AsyncCursor of the caller's transaction,
with the sync client's meaning (nothing committed, opened or closed).

The pool belongs to the event loop that opened it: use one AsyncConductor
per loop (an application's lifespan), or ``close()`` it before another loop
uses it. ``result`` waits on a connection of its own, outside the pool.

The bus and locks: :meth:`AsyncConductor.publish` and :meth:`AsyncConductor.exclusive`
are the sync client's; subscribing is sync only (:meth:`Conductor.subscribe
<pyconductor.client.Conductor.subscribe>`, in a thread).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager, suppress
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Self, TypeVar

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from pyconductor import bus, calls, graphs, queries
from pyconductor.calls import Call, RunState, TaskInfo, UpdateReply
from pyconductor.dsn import tcp_options
from pyconductor.errors import InvalidArgument, mapped_errors
from pyconductor.graphs import Graph, GraphNode
from pyconductor.profile import ConnectionProfile, profile_from
from pyconductor.registry import Registry
from pyconductor.wire import load_infinite_times

if TYPE_CHECKING:
    from pyconductor.client import Conductor

__all__ = ["AsyncConductor"]

T = TypeVar("T")
# what ``conn=`` takes: an async connection or cursor of the caller's transaction
CallerConn = psycopg.AsyncConnection[Any] | psycopg.AsyncCursor[Any]


async def _configure(conn: psycopg.AsyncConnection[Any]) -> None:
    load_infinite_times(conn)


class AsyncConductor:
    """An asyncio client: a DSN, a lazily opened AsyncConnectionPool, and the
    registry of ``app`` (a :class:`~pyconductor.client.Conductor`, so the kinds
    registered there apply their defaults here too) or an empty one. ``origin``
    labels its bus messages: ``app``'s (so its subscriptions skip them too), else
    a random id. ``pooler``: as :class:`~pyconductor.client.Conductor`'s (default:
    ``app``'s profile, else ``$CONDUCTOR_POOLER``): behind a transaction-mode pooler the
    pool prepares no statement and :meth:`result` polls."""

    def __init__(self, dsn: str, app: Conductor | None = None, *, pool_min: int = 1, pool_max: int = 10,
                 pooler: str | None = None) -> None:  # fmt: skip
        self.dsn = dsn
        self.profile: ConnectionProfile = app.profile if pooler is None and app is not None else profile_from(pooler)
        self.pool_min = pool_min
        self.pool_max = pool_max
        self.registry: Registry = app.registry if app is not None else Registry()
        self.origin: str = app.origin if app is not None else uuid.uuid4().hex
        self._pool: AsyncConnectionPool | None = None
        self._lock: asyncio.Lock | None = None

    def __repr__(self) -> str:
        return f"<AsyncConductor kinds={self.registry.kinds!r}>"

    @property
    def pooler(self) -> str | None:
        """'transaction' behind a transaction-mode pooler, else None (``profile``'s)."""
        return self.profile.pooler

    async def pool(self) -> AsyncConnectionPool:
        """The client pool, opened on first use."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._pool is None:
                pool = AsyncConnectionPool(
                    self.dsn, min_size=self.pool_min, max_size=self.pool_max,
                    kwargs={"autocommit": True, **self.profile.connect_options(self.dsn)}, open=False,
                    name="pyconductor-aio",
                    configure=_configure,
                )  # fmt: skip
                await pool.open()
                self._pool = pool
            return self._pool

    async def close(self) -> None:
        """Close the pool (a later call opens a new one)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _run(self, call: Call[T], conn: CallerConn | None = None) -> T:
        with mapped_errors():
            if conn is None:
                async with (await self.pool()).connection() as pooled, pooled.cursor(row_factory=dict_row) as cur:
                    await cur.execute(call.query, call.params)
                    return call.decode(await cur.fetchall())
            async with calls.dict_cursor(conn, is_async=True) as cur:
                await cur.execute(call.query, call.params)
                return call.decode(await cur.fetchall())

    # -- calls: each is Conductor's of the same name (see its docstring) ---------------

    async def enqueue(
        self,
        kind: str,
        payload: Any = None,
        *,
        queue: str | None = None,
        priority: int | None = None,
        run_at: datetime | str | None = None,
        max_attempts: int | None = None,
        dedupe_key: str | None = None,
        concurrency_key: str | None = None,
        parent_id: int | None = None,
        max_recoveries: int | None = None,
        backoff_base: timedelta | float | str | None = None,
        backoff_factor: float | None = None,
        backoff_max: timedelta | float | str | None = None,
        timeout: timedelta | float | str | None = None,
        traceparent: str | None = None,
        concurrency_limit: int | None = None,
        dedupe_window: timedelta | float | str | None = None,
        dedupe_states: Sequence[str] | None = None,
        on_duplicate: str | None = None,
        debounce: timedelta | float | str | None = None,
        debounce_max: timedelta | float | str | None = None,
        expires_in: timedelta | float | str | None = None,
        rate_key: str | None = None,
        conn: CallerConn | None = None,
    ) -> int:
        """Write one task and return its id; options left None take the kind's
        registered ones (see :meth:`Conductor.enqueue <pyconductor.client.Conductor.enqueue>`).
        ``conn``: an AsyncConnection or AsyncCursor of the caller's transaction."""
        options = {
            "queue": queue, "priority": priority, "run_at": run_at, "max_attempts": max_attempts,
            "dedupe_key": dedupe_key, "concurrency_key": concurrency_key, "parent_id": parent_id,
            "max_recoveries": max_recoveries, "backoff_base": backoff_base, "backoff_factor": backoff_factor,
            "backoff_max": backoff_max, "timeout": timeout, "traceparent": traceparent,
            "concurrency_limit": concurrency_limit,
            "dedupe_window": dedupe_window, "dedupe_states": dedupe_states, "on_duplicate": on_duplicate,
            "debounce": debounce, "debounce_max": debounce_max,
            "expires_in": expires_in, "rate_key": rate_key,
        }  # fmt: skip
        return await self._run(calls.enqueue(self.registry, kind, payload, options), conn)

    async def enqueue_many(
        self, specs: Iterable[Mapping[str, Any] | Sequence[Any]], *, conn: CallerConn | None = None
    ) -> list[int]:
        """Write a batch of tasks in one statement; their ids in input order."""
        call = calls.enqueue_many(self.registry, specs)
        return [] if call is None else await self._run(call, conn)

    async def enqueue_graph(
        self,
        members: Iterable[Mapping[str, Any]],
        *,
        on_complete: Mapping[str, Any] | Sequence[Any] | None = None,
        on_failure: Mapping[str, Any] | Sequence[Any] | None = None,
        conn: CallerConn | None = None,
    ) -> Graph:
        """Enqueue a graph of tasks: :meth:`Conductor.enqueue_graph <pyconductor.client.Conductor.enqueue_graph>`."""
        return await self._run(graphs.enqueue_graph(self.registry, members, on_complete, on_failure), conn)

    async def graph(self, graph_id: int, *, conn: CallerConn | None = None) -> list[GraphNode]:
        """The graph's tasks by layer. Raises GraphNotFound."""
        return await self._run(graphs.graph(graph_id), conn)

    async def cancel_graph(self, graph_id: int) -> int:
        """Cancel every unfinished task of the graph; how many were cancelled."""
        return await self._run(graphs.cancel_graph(graph_id))

    async def dependency_results(self, task_id: int, *, conn: CallerConn | None = None) -> dict[str, Any]:
        """{name: {task_id, status, result, error}} of the task's dependencies."""
        return await self._run(graphs.dependency_results(task_id), conn)

    async def get(self, task_id: int, *, conn: CallerConn | None = None) -> TaskInfo:
        """The task with its attempts. Raises NotFound."""
        return await self._run(calls.get_task(task_id), conn)

    async def cancel(self, task_id: int) -> int:
        return await self._run(calls.cancel(task_id))

    async def retry(self, task_id: int, keep_steps: bool = True) -> int:
        return await self._run(calls.retry(task_id, keep_steps))

    async def rewind(self, task_id: int, from_step: str) -> int:
        """As :meth:`Conductor.rewind <pyconductor.client.Conductor.rewind>`."""
        return await self._run(calls.rewind(task_id, from_step))

    async def fork(self, task_id: int, from_step: str) -> int:
        """As :meth:`Conductor.fork <pyconductor.client.Conductor.fork>`."""
        return await self._run(calls.fork(task_id, from_step))

    async def run_state(self, task_id: int) -> RunState:
        """As :meth:`Conductor.run_state <pyconductor.client.Conductor.run_state>`."""
        return await self._run(calls.run_state(task_id))

    async def send_update(self, task_id: int, name: str, payload: Any = None, *,
                          wait: float | timedelta | None = None) -> UpdateReply:  # fmt: skip
        """As :meth:`Conductor.send_update <pyconductor.client.Conductor.send_update>`."""
        update_id = await self._run(calls.send_update(task_id, name, payload))
        if wait is None:
            return UpdateReply(update_id, task_id, name, None, None)
        limit = wait.total_seconds() if isinstance(wait, timedelta) else float(wait)
        deadline = time.monotonic() + limit
        delay, longest = calls.REPLY_POLL
        while True:
            answer = await self.update_reply(update_id)
            if answer.answered:
                return answer
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"update {update_id} to task {task_id} has no reply after {limit:g}s")
            await asyncio.sleep(min(delay, left))
            delay = min(delay * 2, longest)

    async def update_reply(self, update_id: int) -> UpdateReply:
        """As :meth:`Conductor.update_reply <pyconductor.client.Conductor.update_reply>`."""
        return await self._run(calls.update_reply(update_id))

    async def emit_event(self, name: str, payload: Any = None, *, conn: CallerConn | None = None) -> int:
        """Emit event ``name``; returns how many waiting tasks it woke."""
        return await self._run(calls.emit_event(name, payload), conn)

    async def result(self, task_id: int, timeout: float | timedelta | None = None) -> TaskInfo:
        """Wait until the task is finished and return it, without polling: the
        protocol of :meth:`Conductor.result <pyconductor.client.Conductor.result>`
        (LISTEN ``conductor_done`` on a connection of its own, then read the
        task with ``conductor.watch``, and if unfinished with ``watch`` once
        more, then watch again when a notification names it or says '*'; a
        lost connection listens and watches again;
        leaving, unwatch); behind a transaction-mode pooler it polls (50 ms,
        doubling to 1 s). Raises TimeoutError after ``timeout`` seconds (None:
        no limit), NotFound for an unknown task."""
        limit = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
        deadline = None if limit is None else time.monotonic() + limit
        if not self.profile.listens:
            return await self._poll_result(task_id, limit, deadline)
        watch = calls.watch(task_id)
        conn: psycopg.AsyncConnection[Any] | None = None
        delay = 0.1
        finished = False
        try:
            while True:
                try:
                    if conn is None or conn.closed:
                        conn = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True, connect_timeout=10,
                                                                     **tcp_options(self.dsn))  # fmt: skip
                        await conn.execute(queries.LISTEN_DONE)
                    # listening first, then watching: a finish after the read is heard. The
                    # first call commits the mark; only a read after that commit may decide
                    # to wait (docs/protocol.md, "Waiting for a result"): watch once more
                    info = await self._run(watch, conn)
                    if not info.finished:
                        info = await self._run(watch, conn)
                    if info.finished:
                        finished = True  # watch recorded nothing, or the completion removed it
                        return info
                    if not await _heard_done(conn, task_id, deadline):
                        raise TimeoutError(f"task {task_id} is still {info.status} after {limit:g}s")
                except psycopg.errors.LockNotAvailable:
                    # watch waited 1 s for a row another session holds: look again shortly
                    if deadline is not None and time.monotonic() + delay > deadline:
                        raise TimeoutError(f"task {task_id} stayed locked by another session for {limit:g}s") from None
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 5.0)
                except (psycopg.OperationalError, psycopg.InterfaceError):
                    if conn is not None:
                        await conn.close()
                    conn = None
                    if deadline is not None and time.monotonic() + delay > deadline:
                        raise
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 5.0)
        finally:
            if conn is not None:
                if not finished:
                    await self._unwatch(conn, task_id)
                await conn.close()

    async def _poll_result(self, task_id: int, limit: float | None, deadline: float | None) -> TaskInfo:
        """result() behind a transaction-mode pooler: get_task until finished."""
        delay = 0.05
        while True:
            info = await self.get(task_id)
            if info.finished:
                return info
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"task {task_id} is still {info.status} after {limit:g}s")
            pause = delay if deadline is None else min(delay, max(0.0, deadline - time.monotonic()))
            await asyncio.sleep(pause)
            delay = min(delay * 2, 1.0)

    async def _unwatch(self, conn: psycopg.AsyncConnection[Any], task_id: int) -> None:
        """Best effort: a row left behind only makes the task's completion notify."""
        if calls.is_idle(conn):
            with suppress(Exception):  # must not hide why result() is leaving
                await self._run(calls.unwatch(task_id), conn)

    # -- bus and locks: Conductor's of the same name (see its docstrings) --------------

    async def publish(self, topic: str, payload: Any = None, *, conn: CallerConn | None = None) -> bool:
        """Publish ``payload`` on ``topic``; whether it was sent (someone subscribes)."""
        return await self._run(bus.publish(topic, payload, self.origin), conn)

    @asynccontextmanager
    async def exclusive(
        self, name: str, *, conn: psycopg.AsyncConnection[Any] | None = None
    ) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """Hold the lock ``name`` for the ``async with`` body: in the caller's
        transaction on ``conn``, else in a transaction of a pooled connection
        (yielded) that ends with the body."""
        if conn is not None:
            if conn.autocommit and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
                raise InvalidArgument("exclusive() on an autocommit connection needs a transaction: "
                                      "use it inside `async with conn.transaction():`")  # fmt: skip
            with mapped_errors():
                await conn.execute(queries.EXCLUSIVE, {"name": name})
            yield conn
            return
        async with (await self.pool()).connection() as pooled, pooled.transaction():
            with mapped_errors():
                await pooled.execute(queries.EXCLUSIVE, {"name": name})
            yield pooled


async def _heard_done(conn: psycopg.AsyncConnection[Any], task_id: int, deadline: float | None) -> bool:
    """Wait for a ``conductor_done`` notification naming the task (True), or
    until ``deadline`` (``time.monotonic()``; None: none) passes (False)."""
    while True:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            return False
        # closed here, not by the garbage collector: it holds the connection's lock
        async with aclosing(conn.notifies(timeout=remaining)) as notes:
            async for note in notes:
                if calls.names_task(note.payload, task_id):
                    return True
