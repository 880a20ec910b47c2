"""``pyconductor serve``: one process running the roles asked of it.

    pyconductor serve --app myapp.tasks:app                       # every role
    pyconductor serve --app myapp.tasks:app --role worker         # a worker unit
    pyconductor serve --role web --dsn postgresql:///app          # the dashboard: no app needed
    CONDUCTOR_ROLES=web,scheduler,maintenance pyconductor serve --app myapp.tasks:app

The roles (:data:`ROLES`; default: all four):

- ``worker``: the :class:`~pyconductor.worker.Worker` claiming the app's kinds
  (``--queues``, ``--kinds``, ``--concurrency`` and the rest as ``pyconductor
  worker`` takes them);
- ``scheduler``: the Worker's scheduler part (``tick()`` under the leader
  lease 'scheduler'; the app's declared schedules are written at start);
- ``maintenance``: the reaper (a worker reaps too, for its own durable waits;
  this one runs without a worker), the retention loop
  (:class:`~pyconductor.retention.Retention` under the leader lease
  'retention'), the queue sampler (:class:`~pyconductor.samples.Sampler`:
  ``sample_queues()`` once a minute under the leader lease 'samples', for the
  dashboard's charts), and the app's singletons (``@app.singleton``, each under
  the leader lease ``singleton:NAME``);
- ``web``: the dashboard (:class:`~pyconductor.dashboard.DashboardServer`).

Every role but ``web`` needs the app (:data:`APP_ROLES`: its kinds, schedules
and singletons); the web role alone needs only a DSN.

Leader leases (:mod:`pyconductor.leadership`: rows of the database that only
the engine's functions write, renewed by their holder) make the fleet safe to
run with every role everywhere: one process ticks, one applies retention, one
runs each singleton; when it dies, its lease runs out and another takes over
within seconds; when it stops cleanly, it releases them at once.

``/health`` and ``/metrics`` are the worker's
(:class:`~pyconductor.endpoints.EndpointServer`, ``--http HOST:PORT``),
whatever the roles: the :class:`Node` offers the attributes of a Worker that
the server reads. ``/health`` names the process's roles and the leader leases
it holds, and checks the fleet's schedules: it is 503 ``unhealthy`` when an
enabled schedule is overdue by more than ``--schedule-grace`` (default 1
minute; ``conductor.overdue_schedules``) or when schedules exist and no
process of the fleet holds the scheduler lease (``conductor.leaders()``); 503
``degraded`` while a session outside the engine holds one of its advisory
keys (``conductor.foreign_lock_holders()``, named in ``lock_holders``).

Behind a transaction-mode pooler (``worker_options["pooler"]`` or
``$CONDUCTOR_POOLER`` = 'transaction') the worker polls (no LISTEN), and the
scheduler, retention and singletons lead as they do directly (a lease is one
statement at a time); only the web role refuses with
:class:`~pyconductor.link.DirectConnectionNeeded` (the dashboard's live
updates LISTEN): run it in a process connected directly.

Each role is a service (:mod:`pyconductor.services`) started in one order
(the worker, the reaper, the leader service, the dashboard) and stopped in
the reverse. The scheduler, retention and the singletons are duties of the
process's one leader service (:mod:`pyconductor.leader`; the worker's, when
there is a worker): every lease of the process on one connection.
SIGTERM/SIGINT stop every role cleanly: the dashboard, then the leader
service (each singleton told to stop; every lease released, so other
processes take over at once), the reaper, and the worker last (it drains as
``pyconductor worker`` does); a second signal exits at once with code 130.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self

from pyconductor import defaults
from pyconductor.leader import Leader
from pyconductor.link import DirectConnectionNeeded, Link
from pyconductor.maintenance import Reaper
from pyconductor.profile import ConnectionProfile, profile_from
from pyconductor.retention import BATCH as RETENTION_BATCH
from pyconductor.retention import INTERVAL as RETENTION_INTERVAL
from pyconductor.retention import Retention
from pyconductor.samples import Sampler
from pyconductor.services import Services
from pyconductor.signals import StopRequest, run_until_stopped

if TYPE_CHECKING:
    from pyconductor.client import Conductor
    from pyconductor.dashboard import DashboardServer
    from pyconductor.singleton import SingletonRunner
    from pyconductor.worker import Worker

__all__ = ["APP_ROLES", "ROLES", "Node", "WebOptions", "parse_roles"]

logger = logging.getLogger("pyconductor")

ROLES = ("web", "worker", "scheduler", "maintenance")
"""Every role, in the order they are listed (and started: the worker first)."""

APP_ROLES = {
    "worker": "handlers", "scheduler": "declared schedules", "maintenance": "singletons",
}  # fmt: skip
"""The roles that need the app, and what of it each runs; the web role needs only a DSN."""

POOLER_ROLES = ("worker", "scheduler", "maintenance")
"""The roles that run behind a transaction-mode pooler; the others need a direct connection."""
_NEEDS_SESSION = {
    "web": "the dashboard's live updates LISTEN on a session of their own",
}


def parse_roles(spec: str | Iterable[str] | None) -> list[str]:
    """``"web, worker"`` (or a list of names) -> the roles in :data:`ROLES`
    order, without repeats; None: every role. ValueError naming the valid
    roles for an unknown one, or when none is named."""
    if spec is None:
        return list(ROLES)
    parts = spec.split(",") if isinstance(spec, str) else list(spec)
    names = [part.strip().lower() for part in parts if part.strip()]
    unknown = [name for name in names if name not in ROLES]
    if unknown:
        raise ValueError(f"unknown role{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}: "
                         f"the roles are {', '.join(ROLES)}")  # fmt: skip
    if not names:
        raise ValueError(f"no role given: name one or more of {', '.join(ROLES)}")
    return [role for role in ROLES if role in names]


@dataclass
class WebOptions:
    """The web role's dashboard: where it listens and who may use it (the
    arguments of :class:`~pyconductor.dashboard.DashboardServer`)."""

    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    allowed_hosts: Sequence[str] = ()
    session_max_age: int = 12 * 3600
    secure_cookies: bool = False


@dataclass
class _Idle:
    """What a Node without the worker role shows where a Worker's figures go."""

    stats: dict[str, int] = field(default_factory=dict)
    outcome_listeners: list[Any] = field(default_factory=list)


class Node:
    """The roles of one ``pyconductor serve`` process over ``app``; see the module doc.

    ``app`` may be None for the web role alone (``dsn`` is then required); a
    role of :data:`APP_ROLES` without it raises ValueError naming the role.

    ``worker_options`` are :class:`~pyconductor.worker.Worker`'s keyword
    arguments (queues, concurrency, kinds, lease, ...); ``web`` the
    dashboard's (needed with the web role); ``retention_interval`` and
    ``retention_batch`` the retention loop's. ``start()`` starts every role
    and returns; ``stop()`` stops them (the worker, draining, last);
    ``run()`` blocks until SIGTERM/SIGINT and returns the exit code.
    """

    def __init__(
        self,
        app: Conductor | None,
        roles: Iterable[str] | str | None = None,
        *,
        dsn: str | None = None,
        worker_options: dict[str, Any] | None = None,
        web: WebOptions | None = None,
        retention_interval: float = RETENTION_INTERVAL,
        retention_batch: int = RETENTION_BATCH,
    ) -> None:
        self.app = app
        self.roles = parse_roles(roles)
        options = dict(worker_options or {})
        self.profile = profile_from(options.get("pooler"))
        options["pooler"] = self.profile
        _check_roles(self.roles, app, dsn, self.profile)
        self.dsn = dsn or (app.dsn if app is not None else "")
        self._worker_options = options
        self.worker: Worker | None = None
        if app is not None and ("worker" in self.roles or "scheduler" in self.roles):
            from pyconductor.worker import Worker

            # the database lists the process's every role beside the worker's own
            extra = [role for role in self.roles if role not in ("worker", "scheduler")]
            self.worker = Worker(app, dsn=self.dsn, process_tasks="worker" in self.roles,
                                 run_scheduler="scheduler" in self.roles, extra_roles=extra, **options)  # fmt: skip
            self.worker_id = self.worker.worker_id
        else:
            host = socket.gethostname()
            self.worker_id = options.get("worker_id") or f"{host}-{os.getpid()}-{secrets.token_hex(3)}"
        self._idle = _Idle()
        self._halt = threading.Event()
        self.reaper: Reaper | None = None
        self.retention: Retention | None = None
        self.sampler: Sampler | None = None
        self.singletons: list[SingletonRunner] = []
        if app is not None and "maintenance" in self.roles:
            if self.worker is None or not self.worker.process_tasks:
                # a worker reaps already (its own durable waits wake on time); without one, this does
                self.reaper = Reaper(Link(self.dsn, "reap", self.worker_id, profile=self.profile), self._halt,
                                     interval=float(options.get("reap_interval", defaults.REAP_INTERVAL)))  # fmt: skip
            self.retention = Retention(self.dsn, interval=retention_interval, batch=retention_batch,
                                       pooler=self.profile)  # fmt: skip
            self.sampler = Sampler()
            self.singletons = _singleton_runners(app, self.dsn, self.profile)
        # every lease of the process on one connection: the worker's (its scheduler), else one of its own
        self.leader = self.worker.leader if self.worker is not None else \
            Leader(self.dsn, application_name=f"pyconductor leader {self.worker_id}", profile=self.profile)  # fmt: skip
        maintenance = [self.retention, self.sampler] if self.retention is not None and self.sampler is not None else []
        for duty in [*maintenance, *self.singletons]:
            self.leader.add(duty)
        self.web_options = web
        self.web: DashboardServer | None = None
        if "web" in self.roles:
            from pyconductor.dashboard import DashboardServer

            opts = web or WebOptions()
            self.web = DashboardServer(self.dsn, opts.host, opts.port, opts.token,
                                       allowed_hosts=list(opts.allowed_hosts), session_max_age=opts.session_max_age,
                                       secure_cookies=opts.secure_cookies)  # fmt: skip
        self.services = Services({"worker_id": self.worker_id})
        """The roles' services in their start order (see :meth:`start`)."""
        if self.worker is not None:
            self.services.add("worker", self.worker.start, self.worker.stop)
        if self.reaper is not None:
            self.services.add("reaper", self.reaper.start, self._stop_reaper)
        # the worker's start starts its leader already (after declaring the app's schedules)
        self.services.add("leader", self.leader.start, self._stop_leader)
        if self.web is not None:
            self.services.add("dashboard", self._start_web, self.web.stop)
        # what run() waits for; the worker's, which its exit_on_stuck sets too
        self.stop_request = self.worker.stop_request if self.worker is not None else StopRequest()
        self._started = False
        self._stopped = False

    def __repr__(self) -> str:
        return f"<Node {self.worker_id} roles={','.join(self.roles)}>"

    # -- what EndpointServer reads (a Worker's attributes) ------------------------------

    @property
    def stats(self) -> dict[str, int]:
        return self.worker.stats if self.worker is not None else self._idle.stats

    @property
    def outcome_listeners(self) -> list[Any]:
        return self.worker.outcome_listeners if self.worker is not None else self._idle.outcome_listeners

    @property
    def running(self) -> int:
        return self.worker.running if self.worker is not None else 0

    @property
    def held(self) -> list[int]:
        return self.worker.held if self.worker is not None else []

    @property
    def concurrency(self) -> int:
        return self.worker.concurrency if self.worker is not None and self.worker.process_tasks else 0

    @property
    def stuck(self) -> int:
        return self.worker.stuck if self.worker is not None else 0

    def missed_notifications(self) -> dict[str, Any]:
        if self.worker is not None:
            return self.worker.missed_notifications()
        return {"total": 0, "in_a_row": 0, "warning": None}

    @property
    def leader_locks(self) -> dict[str, bool]:
        """Every leader lease this process contends for, and whether it holds it now."""
        return self.leader.leader_locks

    @property
    def retention_deleted(self) -> dict[str, int] | None:
        """Rows the retention loop deleted since start, per what (None without the maintenance role)."""
        return dict(self.retention.deleted) if self.retention is not None else None

    def health(self) -> dict[str, Any]:
        """The process's own state (no database call): the worker's, with every role."""
        if self.worker is not None:
            state = self.worker.health()
        else:
            state = {"status": "ok", "stuck": 0, "in_flight": 0, "held": 0, "worker_id": self.worker_id,
                     "queues": None, "kinds": [], "concurrency": 0, "stats": {},
                     "missed_notifications": {"total": 0, "in_a_row": 0, "warning": None}}  # fmt: skip
        state["roles"] = list(self.roles)
        if self.web is not None:
            state["web"] = self.web.url
        return state

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> Self:
        """Start every role's service, in order: the worker first (it checks the
        database and declares the app's kinds and schedules; DatabaseUnusable
        and the like raise here, what started before is stopped again), the
        reaper, the leader service (the scheduler, retention, the singletons),
        then the dashboard."""
        if self._started:
            raise RuntimeError("a Node starts once")
        self._started = True
        self.services.start()
        logger.info("serving roles %s (%s)", ",".join(self.roles), self.worker_id, extra={"worker_id": self.worker_id})
        return self

    def stop(self) -> None:
        """Stop what started, in the reverse order: the dashboard, the leader
        service (each singleton handed its stop event, and every lease released,
        so other processes take over while this one drains), the reaper, and the
        worker last (it drains within its shutdown grace)."""
        if not self._started or self._stopped:
            return
        self._stopped = True
        self.services.stop()
        logger.info("stopped roles %s (%s)", ",".join(self.roles), self.worker_id, extra={"worker_id": self.worker_id})

    def _start_web(self) -> None:
        assert self.web is not None
        self.web.start()
        logger.info("dashboard on %s/", self.web.url, extra={"worker_id": self.worker_id})

    def _stop_leader(self) -> None:
        grace = float(self._worker_options.get("shutdown_grace", defaults.SHUTDOWN_GRACE))
        self.leader.stop(timeout=grace)  # an infinite grace waits as long as it takes
        for runner in self.singletons:
            if runner.running:
                logger.warning("singleton %s did not return within %.0fs of its stop; left running until exit",
                               runner.name, grace, extra={"worker_id": self.worker_id})  # fmt: skip

    def _stop_reaper(self) -> None:
        assert self.reaper is not None
        self._halt.set()
        self.reaper.stop()
        self.reaper.thread.join(timeout=1.0)
        if not self.reaper.thread.is_alive():
            self.reaper.link.close()

    @property
    def abandoned(self) -> int:
        """Handlers still running when the worker stopped (see Worker.abandoned)."""
        return self.worker.abandoned if self.worker is not None else 0

    @property
    def started(self) -> bool:
        """Whether the worker got past its checks and declarations (without one: whether
        start() ran); what a supervisor reads."""
        return self.worker.started if self.worker is not None else self._started

    def request_stop(self) -> None:
        """Ask ``run()`` to stop gracefully (what the first SIGTERM does)."""
        self.stop_request.ask()

    def run(self) -> int:
        """Start, block until SIGTERM or SIGINT (or ``request_stop()``, or the worker's
        exit_on_stuck), stop and return the exit code (the worker's: 3 when exit_on_stuck
        stopped it, else 0). A second signal exits the process at once with code 130."""
        return run_until_stopped(self.start, self.stop, self.stop_request,
                                 f"stopping roles {','.join(self.roles)}", {"worker_id": self.worker_id})  # fmt: skip

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _check_roles(roles: list[str], app: Conductor | None, dsn: str | None, profile: ConnectionProfile) -> None:
    """Refuse roles this process cannot run: one of APP_ROLES without the app, no
    database at all (ValueError), a role that needs a session behind a
    transaction-mode pooler (DirectConnectionNeeded)."""
    if app is None:
        needing = [role for role in roles if role in APP_ROLES]
        if needing:
            why = "; ".join(f"the {role} role runs the app's {APP_ROLES[role]}" for role in needing)
            raise ValueError(f"no app given: {why}: pass --app module:attr (or set CONDUCTOR_APP), "
                             "or serve --role web alone")  # fmt: skip
        if not dsn:
            raise ValueError("no database given: pass --dsn (or set CONDUCTOR_DSN / DATABASE_URL)")
    if not profile.keeps_session:
        for role in roles:
            if role not in POOLER_ROLES:
                raise DirectConnectionNeeded(
                    f"the {role} role", f"{_NEEDS_SESSION[role]}; behind the pooler run only "
                    f"--role {','.join(r for r in roles if r in POOLER_ROLES) or ','.join(POOLER_ROLES)}"
                )  # fmt: skip


def _singleton_runners(app: Conductor, dsn: str, profile: ConnectionProfile) -> list[SingletonRunner]:
    """A :class:`~pyconductor.singleton.SingletonRunner` (not started) for each
    singleton the app declares (``app.singletons``: name -> (fn, failover))."""
    from pyconductor.singleton import SingletonRunner

    return [SingletonRunner(dsn, name, fn, failover=failover, pooler=profile)
            for name, (fn, failover) in app.singletons.items()]  # fmt: skip
