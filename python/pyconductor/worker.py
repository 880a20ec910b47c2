"""Worker: claims tasks, runs their handlers on threads, heartbeats, reports.

The worker decides nothing the database decides (retries, backoff, expiry,
time limits, dead-lettering are SQL). It is a set of small services, each one
thread (or a few) with one job and its own connection, so a slow one never
blocks another; the Worker only builds them and starts and stops them in order:

- :mod:`~pyconductor.producer`: registers the worker, claims exactly as many
  tasks as it has free slots, and LISTENs for new ones;
- :mod:`~pyconductor.executor`: runs each handler on one of ``concurrency``
  threads, within the task's time limit; ``async def`` handlers run on one
  event loop thread instead (:mod:`~pyconductor.loop`), each holding a slot;
- :mod:`~pyconductor.reporter`: sends outcomes, results in batches;
- :mod:`~pyconductor.maintenance`: the heartbeat (extends the leases, hears
  of cancellations) and the reaper;
- :mod:`~pyconductor.steps`: the handlers' durable calls (``ctx.step``, spawn, waits);
- :mod:`~pyconductor.leader`: the process's one leader connection, running
  the :class:`~pyconductor.scheduler.Scheduler` with the scheduler role (and
  ``pyconductor serve``'s maintenance duties).

They share one small state object (:class:`~pyconductor.ledger.Ledger`: what
is held, what runs, the counters) and talk through callbacks. Every lost
connection is waited out by the one loop in :mod:`~pyconductor.link` (capped
exponential backoff, 0.1 s to 5 s); handlers keep running meanwhile and held
results are reported once the database is back (a refusal, because the lease
was lost meanwhile, is logged at WARNING and the result dropped). Defaults
are :mod:`pyconductor.defaults`.

``start()`` connects once first: a DSN that can never work (it does not
parse, its host name does not resolve, the login is refused, the database or
role does not exist) raises :class:`~pyconductor.errors.DatabaseUnusable`
there, with a message that has no password; a server that is down or
restarting is only logged, and waited for as above. Once running, such an
error is logged at ERROR and retried (a password rotation or a restore may
be under way). Before anything runs it writes what the app declares: each
registered kind's configuration (``conductor.configure_kind``) and, with the
scheduler role, the declared schedules.

``stop()`` takes a bounded time whether the database answers or not: the
grace period for running handlers, then ``SHUTDOWN_DB_TIMEOUT`` (5 s) for
the reports and releases still to send, then at most 3 s for the other
threads to end and the deregistration. What is not sent by then is left to
the leases and the reaper; a thread stuck on a connection that stopped
answering is a daemon and is left behind.

Behind a transaction-mode pooler (``pooler="transaction"``, or
``$CONDUCTOR_POOLER=transaction``; see :mod:`pyconductor.profile`) the worker
keeps no session state: no listener (it polls, every second or every
``poll_interval`` when shorter, and wakes at due times: ``next_due``), no marks, no prepared statements; its
scheduler leads under its lease as it does directly (one statement at a
time, :mod:`pyconductor.leadership`). The claim's remembered scan position is
the database's, per worker id (``conductor.claim_positions``), not the
session's.

Logging goes to ``logging.getLogger("pyconductor")`` with ``extra`` keys
task_id, kind, queue, attempt, worker_id, duration_ms.
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Self, Unpack

import psycopg

from pyconductor import defaults, queries
from pyconductor.dsn import check_connect, redact_dsn
from pyconductor.errors import NotOwner, mapped_errors
from pyconductor.executor import Executor
from pyconductor.leader import Leader
from pyconductor.ledger import Ledger
from pyconductor.link import Aborted, Link
from pyconductor.maintenance import Heartbeat, Reaper
from pyconductor.producer import Listener, Producer
from pyconductor.profile import ConnectionProfile, profile_from
from pyconductor.reporter import OutcomeListener, Reporter
from pyconductor.scheduler import Scheduler
from pyconductor.schema import check_schema
from pyconductor.signals import StopRequest, run_until_stopped
from pyconductor.steps import StepRuntime
from pyconductor.version import __version__
from pyconductor.wire import dumps_json
from pyconductor.worker_settings import Reporting, Timings, WorkerSettings, grouped

if TYPE_CHECKING:
    from pyconductor.client import Conductor

__all__ = ["EXIT_STUCK", "Worker"]

logger = logging.getLogger("pyconductor")

EXIT_STUCK = 3  # run()'s exit code when exit_on_stuck stopped the worker
DEREGISTER_TIMEOUT = 2.0  # seconds of stop()'s database time deregistering may take
OTHERS_TIMEOUT = 1.0  # seconds stop() gives the heartbeat, reaper, listener and scheduler to end


def _seconds(value: float | timedelta) -> float:
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def _grace(value: float | timedelta) -> float:
    """A shutdown grace in seconds: 0 or more, or infinity (wait for every running task)."""
    seconds = _seconds(value)
    if not seconds >= 0:  # NaN too
        raise ValueError(f"shutdown grace must be 0 or more seconds, or inf, got {value!r}")
    return seconds


# the longest wait Python's locks take (threading.TIMEOUT_MAX), with room for the
# deadlines added to it: an infinite grace waits this long
FOREVER = threading.TIMEOUT_MAX / 4


def _bounded(name: str, fn: Callable[[], object], timeout: float) -> bool:
    """Run ``fn`` on a daemon thread and wait ``timeout`` seconds at most: whether
    it ended in time. One that did not is left running (blocked on a connection
    that stopped answering, say); it dies with the process."""
    thread = threading.Thread(target=fn, name=f"pyconductor-{name}", daemon=True)
    thread.start()
    thread.join(timeout)
    return not thread.is_alive()


class Worker:
    """Runs the handlers registered on ``app`` for tasks of ``queues`` (None: all).

    What it runs are its arguments: ``kinds`` (default: every kind
    registered on ``app``; every kind of its queues when the app's registry
    has a ``fallback``) narrows the kinds it claims; each must be registered
    (ValueError otherwise). ``concurrency`` (default
    $CONDUCTOR_WORKER_MAX_INFLIGHT or 32) bounds the tasks running at once.
    How long things take is ``timings``
    (:class:`~pyconductor.worker_settings.Timings`: ``lease``,
    ``heartbeat_interval``, ``poll_interval``, ``reap_interval``,
    ``shutdown_grace``, ``cancel_grace``, ``tick_interval``,
    ``claim_linger``), what it tells about itself ``reporting``
    (:class:`~pyconductor.worker_settings.Reporting`: ``worker_id``,
    ``version``, ``report_batch``, ``report_linger``); each field may also be given as a keyword
    (``Worker(app, lease=60)``). ``dsn`` defaults to the app's. With
    ``exit_on_stuck``, the first stuck handler thread (see
    :mod:`pyconductor.executor`) stops the worker: it stops claiming, stops
    gracefully, and ``run()`` returns 3 (what ``--processes`` runs its children with).
    ``extra_roles``: the process's other roles (``pyconductor serve``: web,
    maintenance), registered in ``conductor.workers`` beside its own.
    ``capture_logs`` (default True) stores the logging records a handler
    emits at ``capture_level`` (default INFO) or above with its attempt
    (``conductor.save_log``; see :mod:`pyconductor.tasklog`).
    ``pooler``: 'transaction' when ``dsn`` goes through a transaction-mode
    pooler (default: ``app``'s ``profile``; see the module doc); the poll
    interval is then at most 1 s (``POOLER_POLL_INTERVAL``).
    ``prefetch`` (default: ``concurrency``; 0: none) bounds the claimed tasks
    that wait in a local buffer for a slot, so a freed slot starts the next
    task without a round trip; the executor claims ahead only what its slots
    are expected to start within 50 ms, so long tasks are never hoarded (see
    :mod:`pyconductor.executor`).
    ``code_version`` (default $CONDUCTOR_CODE_VERSION; None: none) names the
    code of its handlers: every task it starts records it, and it claims only
    tasks recorded under it or under one of ``replays`` (the older versions
    whose runs its handlers still replay, e.g. through ``ctx.patched``), or
    recorded under none (docs/versioning.md).

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
        kinds: Sequence[str] | str | None = None,
        code_version: str | None = None,
        replays: Sequence[str] | str | None = None,
        prefetch: int | None = None,
        process_tasks: bool = True,
        run_scheduler: bool = True,
        dsn: str | None = None,
        pooler: ConnectionProfile | str | None = None,
        timings: Timings | None = None,
        reporting: Reporting | None = None,
        exit_on_stuck: bool = False,
        extra_roles: Sequence[str] = (),
        capture_logs: bool = True,
        capture_level: int = logging.INFO,
        **settings: Unpack[WorkerSettings],
    ) -> None:
        self.timings, self.reporting = grouped(settings, timings, reporting)
        """The grouped settings (:mod:`pyconductor.worker_settings`), each field also a keyword."""
        timings, reporting = self.timings, self.reporting
        self.app = app
        self.profile: ConnectionProfile = profile_from(pooler) if pooler is not None else app.profile
        """What its connections can do (:mod:`pyconductor.profile`), handed to every service."""
        self.queues: list[str] | None = _names(queues)
        self.kinds: list[str] | None = _names(kinds)
        if self.kinds is not None:
            unknown = sorted(set(self.kinds) - set(app.registry.kinds))
            if unknown:
                raise ValueError(f"kinds without a handler on this app: {', '.join(unknown)} "
                                 f"(registered: {', '.join(app.registry.kinds) or 'none'})")  # fmt: skip
        self.code_version: str | None = code_version or os.environ.get("CONDUCTOR_CODE_VERSION") or None
        self.replays: list[str] = _names(replays if replays is not None else os.environ.get("CONDUCTOR_REPLAYS")) or []
        if self.replays and self.code_version is None:
            raise ValueError("replays needs a code_version: the versions a worker replays are older than its own")
        self.concurrency = concurrency if concurrency is not None else defaults.default_concurrency()
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be 1 or more, got {self.concurrency}")
        self.dsn = dsn or app.dsn
        self.lease = timedelta(seconds=_seconds(timings.lease))
        self.heartbeat_interval = _seconds(timings.heartbeat_interval)
        self.poll_interval = _seconds(timings.poll_interval)
        if not self.profile.listens:  # no notifications: polling is how new tasks are found
            self.poll_interval = min(self.poll_interval, defaults.POOLER_POLL_INTERVAL)
        self.reap_interval = _seconds(timings.reap_interval)
        self.shutdown_grace = _grace(timings.shutdown_grace)
        self.cancel_grace = _seconds(timings.cancel_grace)
        self.host = socket.gethostname()
        self.worker_id = reporting.worker_id or f"{self.host}-{os.getpid()}-{secrets.token_hex(3)}"
        self.report_batch = reporting.report_batch
        self.report_linger = reporting.report_linger
        self.version = reporting.version or f"pyconductor {__version__}"
        self.claim_linger = timings.claim_linger
        self.capture_logs = capture_logs
        self.capture_level = capture_level
        self.prefetch = self.concurrency if prefetch is None else prefetch
        if self.prefetch < 0:
            raise ValueError(f"prefetch must be 0 or more, got {self.prefetch}")
        # an app that registers no handler has nothing to claim (its schedules' kinds run elsewhere)
        self.process_tasks = process_tasks and (bool(self.served_kinds) or self.claimed_kinds is None)
        self.run_scheduler = run_scheduler
        self.tick_interval = timings.tick_interval
        self.exit_on_stuck = exit_on_stuck
        self.roles = [role for role, on in (("worker", process_tasks), ("scheduler", run_scheduler)) if on]
        """The roles asked for; the database is told 'worker' only when there are handlers to claim for."""
        if not self.roles:
            raise ValueError("a Worker with neither tasks nor the scheduler has nothing to do")
        self.extra_roles = [role for role in extra_roles if role not in self.roles]
        """Other roles of the process (``pyconductor serve``'s), registered beside these."""

        # fn(ctx, outcome, handler_ms) once the database has taken a handler's outcome:
        # 'succeeded', 'retried' (fail requeued the task), 'failed' (fail ended it:
        # failed or dead), 'refused' (its attempt no longer held the task). Called on
        # the reporting thread, before the worker's stats count it; keep it quick.
        # What /metrics counts.
        self.outcome_listeners: list[OutcomeListener] = []
        self.abandoned = 0
        """How many handlers were still running when stop() returned (released, or stuck)."""
        self.ledger = Ledger(self.concurrency)
        self.stats: dict[str, int] = self.ledger.stats
        """Counters since start: claimed, succeeded, failed, unknown, discarded, refused, released,
        suspended, timed_out."""
        self._halt = threading.Event()  # heartbeat, reaper, listener, step retries: end
        self.stop_request = StopRequest()
        """What run() waits for: a signal, request_stop(), or exit_on_stuck (its exit code)."""
        self._started = False
        self._stopped = False
        self._build()

    def _build(self) -> None:
        """The services, handed what each needs; nothing runs yet."""
        ledger, wid, profile = self.ledger, self.worker_id, self.profile
        self.leader = Leader(self.dsn, application_name=f"pyconductor leader {wid}", profile=profile)
        """The process's leader service: the scheduler's duty with the scheduler role (``pyconductor
        serve`` adds its maintenance duties before the start); one connection for every lease."""
        self._scheduler: Scheduler | None = None
        if self.run_scheduler:
            self._scheduler = Scheduler(self.dsn, tick_interval=self.tick_interval, pooler=profile)
            self.leader.add(self._scheduler)
        self.reaper = Reaper(Link(self.dsn, "reap", wid, profile=profile), self._halt, interval=self.reap_interval)
        self.reporter = Reporter(ledger, Link(self.dsn, "report", wid, profile=profile), self.outcome_listeners,
                                 batch=self.report_batch, linger=self.report_linger)  # fmt: skip
        self.executor: Executor | None = None
        self.runtime: StepRuntime | None = None
        self.listener: Listener | None = None
        if self.process_tasks:
            self.runtime = StepRuntime(
                self.dsn, wid, self.concurrency, self.app.registry, self.reaper.nudge, profile=profile
            )
            self.executor = Executor(ledger, self.app.registry, self.reporter.put, concurrency=self.concurrency,
                                     worker_id=wid, cancel_grace=self.cancel_grace, on_stuck=self._on_stuck,
                                     capture_logs=self.capture_logs, capture_level=self.capture_level,
                                     prefetch=self.prefetch)  # fmt: skip
        registration = {
            "worker_id": wid, "host": self.host, "pid": os.getpid(), "queues": self.queues,
            "concurrency": self.concurrency, "version": self.version,
            "roles": [role for role in self.roles if role != "worker" or self.process_tasks] + self.extra_roles,
            "metadata": dumps_json({"kinds": self.served_kinds, "code_versions": self.code_versions}),
            # what it claims; a scheduler-only worker claims nothing, and SQL has no way to say so but NULL
            "kinds": self.claimed_kinds if self.process_tasks else None,
        }  # fmt: skip
        self.producer = Producer(ledger, Link(self.dsn, "claim", wid, profile=profile), self.executor, self.runtime,
                                 queues=self.queues, kinds=self.claimed_kinds, lease=self.lease,
                                 poll_interval=self.poll_interval,
                                 claim_linger=self.claim_linger, registration=registration,
                                 on_claimed=self.reaper.expect, polling=not profile.listens,
                                 code_versions=self.code_versions)  # fmt: skip
        if self.process_tasks and profile.listens:  # behind a transaction-mode pooler it polls instead
            self.listener = Listener(Link(self.dsn, "listen", wid), self.producer.notified, self._halt)
        executor = self.executor
        self.heartbeat_service = Heartbeat(
            ledger, Link(self.dsn, "heartbeat", wid, profile=profile), self._halt, lease=self.lease,
            interval=self.heartbeat_interval,
            on_lost=executor.cancel if executor is not None else lambda ctx, state: ctx.cancel(state),
            on_timed_out=executor.time_out if executor is not None else lambda attempt_id: None,
        )  # fmt: skip

    def __repr__(self) -> str:
        return f"<Worker {self.worker_id} queues={self.queues} concurrency={self.concurrency}>"

    # -- state ---------------------------------------------------------------------

    @property
    def pooler(self) -> str | None:
        """'transaction' behind a transaction-mode pooler (no session state), else None (``profile``'s)."""
        return self.profile.pooler

    @property
    def served_kinds(self) -> list[str]:
        """The kinds this worker claims: ``kinds``, else every registered kind."""
        return list(self.kinds) if self.kinds is not None else self.app.registry.kinds

    @property
    def code_versions(self) -> list[str] | None:
        """What the claims name: ``code_version``, then ``replays``; None without a code_version."""
        return None if self.code_version is None else [self.code_version, *self.replays]

    @property
    def claimed_kinds(self) -> list[str] | None:
        """What the claims ask for: ``served_kinds``, or None (every kind of the
        queues) when ``kinds`` is not given and the registry has a fallback."""
        if self.kinds is None and self.app.registry.fallback is not None:
            return None
        return self.served_kinds

    @property
    def running(self) -> int:
        """How many handlers are running now (stuck ones not counted: their slots are free)."""
        return len(self.ledger.running)

    @property
    def held(self) -> list[int]:
        """The attempt ids this worker holds (running, or finished and not yet reported)."""
        return self.ledger.held_ids()

    @property
    def stuck(self) -> int:
        """Handler threads still running past their time limit, or past the grace of a
        cancel: their slots were freed; a thread cannot be killed (see pyconductor.executor).
        An async handler counts only while it ignores its cancel past ``cancel_grace``."""
        return self.executor.stuck if self.executor is not None else 0

    @property
    def leader_locks(self) -> dict[str, bool]:
        """The leader leases this process's leader service contends for, and whether it holds each now."""
        return self.leader.leader_locks

    def health(self) -> dict[str, Any]:
        """This worker's own state, without asking the database: status 'ok', or
        'degraded' while a handler thread is stuck."""
        stuck = self.stuck
        return {
            "status": "degraded" if stuck else "ok", "stuck": stuck, "in_flight": self.running,
            "held": len(self.held), "worker_id": self.worker_id, "roles": list(self.roles), "queues": self.queues,
            "kinds": self.served_kinds, "concurrency": self.concurrency, "stats": dict(self.stats),
            "missed_notifications": self.missed_notifications(),
        }  # fmt: skip

    def missed_notifications(self) -> dict[str, Any]:
        """Claims the poll woke this worker for, for work a notification should have
        (see pyconductor.producer): total, the latest in a row, and the warning while
        they keep happening (None otherwise)."""
        p = self.producer
        return {"total": p.missed_notifications, "in_a_row": p.missed_in_a_row, "warning": p.pooler_warning}

    def heartbeat(self) -> list[dict[str, Any]]:
        """One heartbeat now (the heartbeat thread sends one every heartbeat_interval):
        extends every held lease, flags the handlers of attempts answered
        'cancelled' or 'lost', ends those answered 'timed_out'. Returns the answers."""
        return self.heartbeat_service.beat()

    def _log_extra(self) -> dict[str, Any]:
        return {"worker_id": self.worker_id}

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> Self:
        """Check the DSN, declare the app's kinds and schedules, start the services
        and return. Raises DatabaseUnusable when the DSN can never work (see the module doc)."""
        if self._started:
            raise RuntimeError("a Worker starts once")
        not_yet = check_connect(self.dsn, defaults.CONNECT_TIMEOUT)
        if not_yet is not None:
            lines = str(not_yet).strip().splitlines()
            logger.warning("database not reachable yet (%s); starting anyway, retrying in the background",
                           redact_dsn(lines[0]) if lines else type(not_yet).__name__,
                           extra=self._log_extra())  # fmt: skip
        else:
            self._check_database()
        self._declare()
        if not_yet is None:
            self._register()
        self._started = True
        self.leader.start()
        # consumers before producers: whatever is claimed finds its way out
        self.reporter.start()
        if self.executor is not None:
            self.executor.start()
        self.heartbeat_service.start()
        self.reaper.start()
        self.producer.start()
        if self.listener is not None:
            self.listener.start()
        if "worker" in self.roles and not self.process_tasks:
            logger.warning("worker %s: the app registers no task handler, so it claims no task",
                           self.worker_id, extra=self._log_extra())  # fmt: skip
        logger.info("worker %s started (roles %s, queues %s, concurrency %d, kinds %s)", self.worker_id,
                    ",".join(self.roles), ",".join(self.queues) if self.queues else "*", self.concurrency,
                    "*" if self.claimed_kinds is None else ",".join(self.served_kinds) or "none",
                    extra=self._log_extra())  # fmt: skip
        return self

    def _check_database(self) -> None:
        """Refuse, before anything runs, a schema of another release
        (SchemaMismatch) and options the database would refuse on every claim
        (a lease over conductor.settings.max_lease: InvalidArgument). A claim
        of no task checks the options as every claim will."""
        with mapped_errors(), psycopg.connect(self.dsn, autocommit=True, connect_timeout=defaults.CONNECT_TIMEOUT,
                                              **self.profile.connect_options(self.dsn)) as conn:  # fmt: skip
            check_schema(conn)
            if self.process_tasks:
                conn.execute(self.producer.claim_query,
                             {"worker_id": self.worker_id, "queues": self.queues, "max_tasks": 0, "lease": self.lease,
                              "kinds": self.claimed_kinds, "code_versions": self.code_versions})  # fmt: skip

    def _declare(self) -> None:
        """Write what the app declares in code to the database, before anything
        runs: the configuration of each registered kind that registers an
        option (``conductor.configure_kind``, every option by name: queue,
        priority, concurrency key, retry policy, timeout; so a task of the kind
        enqueued from psql or another language gets them too) and, with the
        scheduler role, the declared schedules. A bad declaration (an invalid
        cron line, a retention under ``conductor.settings.min_retention``, say)
        raises here. A kind another login declared, or an operator changed
        (QC208, :class:`~pyconductor.errors.NotOwner`), keeps its stored policy:
        it is logged at WARNING and skipped, the others are written, and the
        worker starts (as for an operator's schedule, QC207)."""
        configurations = self.app.registry.configurations()
        if configurations:
            with mapped_errors(), psycopg.connect(self.dsn, autocommit=True, connect_timeout=defaults.CONNECT_TIMEOUT,
                                                  **self.profile.connect_options(self.dsn)) as conn, \
                    conn.transaction():  # fmt: skip
                for params in configurations:
                    try:
                        with conn.transaction():  # a savepoint: a refused one leaves the others
                            conn.execute(queries.CONFIGURE_KIND, params)
                    except psycopg.Error as exc:
                        if exc.sqlstate != NotOwner.sqlstate:
                            raise
                        logger.warning("kind %s: keeping the policy stored in the database, not the one declared "
                                       "in code (%s)", params["kind"], exc.diag.message_primary,
                                       extra=self._log_extra())  # fmt: skip
        if self.run_scheduler and self.app.registry.schedules:
            Scheduler(self.dsn, pooler=self.profile).sync_schedules(self.app.registry.schedules)

    def _register(self) -> None:
        """Register the worker once its declarations are written (a registered
        worker's kinds are configured), refusing a worker id another login
        registered (NotOwner, QC208): the database would refuse every heartbeat
        and report under it. The producer registers again as it starts (and
        when the database was unreachable here)."""
        with mapped_errors(), psycopg.connect(self.dsn, autocommit=True, connect_timeout=defaults.CONNECT_TIMEOUT,
                                              **self.profile.connect_options(self.dsn)) as conn:  # fmt: skip
            conn.execute(queries.REGISTER_WORKER, self.producer.registration)

    def stop(self, grace: float | timedelta | None = None) -> None:
        """Stop claiming at once; wait for running tasks up to ``grace`` seconds
        (default ``shutdown_grace``), then hand the rest back with
        ``conductor.release``; report what is held, deregister, close. Returns
        within grace + SHUTDOWN_DB_TIMEOUT + 3 s even when the database does
        not answer (see the module doc)."""
        if not self._started or self._stopped:
            return
        self._stopped = True
        grace_s = self.shutdown_grace if grace is None else _grace(grace)
        deadline = time.monotonic() + min(grace_s, FOREVER)
        db_deadline = deadline + defaults.SHUTDOWN_DB_TIMEOUT
        logger.info("worker %s stopping: %d running, grace %s", self.worker_id, self.running,
                    "unlimited" if math.isinf(grace_s) else f"{grace_s:.1f}s", extra=self._log_extra())  # fmt: skip
        self.producer.stop_claiming()
        if self.executor is not None:
            self.executor.stop_feeding()  # what waits for a slot goes back now, not after the grace
        self.ledger.wait_idle(deadline - time.monotonic())
        # a claim in flight hands its rows back (as releases) when it returns
        self.producer.thread.join(timeout=max(0.5, deadline - time.monotonic()))
        released = self.executor.release_running() if self.executor is not None else 0
        self.abandoned = released + self.stuck

        # The reporter sends what is held (results, then releases), then ends.
        if not self.reporter.close(db_deadline - time.monotonic()):
            logger.warning("database unreachable at shutdown; unreported tasks are left to the reaper",
                           extra=self._log_extra())  # fmt: skip

        # The other services wait on _halt and end at once, unless stuck on a dead
        # connection; they send nothing that matters now, so they get a second.
        self._halt.set()
        self.reaper.stop()
        until = time.monotonic() + OTHERS_TIMEOUT
        others = [self.heartbeat_service.thread, self.reaper.thread]
        if self.listener is not None:
            others.append(self.listener.thread)
        for thread in others:
            thread.join(timeout=max(0.0, until - time.monotonic()))
        self.leader.stop(timeout=max(0.0, until - time.monotonic()))  # its part of serve stopped it already
        reporter_busy = self.reporter.thread.is_alive()
        self._deregister(min(DEREGISTER_TIMEOUT, max(0.5, db_deadline - time.monotonic())), reporter_busy)
        # A link whose thread is still stuck in a call is left open: closing a
        # connection under a running call is not safe; it goes with the process.
        for service in (self.producer, self.reporter, self.heartbeat_service, self.reaper):
            if not service.thread.is_alive():
                service.link.close()
        if self.runtime is not None:
            self.runtime.close()
        if self.executor is not None:
            self.executor.close()  # a handler still running keeps its (daemon) thread until it returns
        logger.info("worker %s stopped (%d released)", self.worker_id, released, extra=self._log_extra())

    def _deregister(self, timeout: float, report_link_busy: bool) -> None:
        """Delete this worker's row (``timeout`` seconds at most; informational:
        reap() forgets stale rows anyway)."""
        link = (
            Link(self.dsn, "deregister", self.worker_id, profile=self.profile)
            if report_link_busy
            else self.reporter.link
        )
        give_up = threading.Event()

        def deregister() -> None:
            try:
                link.call(lambda c: c.execute(queries.DEREGISTER_WORKER, {"worker_id": self.worker_id}), give_up)
            except Aborted:
                pass
            except Exception as exc:  # noqa: BLE001 - the row is informational
                logger.warning("could not deregister: %s", redact_dsn(str(exc).strip()), extra=self._log_extra())

        if not _bounded("deregister", deregister, timeout):
            give_up.set()
            logger.warning("could not deregister within %.1fs (database unreachable); reap() forgets the row",
                           timeout, extra=self._log_extra())  # fmt: skip
        if link is not self.reporter.link and not give_up.is_set():
            link.close()

    def _on_stuck(self) -> None:
        """A handler thread became stuck (the executor calls this)."""
        if self.exit_on_stuck and not self.stop_request.event.is_set():
            logger.error("worker %s has a stuck handler thread and runs with exit_on_stuck: it stops claiming "
                         "and exits (code %d)", self.worker_id, EXIT_STUCK, extra=self._log_extra())  # fmt: skip
            self.producer.stop_claiming()
            self.stop_request.exit_with(EXIT_STUCK)

    @property
    def started(self) -> bool:
        """Whether start() got past its checks and declarations (what a supervisor reads)."""
        return self._started

    def request_stop(self) -> None:
        """Ask ``run()`` to stop gracefully (what the first SIGTERM does)."""
        self.stop_request.ask()

    def run(self) -> int:
        """Start, block until SIGTERM or SIGINT (or ``request_stop()``), stop
        gracefully and return 0 (3 when exit_on_stuck stopped it). A second
        signal exits the process at once with code 130, leaving the held tasks
        to the reaper."""
        return run_until_stopped(self.start, self.stop, self.stop_request, "finishing running tasks",
                                 self._log_extra())  # fmt: skip

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _names(value: Sequence[str] | str | None) -> list[str] | None:
    """A list of names from a list or a comma-separated string; None (or empty): None."""
    if isinstance(value, str):
        value = [name.strip() for name in value.split(",") if name.strip()]
    return list(value) if value else None


def run_worker(app: Conductor, queues: Iterable[str] | None = None, **options: Any) -> int:
    """``Worker(app, queues, **options).run()``."""
    return Worker(app, list(queues) if queues else None, **options).run()
