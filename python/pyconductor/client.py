"""Conductor: the application object. Enqueue, inspect, cancel and retry tasks,
and register the handlers a :class:`~pyconductor.worker.Worker` runs.

    app = Conductor("postgresql://...")

    @app.task("email.send", queue="mail", max_attempts=5)
    def send(payload, ctx):
        ...

    task_id = send.enqueue({"to": "a@example.com"})
    app.get(task_id).status

No connection is opened until the first call that needs one; the connections
come from a ``psycopg_pool.ConnectionPool`` (autocommit), closed by
``close()`` or the ``with`` block.

Beyond tasks: the event bus (:meth:`Conductor.publish`, :meth:`Conductor.subscribe`,
:mod:`pyconductor.bus`), named locks (:meth:`Conductor.exclusive`) and functions
run on one process of the fleet (:meth:`Conductor.singleton`, :mod:`pyconductor.singleton`).
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime, timedelta
from typing import Any, Self, TypeVar

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from pyconductor import bus, calls, graphs, queries
from pyconductor.bus import Subscription
from pyconductor.calls import AttemptInfo, Call, RunState, TaskInfo, UpdateReply
from pyconductor.errors import InvalidArgument, mapped_errors
from pyconductor.graphs import Graph, GraphNode
from pyconductor.link import DirectConnectionNeeded
from pyconductor.profile import ConnectionProfile, profile_from
from pyconductor.registry import Registry, Task, default_kind
from pyconductor.scheduler import ScheduleSpec
from pyconductor.singleton import SingletonRunner
from pyconductor.wire import dumps_json, load_infinite_times

__all__ = ["AttemptInfo", "Conductor", "RunState", "TaskInfo", "UpdateReply", "dumps_json"]

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")
# what ``conn=`` takes: a connection or cursor of the caller's transaction
CallerConn = psycopg.Connection[Any] | psycopg.Cursor[Any]


def _schedule_name(kind: str) -> str:
    """A valid schedule name for a kind (``__main__.job`` -> ``main__.job``)."""
    return re.sub(r"[^A-Za-z0-9_.:/-]", "-", kind).lstrip("_.:/-")[:200] or "schedule"


class Conductor:
    """The application: a DSN, a lazily opened connection pool, and a task registry.

    ``pool_min``/``pool_max`` size the client pool (the worker uses its own
    dedicated connections). ``origin`` (a random id per instance) labels the
    bus messages this application publishes, so its subscriptions can skip
    them. ``singletons`` holds the functions declared with :meth:`singleton`.
    ``pooler``: 'transaction' when ``dsn`` goes through a transaction-mode
    pooler (default: ``$CONDUCTOR_POOLER``), read once into ``profile``
    (:class:`~pyconductor.profile.ConnectionProfile`): the pool prepares no statement,
    :meth:`result` polls instead of listening, :meth:`subscribe` refuses, and
    a :class:`~pyconductor.Worker` of this app defaults to the same profile.
    Thread-safe.
    """

    def __init__(self, dsn: str, *, pool_min: int = 1, pool_max: int = 10, pooler: str | None = None) -> None:
        self.dsn = dsn
        self.profile: ConnectionProfile = profile_from(pooler)
        self.pool_min = pool_min
        self.pool_max = pool_max
        self.registry = Registry()
        self.origin = uuid.uuid4().hex
        self.singletons: dict[str, tuple[Callable[[threading.Event], Any], float]] = {}
        self._pool: ConnectionPool | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Conductor kinds={self.registry.kinds!r}>"

    @property
    def pooler(self) -> str | None:
        """'transaction' behind a transaction-mode pooler, else None (``profile``'s)."""
        return self.profile.pooler

    # -- connections ---------------------------------------------------------------

    @property
    def pool(self) -> ConnectionPool:
        """The client pool, opened on first use."""
        with self._lock:
            if self._pool is None:
                self._pool = ConnectionPool(
                    self.dsn, min_size=self.pool_min, max_size=self.pool_max,
                    kwargs={"autocommit": True, **self.profile.connect_options(self.dsn)}, open=True,
                    name="pyconductor", configure=load_infinite_times,
                )  # fmt: skip
            return self._pool

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled autocommit connection, for reading the conductor tables directly."""
        with self.pool.connection() as conn:
            yield conn

    def close(self) -> None:
        """Close the pool (a later call opens a new one)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, call: Call[T], conn: CallerConn | None = None) -> T:
        """Run ``call`` on a pooled connection, or on the caller's ``conn`` (a
        connection or cursor: nothing is committed, opened or closed)."""
        with mapped_errors():
            if conn is None:
                with self.pool.connection() as pooled, pooled.cursor(row_factory=dict_row) as cur:
                    cur.execute(call.query, call.params)
                    return call.decode(cur.fetchall())
            with calls.dict_cursor(conn, is_async=False) as cur:
                cur.execute(call.query, call.params)
                return call.decode(cur.fetchall())

    # -- registry ------------------------------------------------------------------

    def task(self, kind: str | None = None, **defaults: Any) -> Callable[[Callable[..., Any]], Task]:
        """Register the decorated function as the handler of ``kind`` (default: the
        function's ``module.qualname``, angle brackets left out: registry.default_kind).
        ``defaults`` are the kind's options (registry.KIND_OPTIONS: queue, priority, concurrency_key, max_attempts,
        max_recoveries, backoff_base, backoff_factor, backoff_max, timeout, concurrency_limit, expires_in):
        applied whenever this kind is enqueued through this app, and written to
        the database by a worker's start (``conductor.configure_kind``), so an
        enqueue from anywhere else gets them too. ``timeout`` (seconds or a
        timedelta, more than 0) limits each attempt: the lease is not extended
        past it and the attempt fails as timed out. ``expires_in`` (seconds or a
        timedelta, more than 0): a task of this kind not started within it of its
        due time ends ``expired``. ``retain_succeeded`` and
        ``retain_failed`` (registry.RETENTION_OPTIONS; seconds or timedeltas)
        are how long this kind's finished runs are kept (None: the settings';
        conductor.apply_retention). The handler is called
        ``fn(payload)`` or, if it takes two positional parameters,
        ``fn(payload, ctx)``; its return value (JSON-serialisable) is the
        task's result."""

        def deco(fn: Callable[..., Any]) -> Task:
            name = kind or default_kind(fn)
            return self.registry.add(Task(self, name, fn, defaults))

        return deco

    def register(self, kind: str, fn: Callable[..., Any], **defaults: Any) -> Task:
        """The non-decorator form of :meth:`task`."""
        return self.registry.add(Task(self, kind, fn, defaults))

    def schedule(
        self,
        cron: str,
        kind: str | None = None,
        *,
        name: str | None = None,
        tz: str = "UTC",
        payload: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> Callable[[Callable[..., Any]], Task]:
        """Declare a schedule: enqueue ``kind`` at every due time of ``cron`` (5
        fields, or 6 with seconds first) in time zone ``tz``. Workers create or
        update the declared schedules at start (``conductor.create_schedule(...,
        replace => true)``), so a schedule created in SQL works the same.

        ``app.schedule("0 3 * * *", "nightly_report")`` declares it for a kind
        registered elsewhere; as a decorator, ``@app.schedule("*/5 * * * *",
        tz="Europe/Berlin")`` also registers the function as the handler of the
        kind (default: the function's ``module.qualname``, angle brackets left out:
        registry.default_kind). ``name`` defaults to the kind. ``options``: queue, priority, max_attempts, dedupe_key,
        concurrency_key, concurrency_limit, expires_in (seconds or a timedelta: a fire not
        started that long after it is enqueued ends expired; None: the kind's), rate_key,
        catch_up ('once' or 'all'), catch_up_limit; queue,
        priority, max_attempts and concurrency_key default to the kind's
        registered ones (a kind's concurrency_limit applies when the task fires: SQL's)."""

        def declare(k: str) -> None:
            task = self.registry.get(k)
            inherited: dict[str, Any] = {
                key: task.defaults[key]
                for key in ("queue", "priority", "max_attempts", "concurrency_key")
                if task is not None and key in task.defaults
            }
            given: dict[str, Any] = {**inherited, **options}
            self.registry.add_schedule(ScheduleSpec(
                name=name or _schedule_name(k), cron=cron, kind=k, payload=dict(payload or {}), timezone=tz,
                **given,
            ))  # fmt: skip

        if kind is not None:
            declare(kind)

        def deco(fn: Callable[..., Any]) -> Task:
            if isinstance(fn, Task):
                task = fn
            else:
                k = kind or default_kind(fn)
                task = self.registry.get(k) or self.registry.add(Task(self, k, fn, {}))
            if kind is None:
                declare(task.kind)
            return task

        return deco

    # -- enqueue -------------------------------------------------------------------

    def task_spec(self, kind: str, payload: Any = None, **options: Any) -> dict[str, Any]:
        """The JSON object ``conductor.enqueue_many`` reads for one task
        (:func:`pyconductor.calls.task_spec` with this app's registry)."""
        return calls.task_spec(self.registry, kind, payload, **options)

    def enqueue(
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
        """Write one task and return its id.

        ``payload`` is a JSON object (dict; None means ``{}``). Options left None
        take the options registered for ``kind`` with :meth:`task`, else the
        kind's configuration in the database (``conductor.configure_kind``, from
        any client), else the engine's defaults (queue 'default', priority 0,
        due now, max_attempts 1, no timeout, ...). ``timeout`` limits each
        attempt (seconds or a timedelta; more than 0, at most 30 days).
        ``expires_in`` (the same units and bounds) is how long after it is due
        the task may wait for its first start: past it no worker starts it and
        the reaper ends it ``expired`` (a task started once never expires;
        docs/expiry.md).
        ``rate_key`` (1-1000 bytes, e.g. the customer's id): the task draws
        from that key's own bucket under a per-key rate limit of its queue or
        kind (``set_rate_limit(..., per_key => true)``, ``pyconductor
        rate-limit --per-key``; docs/flow-control.md); None: no per-key limit
        applies to it.
        A ``dedupe_key`` held by an unfinished task returns that task's id.
        ``concurrency_limit`` (1-10000, with a ``concurrency_key``): at most
        that many tasks of the key run at once (None: the kind's, else 1).
        With a ``dedupe_key`` (docs/uniqueness.md, docs/debounce.md):
        ``dedupe_window`` (an aligned period in UTC: a task finished in it
        still holds the key), ``dedupe_states`` (the statuses that hold it:
        queued, running, waiting and any finished ones), ``on_duplicate``
        ('ignore', 'replace': a queued holder takes payload and run_at,
        'preserve_run_at': the payload), ``debounce`` and ``debounce_max``
        (a queued holder takes the payload and runs after that much quiet,
        never later than its first enqueue + debounce_max).
        ``traceparent``: the W3C trace context the worker's span continues;
        None: the current span's when opentelemetry is installed
        (:mod:`pyconductor.tracing`), else none.

        ``conn``: a psycopg Connection or Cursor of the caller's transaction.
        The statement runs there and nothing is committed, opened or closed:
        the task exists for workers when the caller commits, not at all if it
        rolls back (a savepoint's rollback drops only what was enqueued in it);
        on an autocommit connection it is committed at once. After a server
        error the caller's transaction is aborted, as psycopg leaves it after
        any failed statement (``conn.info.transaction_status`` INERROR): roll
        it (or the enclosing ``conn.transaction()`` savepoint) back.

        Raises InvalidKind, InvalidPayload, PayloadTooLarge, InvalidQueue,
        InvalidArgument, InvalidStatus, DedupeOptionsWithoutKey,
        InvalidDedupeStates, DebounceConflict, NotFound (parent)."""
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
        return self._run(calls.enqueue(self.registry, kind, payload, options), conn)

    def enqueue_many(
        self, specs: Iterable[Mapping[str, Any] | Sequence[Any]], *, conn: CallerConn | None = None
    ) -> list[int]:
        """Write a batch of tasks in one statement; returns their ids in input order.

        Each spec is a dict with ``kind``, ``payload`` and any option of
        :meth:`enqueue`, or a ``(kind, payload)`` pair. All or nothing.
        ``conn``: the caller's connection or cursor, as for :meth:`enqueue`."""
        call = calls.enqueue_many(self.registry, specs)
        return [] if call is None else self._run(call, conn)

    def enqueue_graph(
        self,
        members: Iterable[Mapping[str, Any]],
        *,
        on_complete: Mapping[str, Any] | Sequence[Any] | None = None,
        on_failure: Mapping[str, Any] | Sequence[Any] | None = None,
        conn: CallerConn | None = None,
    ) -> Graph:
        """Enqueue a graph of tasks in one transaction (docs/graphs.md). Each
        member is a spec dict as :meth:`enqueue_many` takes, with a ``name``,
        optionally ``after`` (names it runs after) and ``run_on_failure``. A
        callback is a spec dict or a ``(kind, payload)`` pair: ``on_complete``
        runs once every member has finished, ``on_failure`` once at the first
        member that does not succeed. Raises InvalidGraph, UnknownDependency,
        DependencyCycle, and what enqueue_many raises."""
        return self._run(graphs.enqueue_graph(self.registry, members, on_complete, on_failure), conn)

    def graph(self, graph_id: int, *, conn: CallerConn | None = None) -> list[GraphNode]:
        """The graph's tasks by layer, with what each runs after. Raises GraphNotFound."""
        return self._run(graphs.graph(graph_id), conn)

    def cancel_graph(self, graph_id: int) -> int:
        """Cancel every unfinished task of the graph (members, callbacks, their
        children); no callback runs after it. Returns how many were cancelled.
        Raises GraphNotFound."""
        return self._run(graphs.cancel_graph(graph_id))

    def dependency_results(self, task_id: int, *, conn: CallerConn | None = None) -> dict[str, Any]:
        """{name: {task_id, status, result, error}} of the task's dependencies."""
        return self._run(graphs.dependency_results(task_id), conn)

    # -- read and act --------------------------------------------------------------

    def get(self, task_id: int, *, conn: CallerConn | None = None) -> TaskInfo:
        """The task with its attempts. Raises NotFound. ``conn``: read it on the
        caller's connection or cursor (sees the caller's uncommitted enqueue)."""
        return self._run(calls.get_task(task_id), conn)

    def cancel(self, task_id: int) -> int:
        """Cancel the task and its unfinished descendants; returns how many were
        cancelled. Running ones stop at their worker's next heartbeat. Raises NotFound."""
        return self._run(calls.cancel(task_id))

    def retry(self, task_id: int, keep_steps: bool = True) -> int:
        """Requeue a failed, dead, timed-out, expired or cancelled task with fresh counts;
        returns its id. A durable run keeps its checkpointed steps (it resumes
        after them) unless ``keep_steps=False``. Raises NotFound, InvalidState,
        DedupeConflict."""
        return self._run(calls.retry(task_id, keep_steps))

    def rewind(self, task_id: int, from_step: str) -> int:
        """Restart a finished run (succeeded too) from step ``from_step``: the steps
        saved before it are kept, it and every later one run again; returns the
        task's id. A rewound spawn's unfinished child is cancelled, and the replay
        spawns a new one (docs/workflows.md). Raises NotFound, UnknownStep,
        InvalidState (the run is unfinished), DedupeConflict."""
        return self._run(calls.rewind(task_id, from_step))

    def fork(self, task_id: int, from_step: str) -> int:
        """A copy of a finished run, due now, carrying the steps saved before
        ``from_step``: it runs from that step on; returns the copy's id (its
        ``get`` names the source in ``forked_from``). The source is not changed.
        Raises NotFound, UnknownStep, InvalidState."""
        return self._run(calls.fork(task_id, from_step))

    def run_state(self, task_id: int) -> RunState:
        """The state the run's handler published last (``ctx.publish_state``) and
        when, while it runs, waits, or after it ended. Raises NotFound."""
        return self._run(calls.run_state(task_id))

    def send_update(self, task_id: int, name: str, payload: Any = None, *,
                    wait: float | timedelta | None = None) -> UpdateReply:  # fmt: skip
        """Send update ``name`` with ``payload`` (JSON) to the unfinished run
        ``task_id``: the run's ``ctx.wait_for_update(name)`` receives it and
        answers with ``ctx.reply``. Returns the update, unanswered; with
        ``wait`` (seconds), waits that long for the reply (polling
        ``update_reply``: 50 ms, doubling to 1 s) and returns the update with
        it, or raises TimeoutError. Raises NotFound, RunFinished (QC217),
        InvalidUpdateName (QC131)."""
        update_id = self._run(calls.send_update(task_id, name, payload))
        if wait is None:
            return UpdateReply(update_id, task_id, name, None, None)
        limit = wait.total_seconds() if isinstance(wait, timedelta) else float(wait)
        return calls.await_reply(lambda: self.update_reply(update_id), limit)

    def update_reply(self, update_id: int) -> UpdateReply:
        """The update with the run's reply (``reply`` and ``replied_at`` None
        until it replied). Raises NotFound."""
        return self._run(calls.update_reply(update_id))

    def emit_event(self, name: str, payload: Any = None, *, conn: CallerConn | None = None) -> int:
        """Emit event ``name`` with ``payload`` (a dict, at most
        ``conductor.settings.max_payload_bytes``; None means ``{}``) and return how
        many waiting tasks it woke. The first payload for a name wins; an event
        emitted before anyone waits still counts. ``conn``: the caller's
        connection or cursor, as for :meth:`enqueue` (the waiting tasks wake
        when it commits). Raises InvalidArgument, InvalidPayload (not a JSON
        object) or PayloadTooLarge; psycopg.errors.SerializationFailure
        (40001) when another transaction is inserting the same new event and
        has not committed within 100 ms: nothing was recorded, emit again."""
        return self._run(calls.emit_event(name, payload), conn)

    def result(self, task_id: int, timeout: float | timedelta | None = None) -> TaskInfo:
        """Wait until the task is finished and return it (status, result, error).

        Without polling: on a connection of its own, LISTENs on ``conductor_done``,
        then reads the task with ``conductor.watch`` (which also asks its
        completion to notify this session) and, if it is unfinished, with
        ``watch`` once more (the first call committed that request, so this
        read misses no end), sleeps until a notification names it (or says
        '*'), and watches again; giving up, it unwatches. It holds no lock
        while it waits. A task row another session holds (a cancel left open
        in its transaction) is looked at again after 0.1 s, doubling. Behind a
        transaction-mode pooler (``pooler``), which keeps no session to listen
        on, it polls instead (50 ms, doubling to 1 s). Raises TimeoutError
        after ``timeout`` seconds (None: wait as long as it takes), NotFound
        for an unknown task."""
        limit = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
        deadline = None if limit is None else time.monotonic() + limit
        if not self.profile.listens:
            return self._poll_result(task_id, limit, deadline)
        watch = calls.watch(task_id)
        conn: psycopg.Connection[Any] | None = None
        delay = 0.1
        finished = False
        try:
            while True:
                try:
                    if conn is None or conn.closed:
                        conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=10,
                                               **self.profile.connect_options(self.dsn))  # fmt: skip
                        conn.execute(queries.LISTEN_DONE)
                    # listening first, then watching: a finish after the read is heard. The
                    # first call commits the mark; only a read after that commit may decide
                    # to wait (docs/protocol.md, "Waiting for a result"): watch once more
                    info = self._run(watch, conn)
                    if not info.finished:
                        info = self._run(watch, conn)
                    if info.finished:
                        finished = True  # watch recorded nothing, or the completion removed it
                        return info
                    if not _heard_done(conn, task_id, deadline):
                        raise TimeoutError(f"task {task_id} is still {info.status} after {limit:g}s")
                except psycopg.errors.LockNotAvailable:
                    # watch waited 1 s for a row another session holds (a cancel left open in
                    # its transaction): look again shortly, on the same connection
                    if deadline is not None and time.monotonic() + delay > deadline:
                        raise TimeoutError(f"task {task_id} stayed locked by another session for {limit:g}s") from None
                    time.sleep(delay)
                    delay = min(delay * 2, 5.0)
                except (psycopg.OperationalError, psycopg.InterfaceError):
                    # the listening connection dropped: listen again, then watch again
                    if conn is not None:
                        conn.close()
                    conn = None
                    if deadline is not None and time.monotonic() + delay > deadline:
                        raise
                    time.sleep(delay)
                    delay = min(delay * 2, 5.0)
        finally:
            if conn is not None:
                if not finished:
                    self._unwatch(conn, task_id)
                conn.close()

    def _poll_result(self, task_id: int, limit: float | None, deadline: float | None) -> TaskInfo:
        """result() behind a transaction-mode pooler: get_task until finished."""
        delay = 0.05
        while True:
            info = self.get(task_id)
            if info.finished:
                return info
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"task {task_id} is still {info.status} after {limit:g}s")
            pause = delay if deadline is None else min(delay, max(0.0, deadline - time.monotonic()))
            time.sleep(pause)
            delay = min(delay * 2, 1.0)

    def _unwatch(self, conn: psycopg.Connection[Any], task_id: int) -> None:
        """Best effort: a row left behind only makes the task's completion notify."""
        if calls.is_idle(conn):
            with suppress(Exception):  # must not hide why result() is leaving
                self._run(calls.unwatch(task_id), conn)

    # -- bus, locks, singletons ----------------------------------------------------------

    def publish(self, topic: str, payload: Any = None, *, conn: CallerConn | None = None) -> bool:
        """Publish ``payload`` (any JSON value; None means ``{}``) on ``topic``
        with this application's origin; returns whether it was sent (False:
        nobody subscribes to the topic, so nothing is). Subscribers receive it
        when the transaction commits: ``conn``, the caller's connection or
        cursor as for :meth:`enqueue` (never on rollback), else at once.
        Raises InvalidArgument (a topic that is empty, '*' or over 200
        characters), PayloadTooLarge (the message over 7999 bytes)."""
        return self._run(bus.publish(topic, payload, self.origin), conn)

    def subscribe(self, topics: str | Iterable[str], *, skip_own: bool = True) -> Subscription:
        """A :class:`~pyconductor.bus.Subscription` to ``topics`` ('*': every
        topic) on a connection of its own: iterate it (or ``get(timeout)``) for
        :class:`~pyconductor.bus.Message` and, after a reconnect,
        :class:`~pyconductor.bus.Missed`; close it (or use ``with``). With
        ``skip_own``, messages this application published are skipped.
        Messages from transactions that commit after this returns arrive;
        read the state they describe after subscribing. Raises
        DirectConnectionNeeded behind a transaction-mode pooler."""
        if not self.profile.listens:
            raise DirectConnectionNeeded("the event bus (subscribe)", "it LISTENs on a session of its own")
        return Subscription(self.dsn, topics, origin=self.origin, skip_own=skip_own)

    @contextmanager
    def exclusive(self, name: str, *, conn: psycopg.Connection[Any] | None = None) -> Iterator[psycopg.Connection[Any]]:
        """Hold the lock ``name`` (``conductor.exclusive``, a transaction-scoped
        advisory lock) for the ``with`` body: no other holder of the same name,
        in any process or in SQL, runs at the same time; it waits its turn.

        With ``conn`` (a connection in a transaction: ``with conn.transaction():``,
        or not autocommit) the lock is taken there and held until the caller's
        transaction ends, which may be after the body. Without, a pooled
        connection runs the body in a transaction of its own, committed when
        the body ends (rolled back if it raises), which releases the lock; the
        body may use it (it is yielded). Raises InvalidArgument for an empty
        name or an autocommit ``conn`` outside a transaction (the lock would be
        released at once)."""
        if conn is not None:
            if conn.autocommit and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
                raise InvalidArgument("exclusive() on an autocommit connection needs a transaction: "
                                      "use it inside `with conn.transaction():`")  # fmt: skip
            with mapped_errors():
                conn.execute(queries.EXCLUSIVE, {"name": name})
            yield conn
            return
        with self.pool.connection() as pooled, pooled.transaction():
            with mapped_errors():
                pooled.execute(queries.EXCLUSIVE, {"name": name})
            yield pooled

    def singleton(self, name: str, *, failover: float = 2.0) -> Callable[[F], F]:
        """Declare ``fn(stop: threading.Event)`` to run on exactly one process of
        the fleet, under the leader lease ``'singleton:' || name``: every process
        that runs :meth:`run_singletons` (``pyconductor serve``) contends for it
        every ``failover`` seconds; the holder runs ``fn`` until it returns or
        ``stop`` is set (stop asked, or the lock's connection lost), so when the
        holder dies another takes over within about ``failover`` seconds.
        ``fn`` should return soon after ``stop`` is set."""

        def deco(fn: F) -> F:
            if not name:
                raise InvalidArgument("a singleton needs a name")
            self.singletons[name] = (fn, failover)
            return fn

        return deco

    def run_singletons(self) -> list[SingletonRunner]:
        """Start a :class:`~pyconductor.singleton.SingletonRunner` for each
        declared singleton; stop them with ``runner.stop()``."""
        runners = [SingletonRunner(self.dsn, name, fn, failover=failover)
                   for name, (fn, failover) in self.singletons.items()]  # fmt: skip
        for runner in runners:
            runner.start()
        return runners


def _heard_done(conn: psycopg.Connection[Any], task_id: int, deadline: float | None) -> bool:
    """Wait for a ``conductor_done`` notification naming the task (True), or
    until ``deadline`` (``time.monotonic()``; None: none) passes (False)."""
    while True:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            return False
        if any(calls.names_task(note.payload, task_id) for note in conn.notifies(timeout=remaining)):
            return True
