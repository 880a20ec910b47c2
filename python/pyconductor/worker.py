"""Worker: claims tasks, runs their handlers on a thread pool, heartbeats, reports.

The worker decides nothing the database decides (retries, backoff, expiry,
dead-lettering are SQL); it only:

- claims in batches exactly as many tasks as it has free slots
  (``conductor.claim``; a slot whose result awaits its report counts as busy
  once concurrency such results wait, so it holds at most 2 x concurrency
  tasks), again at once while claims come back full, otherwise
  waits for a ``NOTIFY conductor`` naming one of its queues, or the poll
  interval;
- runs each handler on one of ``concurrency`` handler threads, fed through a
  ``queue.SimpleQueue`` (an unknown kind is failed with
  ``unknown_kind => true`` without running);
- reports successes in batches (``conductor.complete_many``: what is queued
  goes at once when no handler runs, else after a few milliseconds), failures
  one by one with the full traceback (``conductor.fail``);
- extends the leases of everything it holds with one ``conductor.heartbeat``
  call per interval, and flags the handlers of tasks answered 'cancelled' or
  'lost' (``ctx.cancelled``), whose results are then discarded;
- runs ``conductor.reap()`` every ``reap_interval``, or sooner when
  ``conductor.next_wake()`` says a wait's deadline or a lease's expiry comes
  first (durable sleeps and timeouts wake on time; the reaper also looks again
  when a handler parks a wait, or a claim's lease ends before its next run);
- gives each handler's ``ctx`` (durable steps, spawn, waits) a small connection
  pool of its own, opened on the first such call and sized to ``concurrency``.
  A wait that parks the task (``conductor.suspend`` answered 'waiting') has
  already closed the attempt in SQL: the worker reports nothing else for it and
  frees the slot. A step refused because the lease was lost or the task
  cancelled is treated like a refused report (warning, outcome discarded).

Each of claim, report, heartbeat, reap and LISTEN has its own connection, so a
slow one never blocks another. A lost connection is retried with capped
exponential backoff (0.1 s to 5 s); handlers keep running meanwhile and held
results are reported once the database is back (a refusal, because the lease
was lost meanwhile, is logged at WARNING and the result dropped).

``start()`` connects once first: a DSN that can never work (it does not
parse, its host name does not resolve, the login is refused, the database or
role does not exist) raises :class:`~pyconductor.errors.DatabaseUnusable`
there, with a message that has no password; a server that is down or
restarting is only logged, and waited for as above. Once running, such an
error is logged at ERROR and retried (a password rotation or a restore may
be under way).

``stop()`` takes a bounded time whether the database answers or not: the
grace period for running handlers, then ``SHUTDOWN_DB_TIMEOUT`` (5 s) for
the reports and releases still to send, then at most 3 s for the other
threads to end and the deregistration. What is not sent by then is left to
the leases and the reaper; a thread stuck on a connection that stopped
answering is a daemon and is left behind.

Logging goes to ``logging.getLogger("pyconductor")`` with ``extra`` keys
task_id, kind, queue, attempt, worker_id, duration_ms.
"""

from __future__ import annotations

import logging
import os
import queue as queue_mod
import secrets
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from pyconductor import __version__, queries
from pyconductor.client import _interval
from pyconductor.context import TaskContext, _Suspended
from pyconductor.dsn import check_connect, permanent_problem, redact_dsn
from pyconductor.errors import ConductorError, LeaseLost, NotFound, RetryLater, TaskCancelled, mapped_errors, translate
from pyconductor.registry import POLICY_OPTIONS
from pyconductor.scheduler import Scheduler
from pyconductor.schema import check_schema
from pyconductor.wire import bigint_array, dumps_json, storable_text, text_array, use_fast_loads

if TYPE_CHECKING:
    from pyconductor.client import Conductor
    from pyconductor.registry import Task

__all__ = ["Worker", "default_concurrency"]

logger = logging.getLogger("pyconductor")

T = TypeVar("T")

# What a lost or unusable connection raises: reconnect and try again.
CONNECTION_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError)
BACKOFF_MIN = 0.1
BACKOFF_MAX = 5.0
LISTEN_PROBE_AFTER = 30.0
CONNECT_TIMEOUT = 10
SHUTDOWN_DB_TIMEOUT = 5.0  # seconds stop() gives the database after the grace (reports, releases)
DEREGISTER_TIMEOUT = 2.0  # ... of which deregistering may take this much
CTX_RETRY_FOR = 30.0  # seconds a handler's step call retries a lost connection
REAP_MIN_WAIT = 0.02  # seconds between reaps when next_wake is due now
REAP_STUCK_WAIT = 0.5  # ... and when it was already due at the last reap
DEFAULT_CONCURRENCY = 32


def default_concurrency() -> int:
    """$CONDUCTOR_WORKER_MAX_INFLIGHT, else 32."""
    value = os.environ.get("CONDUCTOR_WORKER_MAX_INFLIGHT")
    return int(value) if value else DEFAULT_CONCURRENCY


def _seconds(value: float | timedelta) -> float:
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


class _Aborted(Exception):
    """A retry loop was told to give up."""


def _log_connection_trouble(what: str, exc: BaseException, delay: float, worker_id: str) -> None:
    """A lost or refused connection that will be retried in ``delay`` seconds, password-free:
    WARNING while it may pass by itself, ERROR when it cannot (see pyconductor.dsn)."""
    lines = str(exc).strip().splitlines()
    text = redact_dsn(lines[0]) if lines else type(exc).__name__
    problem = permanent_problem(exc)
    if problem is None:
        logger.warning("%s connection lost (%s); retrying in %.1fs", what, text, delay, extra={"worker_id": worker_id})
    else:
        logger.error("%s connection: %s (%s); retrying in %.1fs, but this does not pass by itself: check the "
                     "DSN and the server", what, problem, text, delay, extra={"worker_id": worker_id})  # fmt: skip


def _bounded(name: str, fn: Callable[[], object], timeout: float) -> bool:
    """Run ``fn`` on a daemon thread and wait ``timeout`` seconds at most: whether
    it ended in time. One that did not is left running (blocked on a connection
    that stopped answering, say); it dies with the process."""
    thread = threading.Thread(target=fn, name=f"pyconductor-{name}", daemon=True)
    thread.start()
    thread.join(timeout)
    return not thread.is_alive()


class _Link:
    """One dedicated autocommit connection, (re)opened on demand."""

    def __init__(self, dsn: str, name: str, worker_id: str) -> None:
        self.dsn = dsn
        self.name = name
        self.worker_id = worker_id
        self.conn: psycopg.Connection[Any] | None = None

    def get(self) -> psycopg.Connection[Any]:
        if self.conn is None or self.conn.closed:
            self.conn = psycopg.connect(
                self.dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT, application_name=f"pyconductor {self.name} {self.worker_id}"[:63]
            )
            use_fast_loads(self.conn)
        return self.conn

    def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - closing a broken connection
                pass

    def call(self, fn: Callable[[psycopg.Connection[Any]], T], abort: threading.Event) -> T:
        """``fn(conn)``; on a connection error reconnect with capped exponential
        backoff and call again, until it works or ``abort`` is set (_Aborted)."""
        delay = BACKOFF_MIN
        while True:
            try:
                return fn(self.get())
            except CONNECTION_ERRORS as exc:
                self.close()
                if abort.is_set():
                    raise _Aborted from exc
                _log_connection_trouble(self.name, exc, delay, self.worker_id)
                if abort.wait(delay):
                    raise _Aborted from exc
                delay = min(delay * 2, BACKOFF_MAX)

    def rows(self, query: str, params: dict[str, Any], abort: threading.Event) -> list[dict[str, Any]]:
        def run(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
            with conn.cursor(row_factory=dict_row) as cur:
                cur.execute(query, params)
                return cur.fetchall() if cur.description else []

        return self.call(run, abort)


@dataclass
class _Report:
    """A held attempt's outcome, waiting to be sent."""

    what: str  # 'ok', 'fail', 'unknown', 'release'
    ctx: TaskContext
    result: str | None = None  # JSON text
    error: str | None = None
    traceback: str | None = None
    duration_ms: float | None = None
    retry_at: datetime | None = None  # the handler asked for this retry time (RetryLater)
    retryable: bool = True  # False: the handler finished but its result cannot be stored


def _policy_params(policy: dict[str, Any]) -> dict[str, Any]:
    """configure_kind's parameters, intervals as the client writes them."""
    return {
        key: _interval(value) if key in ("backoff_base", "backoff_max") and value is not None else value
        for key, value in policy.items()
    }


def _extra(ctx: TaskContext, duration_ms: float | None = None) -> dict[str, Any]:
    extra: dict[str, Any] = {
        "task_id": ctx.task_id, "kind": ctx.kind, "queue": ctx.queue,
        "attempt": ctx.attempt, "worker_id": ctx.worker_id,
    }  # fmt: skip
    if duration_ms is not None:
        extra["duration_ms"] = round(duration_ms, 3)
    return extra


def _error_text(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__qualname__}: {text}" if text else type(exc).__qualname__


class Worker:
    """Runs the handlers registered on ``app`` for tasks of ``queues`` (None: all).

    ``concurrency`` (default $CONDUCTOR_WORKER_MAX_INFLIGHT or 32) bounds the
    tasks running at once; ``lease``, ``heartbeat_interval``, ``poll_interval``,
    ``reap_interval`` and ``shutdown_grace`` are seconds (or timedeltas).
    ``dsn`` defaults to the app's. ``report_batch`` caps one complete_many call;
    ``report_linger`` is how long a result may wait for company (seconds) while
    other handlers are running.

    ``start()`` returns at once; ``stop(grace)`` stops claiming, waits for the
    running tasks up to the grace period, then releases the rest;
    ``run()`` blocks until SIGTERM/SIGINT (a second one exits with code 130).
    """

    def __init__(
        self,
        app: Conductor,
        queues: Sequence[str] | str | None = None,
        concurrency: int | None = None,
        *,
        lease: float | timedelta = 60.0,
        heartbeat_interval: float | timedelta = 10.0,
        poll_interval: float | timedelta = 10.0,
        reap_interval: float | timedelta = 30.0,
        shutdown_grace: float | timedelta = 30.0,
        worker_id: str | None = None,
        dsn: str | None = None,
        report_batch: int = 500,
        report_linger: float = 0.005,
        version: str | None = None,
        process_tasks: bool = True,
        run_scheduler: bool = True,
        tick_interval: float = 5.0,
        claim_linger: float = 0.002,
    ) -> None:
        if isinstance(queues, str):
            queues = [q.strip() for q in queues.split(",") if q.strip()]
        self.queues: list[str] | None = list(queues) if queues else None
        self.concurrency = concurrency if concurrency is not None else default_concurrency()
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be 1 or more, got {self.concurrency}")
        self.app = app
        self.dsn = dsn or app.dsn
        self.lease = timedelta(seconds=_seconds(lease))
        self.heartbeat_interval = _seconds(heartbeat_interval)
        self.poll_interval = _seconds(poll_interval)
        self.reap_interval = _seconds(reap_interval)
        self.shutdown_grace = _seconds(shutdown_grace)
        self.host = socket.gethostname()
        self.worker_id = worker_id or f"{self.host}-{os.getpid()}-{secrets.token_hex(3)}"
        self.report_batch = report_batch
        self.report_linger = report_linger
        self.version = version or f"pyconductor {__version__}"
        self.claim_linger = claim_linger
        # a claim waits (claim_linger at most) until this many slots are free
        self._claim_at_least = max(1, self.concurrency // 4)
        self.process_tasks = process_tasks
        self.run_scheduler = run_scheduler
        self.tick_interval = tick_interval
        self.roles = [role for role, on in (("worker", process_tasks), ("scheduler", run_scheduler)) if on]
        if not self.roles:
            raise ValueError("a Worker with neither tasks nor the scheduler has nothing to do")
        self._scheduler: Scheduler | None = None

        # fn(ctx, outcome, handler_ms) once the database has taken a handler's outcome:
        # 'succeeded', 'retried' (fail requeued the task), 'failed' (fail ended it:
        # failed or dead), 'refused' (its attempt no longer held the task). Called on
        # the reporting thread, before the worker's stats count it; keep it quick.
        # What /metrics counts.
        self.outcome_listeners: list[Callable[[TaskContext, str, float | None], None]] = []
        self._lock = threading.Lock()
        self._held: dict[int, TaskContext] = {}  # claimed, not yet reported
        self._running: dict[int, TaskContext] = {}  # handler running
        self._idle = threading.Condition(self._lock)  # notified when _running empties
        # (task, ctx) for the handler threads; None tells one thread to exit. A
        # SimpleQueue and plain threads, not a ThreadPoolExecutor: its Future per
        # task (each with a Condition) cost more CPU than the worker's own
        # bookkeeping for a short task.
        self._jobs: queue_mod.SimpleQueue[tuple[Task, TaskContext] | None] = queue_mod.SimpleQueue()
        self._handler_threads: list[threading.Thread] = []
        self._reports: queue_mod.SimpleQueue[_Report] = queue_mod.SimpleQueue()
        self._wake = threading.Event()  # claim now
        self._stopping = threading.Event()  # no more claims
        self._reports_closing = threading.Event()  # reporter: drain and exit
        self._reports_abort = threading.Event()  # reporter: give up retrying
        self._halt = threading.Event()  # heartbeat, reaper, listener: exit
        self._stop_requested = threading.Event()  # run(): a signal came
        self._threads: dict[str, threading.Thread] = {}
        self._started = False
        self._stopped = False
        self.abandoned = 0
        """How many handlers were still running when stop() returned (released, not waited for)."""
        self.stats: dict[str, int] = dict.fromkeys(
            ("claimed", "succeeded", "failed", "unknown", "discarded", "refused", "released", "suspended"), 0
        )
        """Counters since start: claimed, succeeded, failed, unknown, discarded, refused, released, suspended."""
        self._ctx_pool: ConnectionPool | None = None  # handlers' durable calls, opened on first use
        self._reap_wake = threading.Event()  # reaper: look at next_wake again (or halt)
        self._reap_due = float("inf")  # monotonic time of the reaper's next run (inf: running, or not yet)

    def __repr__(self) -> str:
        return f"<Worker {self.worker_id} queues={self.queues} concurrency={self.concurrency}>"

    # -- state ---------------------------------------------------------------------

    @property
    def running(self) -> int:
        """How many handlers are running now."""
        return len(self._running)

    @property
    def leader_locks(self) -> dict[str, bool]:
        """The leader locks this worker contends for, and whether it holds each now."""
        return {"scheduler": self._scheduler.is_leader} if self._scheduler is not None else {}

    @property
    def held(self) -> list[int]:
        """The attempt ids this worker holds (running, or finished and not yet reported)."""
        with self._lock:
            return list(self._held)

    def _count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.stats[key] += n

    def _log_extra(self) -> dict[str, Any]:
        return {"worker_id": self.worker_id}

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> Worker:
        """Check the DSN, start the background threads and return. Raises
        DatabaseUnusable when the DSN can never work (see the module doc)."""
        if self._started:
            raise RuntimeError("a Worker starts once")
        not_yet = check_connect(self.dsn, CONNECT_TIMEOUT)
        if not_yet is not None:
            lines = str(not_yet).strip().splitlines()
            logger.warning("database not reachable yet (%s); starting anyway, retrying in the background",
                           redact_dsn(lines[0]) if lines else type(not_yet).__name__,
                           extra=self._log_extra())  # fmt: skip
        else:
            self._check_database()
        self._declare()
        self._started = True
        if self.run_scheduler:
            self._scheduler = Scheduler(self.dsn, tick_interval=self.tick_interval).start()
        if self.process_tasks:
            for n in range(self.concurrency):
                thread = threading.Thread(target=self._handler_loop, name=f"pyconductor-task_{n}", daemon=True)
                self._handler_threads.append(thread)
                thread.start()
        self._claim_link = _Link(self.dsn, "claim", self.worker_id)
        self._report_link = _Link(self.dsn, "report", self.worker_id)
        self._heartbeat_link = _Link(self.dsn, "heartbeat", self.worker_id)
        self._reap_link = _Link(self.dsn, "reap", self.worker_id)
        loops = [
            ("claim", self._claim_loop), ("report", self._report_loop), ("heartbeat", self._heartbeat_loop),
            ("reap", self._reap_loop),
        ]  # fmt: skip
        if self.process_tasks:
            loops.append(("listen", self._listen_loop))
        for name, target in loops:
            thread = threading.Thread(target=target, name=f"pyconductor-{name}", daemon=True)
            self._threads[name] = thread
            thread.start()
        logger.info("worker %s started (roles %s, queues %s, concurrency %d, kinds %s)", self.worker_id,
                    ",".join(self.roles), ",".join(self.queues) if self.queues else "*", self.concurrency,
                    ",".join(self.app.registry.kinds) or "none", extra=self._log_extra())  # fmt: skip
        return self

    def _check_database(self) -> None:
        """Refuse, before anything runs, a schema of another release
        (SchemaMismatch) and options the database would refuse on every claim
        (a lease over conductor.settings.max_lease: InvalidArgument). A claim
        of no task checks the options as every claim will."""
        with mapped_errors(), psycopg.connect(self.dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT) as conn:
            check_schema(conn)
            if self.process_tasks:
                conn.execute(queries.CLAIM, {"worker_id": self.worker_id, "queues": self.queues, "max_tasks": 0,
                                             "lease": self.lease})  # fmt: skip

    def _declare(self) -> None:
        """Write what the app declares in code to the database, before anything
        runs: each registered kind's retry policy (``conductor.configure_kind``,
        so a task of the kind enqueued from psql gets it too) and, with the
        scheduler role, the declared schedules. A bad declaration (an invalid
        cron line, say) raises here."""
        policies = [
            {"kind": task.kind, **{key: task.defaults.get(key) for key in POLICY_OPTIONS}}
            for task in self.app.registry
            if any(task.defaults.get(key) is not None for key in POLICY_OPTIONS)
        ]
        if policies:
            with mapped_errors(), psycopg.connect(self.dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT) as conn, \
                    conn.transaction():  # fmt: skip
                for policy in policies:
                    conn.execute(queries.CONFIGURE_KIND, _policy_params(policy))
        if self.run_scheduler and self.app.registry.schedules:
            Scheduler(self.dsn).sync_schedules(self.app.registry.schedules)

    def stop(self, grace: float | timedelta | None = None) -> None:
        """Stop claiming at once; wait for running tasks up to ``grace`` seconds
        (default ``shutdown_grace``), then hand the rest back with
        ``conductor.release``; report what is held, deregister, close. Returns
        within grace + SHUTDOWN_DB_TIMEOUT + 3 s even when the database does
        not answer (see the module doc)."""
        if not self._started or self._stopped:
            return
        self._stopped = True
        grace_s = self.shutdown_grace if grace is None else _seconds(grace)
        deadline = time.monotonic() + grace_s
        db_deadline = deadline + SHUTDOWN_DB_TIMEOUT
        logger.info("worker %s stopping: %d running, grace %.1fs", self.worker_id, self.running, grace_s,
                    extra=self._log_extra())  # fmt: skip
        self._stopping.set()
        self._wake.set()
        with self._lock:
            self._idle.wait_for(lambda: not self._running, timeout=max(0.0, deadline - time.monotonic()))
        # a claim in flight hands its rows back (as releases) when it returns
        self._threads["claim"].join(timeout=max(0.5, deadline - time.monotonic()))
        with self._lock:
            leftover = list(self._running.values())
        for ctx in leftover:
            ctx.cancel("released")
            self._reports.put(_Report("release", ctx))
        self.abandoned = len(leftover)

        # The reporter sends what is held (results, then releases), then exits.
        self._reports_closing.set()
        reporter = self._threads["report"]
        reporter.join(timeout=max(0.0, db_deadline - time.monotonic()))
        if reporter.is_alive():
            logger.warning("database unreachable at shutdown; unreported tasks are left to the reaper",
                           extra=self._log_extra())  # fmt: skip
            self._reports_abort.set()
            reporter.join(timeout=0.2)

        # The other loops wait on _halt and end at once, unless stuck on a dead
        # connection; they send nothing that matters now, so they get a second.
        self._halt.set()
        self._reap_wake.set()
        until = time.monotonic() + 1.0
        for name in ("heartbeat", "reap", "listen"):
            if name in self._threads:
                self._threads[name].join(timeout=max(0.0, until - time.monotonic()))
        if self._scheduler is not None:
            self._scheduler.stop(timeout=max(0.0, until - time.monotonic()))
        self._deregister(min(DEREGISTER_TIMEOUT, max(0.5, db_deadline - time.monotonic())), reporter.is_alive())
        # A link whose thread is still stuck in a call is left open: closing a
        # connection under a running call is not safe; it goes with the process.
        for name, link in (("claim", self._claim_link), ("report", self._report_link),
                           ("heartbeat", self._heartbeat_link), ("reap", self._reap_link)):  # fmt: skip
            if not self._threads[name].is_alive():
                link.close()
        with self._lock:
            pool, self._ctx_pool = self._ctx_pool, None
        if pool is not None:
            pool.close(timeout=1.0)
        for _ in self._handler_threads:
            self._jobs.put(None)  # a handler still running keeps its (daemon) thread until it returns
        logger.info("worker %s stopped (%d released)", self.worker_id, len(leftover), extra=self._log_extra())

    def _deregister(self, timeout: float, report_link_busy: bool) -> None:
        """Delete this worker's row (``timeout`` seconds at most; informational:
        reap() forgets stale rows anyway)."""
        link = _Link(self.dsn, "deregister", self.worker_id) if report_link_busy else self._report_link
        give_up = threading.Event()

        def deregister() -> None:
            try:
                link.call(lambda c: c.execute(queries.DEREGISTER_WORKER, {"worker_id": self.worker_id}), give_up)
            except _Aborted:
                pass
            except Exception as exc:  # noqa: BLE001 - the row is informational
                logger.warning("could not deregister: %s", redact_dsn(str(exc).strip()), extra=self._log_extra())

        if not _bounded("deregister", deregister, timeout):
            give_up.set()
            logger.warning("could not deregister within %.1fs (database unreachable); reap() forgets the row",
                           timeout, extra=self._log_extra())  # fmt: skip
        if link is not self._report_link and not give_up.is_set():
            link.close()

    def request_stop(self) -> None:
        """Ask ``run()`` to stop gracefully (what the first SIGTERM does)."""
        self._stop_requested.set()

    def run(self) -> int:
        """Start, block until SIGTERM or SIGINT (or ``request_stop()``), stop
        gracefully and return 0. A second signal exits the process at once with
        code 130, leaving the held tasks to the reaper."""
        installed: dict[int, Any] = {}

        def on_signal(signum: int, frame: Any) -> None:
            if self._stop_requested.is_set():
                os.write(2, b"pyconductor: second signal, exiting now (130)\n")
                os._exit(130)
            self._stop_requested.set()

        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                installed[sig] = signal.signal(sig, on_signal)
        # The handlers stay installed after stop(): a signal while exiting still means "now".
        try:
            self.start()
        except BaseException:
            for sig, previous in installed.items():
                signal.signal(sig, previous)  # a start that failed leaves the process as it was
            raise
        try:
            while not self._stop_requested.wait(1.0):
                pass
            logger.info("stop requested; finishing running tasks (again to exit now)", extra=self._log_extra())
        finally:
            self.stop()
        return 0

    def __enter__(self) -> Worker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- claiming --------------------------------------------------------------------

    def _register(self) -> None:
        params = {
            "worker_id": self.worker_id, "host": self.host, "pid": os.getpid(), "queues": self.queues,
            "concurrency": self.concurrency, "roles": self.roles, "version": self.version,
            "metadata": dumps_json({"kinds": self.app.registry.kinds}),
        }  # fmt: skip
        self._claim_link.call(lambda c: c.execute(queries.REGISTER_WORKER, params), self._stopping)

    def _claim_loop(self) -> None:
        try:
            self._register()
        except _Aborted:
            return
        except Exception as exc:  # noqa: BLE001 - informational; claiming works without it
            logger.error("could not register worker: %s", exc, extra=self._log_extra())
        if not self.process_tasks:
            self._stopping.wait()
            return
        while not self._stopping.is_set():
            self._wake.clear()
            free = self._free_slots()
            if 0 < free < self._claim_at_least and free < self.concurrency:
                # Slots free up one handler at a time; claiming for each would be a
                # round trip (and a commit) per task. Let a few more free up, for at
                # most claim_linger, so one claim fills many.
                deadline = time.monotonic() + self.claim_linger
                while free < self._claim_at_least and not self._stopping.is_set():
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._wake.clear()
                    self._wake.wait(left)
                    free = self._free_slots()
            if free > 0:
                try:
                    rows = self._claim_link.rows(queries.CLAIM, {
                        "worker_id": self.worker_id, "queues": self.queues, "max_tasks": free, "lease": self.lease,
                    }, self._stopping)  # fmt: skip
                except _Aborted:
                    return
                except Exception as exc:  # noqa: BLE001 - never die; back off and try again
                    logger.error("claim failed: %s", translate(exc) if isinstance(exc, psycopg.Error) else exc,
                                 extra=self._log_extra(), exc_info=not isinstance(exc, psycopg.Error))  # fmt: skip
                    self._stopping.wait(BACKOFF_MAX)
                    continue
                if self._stopping.is_set() and rows:
                    # stop() came while claiming: hand these back without running them
                    for row in rows:
                        ctx = TaskContext.from_claim(row, self.worker_id)
                        with self._lock:
                            self._held[ctx.attempt_id] = ctx
                        self._reports.put(_Report("release", ctx))
                    return
                if rows and time.monotonic() + self.lease.total_seconds() < self._reap_due:
                    self._reap_wake.set()  # these leases expire before the reaper's next run
                for row in rows:
                    self._dispatch(TaskContext.from_claim(row, self.worker_id, self))
                if len(rows) == free:
                    continue  # a full batch: there may be more
            self._wake.wait(self.poll_interval)

    def _free_slots(self) -> int:
        """Handler slots free, held back while results wait for their report: a
        worker holds at most 2 x concurrency tasks (running, or finished and not
        yet reported), so a slow or cut-off report connection stops the claiming
        instead of piling up results that a crash would make run again."""
        with self._lock:
            return min(self.concurrency - len(self._running), 2 * self.concurrency - len(self._held))

    def _dispatch(self, ctx: TaskContext) -> None:
        task = self.app.registry.get(ctx.kind)
        with self._lock:
            self.stats["claimed"] += 1
            self._held[ctx.attempt_id] = ctx
            if task is not None:
                self._running[ctx.attempt_id] = ctx
        if ctx.attempt > 1 or ctx.recoveries:
            logger.warning("task %d (%s) claimed again: attempt %d, recoveries %d", ctx.task_id, ctx.kind,
                           ctx.attempt, ctx.recoveries, extra=_extra(ctx))  # fmt: skip
        if task is None:
            self._reports.put(_Report("unknown", ctx, error=f"this worker has handlers for: "
                                      f"{', '.join(self.app.registry.kinds) or 'none'}"))  # fmt: skip
            return
        self._jobs.put((task, ctx))

    def _handler_loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            task, ctx = job
            if ctx.cancelled and ctx.cancel_reason == "released":
                continue  # stop() handed it back before a thread was free to start it
            try:
                self._execute(task, ctx)
            except Exception:  # noqa: BLE001 - the thread serves the next task
                logger.exception("task %d (%s): the worker failed around its handler", ctx.task_id, ctx.kind,
                                 extra=_extra(ctx))  # fmt: skip

    # -- running ---------------------------------------------------------------------

    def _execute(self, task: Task, ctx: TaskContext) -> None:
        start = time.perf_counter()
        report: _Report | None
        try:
            result = task.run(ctx.payload, ctx)
        except _Suspended as exc:
            ms = (time.perf_counter() - start) * 1000
            report = None
            if not ctx.suspended:  # another task's context raised it: a failure of this one
                report = _Report("fail", ctx, error=_error_text(exc), traceback=traceback.format_exc(), duration_ms=ms)
        except BaseException as exc:  # noqa: BLE001 - the handler's failure is the task's (even SystemExit)
            ms = (time.perf_counter() - start) * 1000
            report = _Report("fail", ctx, error=_error_text(exc), traceback=traceback.format_exc(), duration_ms=ms,
                             retry_at=exc.at if isinstance(exc, RetryLater) else None)  # fmt: skip
        else:
            ms = (time.perf_counter() - start) * 1000
            try:
                report = _Report("ok", ctx, result=dumps_json(result), duration_ms=ms)
            except (TypeError, ValueError) as exc:
                report = _Report(
                    "fail", ctx, duration_ms=ms, traceback=traceback.format_exc(),
                    error=f"the result of task {ctx.task_id} ({ctx.kind}) is not JSON-serialisable: "
                          f"{_error_text(exc)}; return JSON types (dict, list, str, int, float, bool, None)",
                )  # fmt: skip
        finally:
            with self._lock:
                self._running.pop(ctx.attempt_id, None)
                if ctx.suspended or (ctx.cancelled and ctx.cancel_reason != "released"):
                    self._held.pop(ctx.attempt_id, None)  # released ones leave after their release
                if not self._running:
                    self._idle.notify_all()
            self._wake.set()
        if ctx.suspended:
            # suspend closed the attempt in SQL ('suspended'): nothing to report, the slot is free
            self._count("suspended")
            logger.debug("task %d (%s) waiting", ctx.task_id, ctx.kind, extra=_extra(ctx, ms))
            return
        if ctx._refused is not None and ctx.cancel_reason != "released":
            # a step, spawn or wait was refused: the lease was lost or the task cancelled
            self._count("refused")
            logger.warning("task %d (%s) %s (a step was refused); its outcome is discarded", ctx.task_id,
                           ctx.kind, ctx._refused, extra=_extra(ctx, ms))  # fmt: skip
            return
        if ctx.cancelled:
            # cancelled, lost or released: the database would refuse the report anyway
            self._count("discarded")
            logger.warning("task %d (%s) %s; its outcome is discarded", ctx.task_id, ctx.kind,
                           ctx.cancel_reason, extra=_extra(ctx, ms))  # fmt: skip
            return
        if report is not None:
            self._reports.put(report)

    # -- the handlers' durable calls (TaskContext's runtime) --------------------------

    def _get_ctx_pool(self) -> ConnectionPool:
        with self._lock:
            if self._ctx_pool is None:
                self._ctx_pool = ConnectionPool(
                    self.dsn, min_size=1, max_size=self.concurrency, open=True, name=f"pyconductor-ctx-{self.worker_id}",
                    configure=use_fast_loads,
                    kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT,
                            "application_name": f"pyconductor ctx {self.worker_id}"[:63]},
                )  # fmt: skip
            return self._ctx_pool

    def ctx_rows(self, ctx: TaskContext, query: str, params: Any) -> list[dict[str, Any]]:
        """One statement for a handler's ctx (save_step, spawn, suspend), Conductor
        errors mapped. A lost connection is retried with backoff for a while: each
        call is idempotent per step name (a suspend that did commit answers
        LeaseLost when sent again, which discards the outcome; the task waits)."""
        delay = BACKOFF_MIN
        deadline = time.monotonic() + CTX_RETRY_FOR
        while True:
            try:
                with mapped_errors(), self._get_ctx_pool().connection() as conn:
                    with conn.cursor(row_factory=dict_row) as cur:
                        cur.execute(query, params)
                        return cur.fetchall()
            except CONNECTION_ERRORS:
                if time.monotonic() + delay > deadline or self._halt.is_set():
                    raise
                logger.warning("task %d (%s): database connection lost during a step; retrying in %.1fs",
                               ctx.task_id, ctx.kind, delay, extra=_extra(ctx))  # fmt: skip
                time.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX)

    def spawn_defaults(self, kind: str) -> dict[str, Any]:
        """The enqueue options registered for ``kind`` on this worker's app."""
        task = self.app.registry.get(kind)
        return task.options() if task is not None else {}

    def waiting(self, ctx: TaskContext) -> None:
        """A handler's wait parked its task: the reaper re-reads next_wake."""
        self._reap_wake.set()

    # -- reporting -------------------------------------------------------------------

    def _report_loop(self) -> None:
        while True:
            try:
                first = self._reports.get(timeout=0.05)
            except queue_mod.Empty:
                if self._reports_closing.is_set():
                    return
                continue
            batch = [first]
            deadline = time.monotonic() + self.report_linger
            while len(batch) < self.report_batch:
                try:
                    batch.append(self._reports.get_nowait())
                    continue
                except queue_mod.Empty:
                    pass
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._running:
                    break  # no running handler can give it company: waiting only delays the next claim
                try:
                    batch.append(self._reports.get(timeout=remaining))
                except queue_mod.Empty:
                    break
            try:
                self._send(batch)
            except _Aborted:
                logger.warning("dropping %d unreported outcome(s): database unreachable", len(batch),
                               extra=self._log_extra())  # fmt: skip
            except Exception:  # noqa: BLE001 - never die
                logger.exception("reporting %d outcome(s) failed", len(batch), extra=self._log_extra())
            finally:
                with self._lock:
                    for r in batch:
                        self._held.pop(r.ctx.attempt_id, None)
                self._wake.set()

    def _send(self, batch: list[_Report]) -> None:
        others = [r for r in batch if r.what != "ok"]
        oks = [r for r in batch if r.what == "ok"]
        if oks:
            others += self._send_results(oks)
        for r in others:
            try:
                self._send_one(r)
            except (LeaseLost, TaskCancelled, NotFound) as exc:
                if r.what == "fail":
                    self._outcome(r, "refused")
                self._count("refused")
                logger.warning("%s of task %d (%s) refused: %s", r.what, r.ctx.task_id, r.ctx.kind, exc,
                               extra=_extra(r.ctx, r.duration_ms))  # fmt: skip
            except ConductorError as exc:
                logger.error("%s of task %d (%s) failed: %s", r.what, r.ctx.task_id, r.ctx.kind, exc,
                             extra=_extra(r.ctx, r.duration_ms))  # fmt: skip
            except psycopg.Error as exc:
                if isinstance(exc, CONNECTION_ERRORS):
                    raise
                # one report the server cannot take never costs the others theirs
                logger.error("%s of task %d (%s) could not be sent: %s", r.what, r.ctx.task_id, r.ctx.kind,
                             " ".join(str(exc).split()), extra=_extra(r.ctx, r.duration_ms))  # fmt: skip

    def _send_results(self, oks: list[_Report]) -> list[_Report]:
        """Store the results of ``oks`` with complete_many; answer the failure
        reports of those the server cannot store. A result jsonb refuses (a
        NUL, a lone surrogate: the whole call fails before it runs) is sent
        again alone, and when it fails alone it becomes its task's failure,
        not retried (as the database fails a result over its size limit), so
        one bad result never costs the batch its outcomes."""
        try:
            rows = self._report_link.rows(queries.COMPLETE_MANY, {
                "attempt_ids": bigint_array(r.ctx.attempt_id for r in oks), "results": text_array(r.result for r in oks),
            }, self._reports_abort)  # fmt: skip
        except (psycopg.DataError, psycopg.errors.ProgramLimitExceeded) as exc:
            if len(oks) > 1:
                return [bad for r in oks for bad in self._send_results([r])]
            r = oks[0]
            return [_Report("fail", r.ctx, duration_ms=r.duration_ms, retryable=False,
                            error=f"result not storable: {' '.join(str(exc).split())} ({exc.sqlstate}); "
                                  f"return JSON that PostgreSQL's jsonb accepts (no NUL characters, valid UTF-8)")]  # fmt: skip
        # 'finished': an earlier sending of this batch was stored before the
        # connection dropped, so the result is in. 'failed': the database
        # refused to store the result (over conductor.settings.max_result_bytes)
        # and failed the task, its error recorded.
        states = {row["attempt_id"]: row["state"] for row in rows if row["state"] != "finished"}
        succeeded = 0
        log_each = logger.isEnabledFor(logging.DEBUG)
        for r in oks:
            state = states.get(r.ctx.attempt_id)
            if state is None:
                self._outcome(r, "succeeded")
                succeeded += 1
                if log_each:
                    logger.debug("task %d (%s) succeeded", r.ctx.task_id, r.ctx.kind,
                                 extra=_extra(r.ctx, r.duration_ms))  # fmt: skip
            elif state == "failed":
                self._outcome(r, "failed")
                self._count("failed")
                logger.error("task %d (%s) failed: its result was not storable (%d bytes of JSON; the task's error "
                             "says why)", r.ctx.task_id, r.ctx.kind, len(r.result or ""),
                             extra=_extra(r.ctx, r.duration_ms))  # fmt: skip
            else:
                r.ctx.cancel(state)
                self._outcome(r, "refused")
                self._count("refused")
                logger.warning("result of task %d (%s) refused: %s; discarded", r.ctx.task_id, r.ctx.kind,
                               state, extra=_extra(r.ctx, r.duration_ms))  # fmt: skip
        self._count("succeeded", succeeded)
        return []

    def _outcome(self, r: _Report, outcome: str) -> None:
        for listener in self.outcome_listeners:
            try:
                listener(r.ctx, outcome, r.duration_ms)
            except Exception:  # noqa: BLE001 - a listener never stops the reporting
                logger.exception("outcome listener %r failed", listener, extra=self._log_extra())

    def _send_one(self, r: _Report) -> None:
        def fetch(query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
            try:
                return self._report_link.rows(query, params, self._reports_abort)
            except psycopg.Error as exc:
                new = translate(exc)
                if new is exc:
                    raise
                raise new from exc

        if r.what == "release":
            fetch(queries.RELEASE, {"attempt_id": r.ctx.attempt_id})
            self._count("released")
            logger.info("task %d (%s) released", r.ctx.task_id, r.ctx.kind, extra=_extra(r.ctx))
            return
        unknown = r.what == "unknown"
        status = fetch(queries.FAIL, {
            "attempt_id": r.ctx.attempt_id, "error": storable_text(r.error), "retry_at": r.retry_at,
            "traceback": storable_text(r.traceback), "unknown_kind": unknown, "retryable": r.retryable,
        })[0]["fail"]  # fmt: skip
        if not unknown:
            self._outcome(r, "retried" if status == "queued" else "failed")
        self._count("unknown" if unknown else "failed")
        if status == "queued":
            logger.warning("task %d (%s) failed, will retry: %s", r.ctx.task_id, r.ctx.kind, r.error,
                           extra=_extra(r.ctx, r.duration_ms))  # fmt: skip
        else:
            logger.error("task %d (%s) %s: %s", r.ctx.task_id, r.ctx.kind, status,
                         "no handler for this kind" if unknown else r.error,
                         extra=_extra(r.ctx, r.duration_ms))  # fmt: skip

    # -- heartbeat, reap, listen -----------------------------------------------------

    def _heartbeat_loop(self) -> None:
        while not self._halt.wait(self.heartbeat_interval):
            self.heartbeat()

    def heartbeat(self) -> list[dict[str, Any]]:
        """One heartbeat now (the worker's thread calls this every heartbeat_interval):
        extends every held lease, flags the handlers of attempts answered
        'cancelled' or 'lost' ('finished' means a report of this worker crossed
        the beat, and is left to the reporter). Returns the answers."""
        with self._lock:
            ids = list(self._held)
        try:
            rows = self._heartbeat_link.rows(queries.HEARTBEAT, {
                "worker_id": self.worker_id, "attempt_ids": ids, "lease": self.lease,
            }, self._halt)  # fmt: skip
        except _Aborted:
            return []
        except Exception as exc:  # noqa: BLE001 - never die
            logger.error("heartbeat failed: %s", exc, extra=self._log_extra())
            return []
        for row in rows:
            if row["state"] == "finished":
                continue  # this worker's own report crossed the beat: the reporter owns it
            with self._lock:
                ctx = self._held.pop(row["attempt_id"], None)
            if ctx is not None:
                ctx.cancel(row["state"])
                logger.warning("task %d (%s) %s; stopping its handler", ctx.task_id, ctx.kind, row["state"],
                               extra=_extra(ctx))  # fmt: skip
        return rows

    def _reap_loop(self) -> None:
        """reap(), then sleep until min(reap_interval, next_wake - now) (the
        database's clock), or until a handler of this worker parks a wait."""
        was_due = False
        while True:
            delay = self.reap_interval
            try:
                # While this reap runs, a claim cannot know when the next one comes:
                # it nudges, and the wait below returns at once to look again.
                self._reap_due = float("inf")
                self._reap_wake.clear()
                row = self._reap_link.rows(queries.REAP_NEXT, {}, self._halt)[0]
                if row["reap"]:
                    logger.info("reaped %d task(s) (expired leases, waits past their deadline)", row["reap"],
                                extra=self._log_extra())  # fmt: skip
                wake_in = row["wake_in"]
                if wake_in is not None:
                    # due already: reap again soon, but do not spin on a deadline reap skipped (row locked)
                    floor = REAP_STUCK_WAIT if (wake_in <= 0 and was_due) else REAP_MIN_WAIT
                    was_due = wake_in <= 0
                    delay = min(self.reap_interval, max(wake_in, floor))
                else:
                    was_due = False
            except _Aborted:
                return
            except Exception as exc:  # noqa: BLE001 - never die
                logger.error("reap failed: %s", exc, extra=self._log_extra())
            self._reap_due = time.monotonic() + delay
            self._reap_wake.wait(delay)
            if self._halt.is_set():
                return

    def _wants(self, queue: str) -> bool:
        return self.queues is None or queue in self.queues

    def _listen_loop(self) -> None:
        delay = BACKOFF_MIN
        while not self._halt.is_set():
            conn: psycopg.Connection[Any] | None = None
            try:
                conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT,
                                       application_name=f"pyconductor listen {self.worker_id}"[:63])  # fmt: skip
                conn.execute(queries.LISTEN)
                self._wake.set()  # notifications may have been missed while away
                delay = BACKOFF_MIN
                quiet_since = time.monotonic()
                while not self._halt.is_set():
                    heard = False
                    for note in conn.notifies(timeout=0.5):
                        heard = True
                        if self._wants(note.payload):
                            self._wake.set()
                    now = time.monotonic()
                    if heard:
                        quiet_since = now
                    elif now - quiet_since > LISTEN_PROBE_AFTER:
                        conn.execute(queries.PROBE)
                        quiet_since = now
            except CONNECTION_ERRORS as exc:
                if self._halt.is_set():
                    return
                _log_connection_trouble("listen", exc, delay, self.worker_id)
                self._halt.wait(delay)
                delay = min(delay * 2, BACKOFF_MAX)
            except Exception:  # noqa: BLE001 - never die; polling covers the gap
                logger.exception("listener failed", extra=self._log_extra())
                self._halt.wait(BACKOFF_MAX)
            finally:
                if conn is not None:
                    try:
                        conn.close()
                    except Exception:  # noqa: BLE001
                        pass


def run_worker(app: Conductor, queues: Iterable[str] | None = None, **options: Any) -> int:
    """``Worker(app, queues, **options).run()``."""
    return Worker(app, list(queues) if queues else None, **options).run()
