"""A worker's HTTP endpoints: ``/health`` (JSON) and ``/metrics`` (Prometheus).

    worker = Worker(app, ["mail"])
    server = EndpointServer(worker, "127.0.0.1", 9100).start()
    worker.run()
    server.stop()

or ``pyconductor worker --app mod:app --http 127.0.0.1:9100``; ``pyconductor
serve --http ...`` serves the same for all of its roles (its
:class:`~pyconductor.serve.Node` offers the Worker attributes read here).

Served by the standard library's threading HTTP server on a daemon thread, so
a slow scrape never blocks the worker. Both endpoints read the worker's public
state (``health()``, ``leader_locks``; for /metrics also stats, running,
held, concurrency, stuck and its ``outcome_listeners``) and share
one database connection of their own (:class:`DatabaseProbe`: connect and
statement timeouts of ``probe_timeout`` seconds, reopened when it breaks),
so they answer even when the worker's own connections are stuck, and a
scrape does not cost a connection.

Access (see :mod:`pyconductor.access`): a request whose Host header does not
name this server (loopback, the bound address, ``allowed_hosts``) gets 421.
With a ``token``, ``/metrics`` needs ``Authorization: Bearer <token>`` (401
otherwise) and ``/health`` shows the details below only to it; without the
token it answers just ``{"status": ...}`` with the same status code, which is
what a liveness probe needs.

``/health`` answers 200 ``ok`` when ``select 1`` works and the worker is
healthy; 503 ``unavailable`` when the database does not answer; 503
``degraded`` while a handler thread is stuck: it ran past its task's timeout,
or past the grace after a cancel, and has not returned (a thread cannot be
killed: its slot was freed, the thread still holds what it holds; run
``--processes`` where a hard limit matters), or while a session outside the
engine holds one of its advisory keys (``conductor.foreign_lock_holders()``:
the enqueue in-flight keys held while idle or exclusively for over a second,
or a key v0.2.0 used for leaders, concurrency keys, events or exclusive()).
The body is the worker's ``health()`` with the database's view::

    {"status": "ok"|"degraded"|"unavailable", "stuck", "in_flight", "held", "worker_id", "roles",
     "queues", "kinds", "concurrency", "stats": {...}, "leader_locks": ["scheduler"],
     "missed_notifications": {"total", "in_a_row", "warning"},
     "database": {"reachable", "error", "latency_ms"},
     "unrunnable": [{"queue", "kind", "tasks", "dead_letter_at"}, ...],
     "lock_holders": [{"pid", "usename", "application_name", "key_space", "label", "locks",
                       "mode", "idle", "reason"}, ...]}

``lock_holders`` is null on a schema without the function, or for a login it
is not granted to (a client's: it is granted to conductor_worker and
conductor_admin); a foreign holder is the fleet's problem, not this worker's,
but it stalls or slows the fleet (v0.2.0 waited on such keys), so it is
named where an operator looks.

``unrunnable`` (``conductor.unrunnable()``) lists, per queue and kind, the
queued tasks that no live worker can run: no worker seen lately serves both
the queue and the kind (a kind no deployed code handles yet, or a typo).
``dead_letter_at`` is when the reaper will dead-letter the oldest as an
unknown kind (null: it will not). It is the fleet's state, not this worker's,
so it does not change the status; it is null on a schema without the function.

With ``schedule_grace`` (``pyconductor serve``: ``--schedule-grace``, default
60 s), ``/health`` also checks the fleet's schedules and answers 503
``unhealthy`` when an enabled schedule is overdue by more than the grace
(``conductor.overdue_schedules``) or when schedules are enabled and no
session holds the scheduler lease (``conductor.leaders()``): nothing would
fire them; and when a read the check needs failed twice, since it then
cannot say the schedules are fine. The body then has ``"schedules": {"enabled", "scheduler_leader",
"grace_seconds", "overdue": [{"name", "next_due_at", "overdue_seconds"}]}``
and ``"problems"``, one line each. This is the fleet's state seen from any
process: alert on it; a liveness probe that restarts the process on it
restarts a healthy process for a problem elsewhere.

``/metrics`` (all names prefixed ``conductor_``):

  worker_tasks_total{event}        the worker's own counters (claimed, succeeded,
                                   failed, unknown, discarded, refused, released):
                                   what the database accepted, totals only
  handler_runs_total{kind,queue,outcome}  handler outcomes as the database took
                                   them: succeeded, retried (fail requeued the
                                   task), failed (fail ended it), refused (the
                                   attempt no longer held the task)
  handler_duration_seconds{kind,queue}    histogram of handler run time
  worker_in_flight, worker_held, worker_concurrency, worker_leader{lock}
                                   (serve: also retention and singleton:NAME)
  retention_deleted_total{what}    rows this process's retention loop deleted
                                   (serve with the maintenance role)
  scheduler_leader                 1 while some process holds the scheduler lease
  schedules_enabled                enabled schedules
  schedules_overdue                enabled schedules overdue by more than the grace
  worker_stuck                     handler threads stuck past a timeout or a cancel's grace
  worker_missed_notifications_total  claims after a wait the poll ended that found
                                   work due well before it (a notification should
                                   have woken the worker: see pyconductor.producer)
  worker_missed_notifications_in_a_row  the latest such claims in a row; 3 or more:
                                   /health's ``missed_notifications.warning`` says
                                   to check the pooler
  database_up                      1 when ``select 1`` worked during this scrape
  queue_ready, queue_scheduled, queue_running, queue_waiting{queue}
  queue_backlog_age_seconds{queue} age of the oldest ready task
  queue_succeeded, queue_failed{queue,window}  finished in the last 1m/5m/15m
  queue_failure_rate{queue}
  queue_unrunnable{queue}          queued tasks no live worker can run (stats().unrunnable)
  queue_expired{queue,window}      ended expired (not started by their deadline) in the last 1m/5m/15m
  queue_max_running{queue}         the queue's cap (set_queue_limit), for a capped queue
  stats_available                  0 while ``conductor.stats()`` does not exist

``/metrics`` needs prometheus_client, the ``metrics`` extra (``pip install
'conductor-pg[metrics]'``); it is imported only when an EndpointServer starts,
so a worker installed without it runs and serves ``/health``, and ``/metrics``
answers 501 naming the extra (the server logs the same once at start). It
does not refuse to start: ``/health`` alone is what a liveness probe needs,
and a worker must not fail to deploy for want of a scraper's library.

The handler metrics come from the Worker's ``outcome_listeners``: each
outcome once the database answered (so 'retried' is what ``conductor.fail``
decided, not a guess), with the handler's run time.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Iterable, Sequence
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Self

import psycopg
from psycopg.rows import dict_row

from pyconductor import queries
from pyconductor.access import HostCheck, bearer_matches
from pyconductor.dsn import redact_dsn
from pyconductor.profile import DIRECT, ConnectionProfile

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from pyconductor.context import TaskContext
    from pyconductor.worker import Worker

__all__ = ["METRICS_MISSING", "DatabaseProbe", "EndpointServer", "WorkerMetrics", "parse_hostport"]

logger = logging.getLogger("pyconductor")

PROBE_TIMEOUT = 2.0
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, float("inf"))
QUEUE_GAUGES = ("ready", "scheduled", "running", "waiting")
WINDOWS = ("1m", "5m", "15m")
# what /metrics answers (501) when prometheus_client is not installed
METRICS_MISSING = "/metrics needs prometheus_client: pip install 'conductor-pg[metrics]'"
SCHEDULE_GRACE = 60.0  # seconds a schedule may be overdue before /health says so (serve's --schedule-grace)
# how long foreign_lock_holders looks again at a holder inside a transaction (a sleep()
# holds the enqueue keys exclusively for an instant)
LOCK_HOLD = timedelta(seconds=1)
_LOCK_HOLDER_KEYS = ("pid", "usename", "application_name", "key_space", "label", "locks", "mode", "idle", "reason")
# the probe's optional reads: a schema without the function (or a login it is not granted to) reads as None
READS = {"stats": queries.STATS, "unrunnable": queries.UNRUNNABLE, "schedules": queries.SCHEDULE_FLEET,
         "overdue": queries.OVERDUE_SCHEDULES, "lock_holders": queries.FOREIGN_LOCK_HOLDERS}  # fmt: skip


def parse_hostport(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9100`` for IPv6, ``:9100`` for 127.0.0.1) -> (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


def _seconds(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value)


class DatabaseProbe:
    """``select 1`` (and the READS asked for) on one kept
    connection, with connect and statement timeouts of ``timeout`` seconds.
    A connection that broke since the last probe is replaced and the probe
    sent again at once, so a server restart does not read as a failed
    scrape. Probes run one at a time; one that waits more than ``timeout``
    for the one before answers unreachable."""

    def __init__(self, dsn: str, timeout: float = PROBE_TIMEOUT, *, profile: ConnectionProfile = DIRECT) -> None:
        self.dsn = dsn
        self.timeout = timeout
        # behind a transaction-mode pooler the timeout is set per transaction: PgBouncer
        # refuses the `options` startup parameter, and a session setting would leak
        self.profile = profile
        self._conn: psycopg.Connection[dict[str, Any]] | None = None
        self._lock = threading.Lock()

    def _connection(self) -> tuple[psycopg.Connection[dict[str, Any]], bool]:
        """The kept connection, and whether it is a new one."""
        if self._conn is not None and not self._conn.closed:
            return self._conn, False
        session: dict[str, Any] = (
            {"options": f"-c statement_timeout={self._timeout_ms}"} if self.profile.keeps_session else {}
        )
        self._conn = psycopg.connect(
            self.dsn, autocommit=True, connect_timeout=max(1, round(self.timeout)), row_factory=dict_row,
            application_name="pyconductor endpoints", **session, **self.profile.connect_options(self.dsn),
        )  # fmt: skip
        return self._conn, True

    @property
    def _timeout_ms(self) -> int:
        return int(self.timeout * 1000)

    def _execute(self, conn: psycopg.Connection[dict[str, Any]], query: str,
                 params: dict[str, Any] | None = None) -> list[dict[str, Any]]:  # fmt: skip
        """The rows of one statement, under the probe's statement timeout."""
        if self.profile.keeps_session:
            return conn.execute(query, params).fetchall()
        with conn.transaction():
            conn.execute(queries.STATEMENT_TIMEOUT_LOCAL, {"ms": str(self._timeout_ms)})
            return conn.execute(query, params).fetchall()

    def __call__(self, *reads: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Never raises: returns ``{"reachable", "error", "latency_ms"}`` and the
        rows of each of ``reads`` (names of READS: "stats", "unrunnable",
        "schedules", "overdue", "lock_holders"; ``params`` are their
        placeholders' values: "overdue" needs ``grace``, "lock_holders"
        ``hold``), None when the database has no such function, the login may
        not call it, or the database did not answer."""
        out: dict[str, Any] = {"reachable": False, "error": None, "latency_ms": None, **dict.fromkeys(reads)}
        if not self._lock.acquire(timeout=self.timeout):
            out["error"] = f"the previous probe has not answered for {self.timeout:g}s"
            return out
        try:
            for _ in range(2):
                start = time.perf_counter()
                fresh = True
                try:
                    conn, fresh = self._connection()
                    self._execute(conn, queries.PROBE)
                    out["reachable"] = True
                    out["latency_ms"] = round((time.perf_counter() - start) * 1000, 3)
                    for name in reads:
                        out[name] = self._read(conn, READS[name], params)
                    out["error"] = None
                    return out
                except psycopg.Error as exc:
                    out["error"] = redact_dsn(str(exc).strip()) or type(exc).__name__
                    if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)):
                        self._close()
                    if fresh or out["reachable"]:
                        return out  # a new connection failed, or a read did: trying again tells nothing
            return out
        finally:
            self._lock.release()

    def _read(self, conn: psycopg.Connection[dict[str, Any]], query: str, params: dict[str, Any] | None) -> Any:
        """The rows of one read; None for a schema without its function. A read
        that hit the statement timeout is sent once more: a loaded machine
        stalled one in about 1,500 `unrunnable()` reads past 2 s, and a health
        check must not answer without its details for that."""
        for attempt in (1, 2):
            try:
                return self._execute(conn, query, params if "%(" in query else None)
            except (psycopg.errors.UndefinedFunction, psycopg.errors.InsufficientPrivilege):
                return None
            except psycopg.errors.QueryCanceled:
                if attempt == 2:
                    raise
        return None

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # it is broken already
                conn.close()

    def close(self) -> None:
        """Close the kept connection (waits for a running probe, ``timeout`` at most)."""
        locked = self._lock.acquire(timeout=self.timeout)
        try:
            self._close()
        finally:
            if locked:
                self._lock.release()


class WorkerMetrics:
    """The Prometheus registry of one worker: its counters, handler timings,
    and the queue figures of ``conductor.stats()`` read at each scrape.

    Raises ImportError (naming the extra) when prometheus_client is not
    installed: it is imported here, not with the module, so a worker without
    it runs and serves /health."""

    def __init__(self, worker: Worker, dsn: str | None = None, probe_timeout: float = PROBE_TIMEOUT, *,
                 probe: DatabaseProbe | None = None, schedule_grace: float = SCHEDULE_GRACE) -> None:  # fmt: skip
        try:
            from prometheus_client import CollectorRegistry, Counter, Histogram
        except ImportError as exc:
            raise ImportError(METRICS_MISSING) from exc
        self.worker = worker
        self.schedule_grace = schedule_grace
        self.probe = probe or DatabaseProbe(dsn or worker.dsn, probe_timeout, profile=worker.profile)
        self.registry = CollectorRegistry(auto_describe=False)
        self.handler_runs = Counter(
            "conductor_handler_runs", "Handler outcomes by kind and queue (succeeded, retried, failed, refused).",
            ["kind", "queue", "outcome"], registry=self.registry,
        )  # fmt: skip
        self.handler_duration = Histogram(
            "conductor_handler_duration_seconds", "Handler run time by kind and queue.",
            ["kind", "queue"], buckets=DURATION_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.registry.register(self)
        worker.outcome_listeners.append(self.observe)

    def exposition(self) -> tuple[str, bytes]:
        """(content type, body) of one scrape, in Prometheus' text format."""
        from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

        return CONTENT_TYPE_LATEST, generate_latest(self.registry)

    def observe(self, ctx: TaskContext, outcome: str, handler_ms: float | None) -> None:
        """Record one handler outcome (a Worker outcome listener)."""
        self.handler_runs.labels(ctx.kind, ctx.queue, outcome).inc()
        if handler_ms is not None:
            self.handler_duration.labels(ctx.kind, ctx.queue).observe(handler_ms / 1000)

    def collect(self) -> Iterable[Metric]:
        from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily

        w = self.worker
        events = CounterMetricFamily(
            "conductor_worker_tasks", "The worker's counters since start, by event (what the database accepted).",
            labels=["event"],
        )  # fmt: skip
        for event, n in sorted(dict(w.stats).items()):
            events.add_metric([event], n)
        yield events
        yield GaugeMetricFamily("conductor_worker_in_flight", "Handlers running now.", value=w.running)
        yield GaugeMetricFamily("conductor_worker_held", "Attempts held (running or not yet reported).",
                                value=len(w.held))  # fmt: skip
        yield GaugeMetricFamily("conductor_worker_concurrency", "Handler slots.", value=w.concurrency)
        yield GaugeMetricFamily("conductor_worker_stuck", "Handler threads past their time limit or cancel grace "
                                "(their slots are free; a thread cannot be killed).", value=w.stuck)  # fmt: skip
        missed = w.missed_notifications()
        yield CounterMetricFamily("conductor_worker_missed_notifications", "Claims after a wait the poll ended "
                                  "that found work due well before: a notification should have woken the worker "
                                  "(check the pooler).", value=missed["total"])  # fmt: skip
        yield GaugeMetricFamily("conductor_worker_missed_notifications_in_a_row", "Such claims in a row (3 or more: "
                                "/health warns).", value=missed["in_a_row"])  # fmt: skip
        leader = GaugeMetricFamily("conductor_worker_leader", "1 while this worker holds the leader lease.",
                                   labels=["lock"])  # fmt: skip
        for name, held in w.leader_locks.items():
            leader.add_metric([name], 1 if held else 0)
        yield leader
        deleted = getattr(w, "retention_deleted", None)  # a serve process with the maintenance role
        if deleted is not None:
            retention = CounterMetricFamily("conductor_retention_deleted", "Rows the retention loop of this "
                                            "process deleted since start (apply_retention), by what.",
                                            labels=["what"])  # fmt: skip
            for what, n in sorted(deleted.items()):
                retention.add_metric([what], n)
            yield retention

        probe = self.probe("stats", "schedules", "overdue", params={"grace": timedelta(seconds=self.schedule_grace)})
        yield GaugeMetricFamily("conductor_database_up", "1 when select 1 answered during this scrape.",
                                value=1 if probe["reachable"] else 0)  # fmt: skip
        if probe["schedules"]:
            yield GaugeMetricFamily("conductor_scheduler_leader", "1 while some process of the fleet holds the "
                                    "scheduler lease (conductor.leaders()).",
                                    value=1 if probe["schedules"][0]["scheduler_leader"] else 0)  # fmt: skip
            yield GaugeMetricFamily("conductor_schedules_enabled", "Enabled schedules.",
                                    value=int(probe["schedules"][0]["enabled"]))  # fmt: skip
        if probe["overdue"] is not None:
            yield GaugeMetricFamily("conductor_schedules_overdue", "Enabled schedules overdue by more than the "
                                    f"grace ({self.schedule_grace:g}s; conductor.overdue_schedules()).",
                                    value=len(probe["overdue"]))  # fmt: skip
        stats = probe["stats"]
        yield GaugeMetricFamily("conductor_stats_available", "1 when conductor.stats() answered.",
                                value=0 if stats is None else 1)  # fmt: skip
        if stats is None:
            return
        gauges = {
            key: GaugeMetricFamily(
                f"conductor_queue_{key}", f"Tasks {key} per queue (conductor.stats()).", labels=["queue"]
            )
            for key in QUEUE_GAUGES
        }
        age = GaugeMetricFamily("conductor_queue_backlog_age_seconds", "Age of the oldest ready task.",
                                labels=["queue"])  # fmt: skip
        done = {
            outcome: GaugeMetricFamily(
                f"conductor_queue_{outcome}", f"Tasks {outcome} in the last window.", labels=["queue", "window"]
            )
            for outcome in ("succeeded", "failed", "expired")  # expired: 0.3.0's stats()
        }
        rate = GaugeMetricFamily("conductor_queue_failure_rate", "Failed / finished in the last 15 minutes.",
                                 labels=["queue"])  # fmt: skip
        unrunnable = GaugeMetricFamily(
            "conductor_queue_unrunnable", "Queued tasks no live worker can run (none serves the queue and the kind).",
            labels=["queue"],
        )  # fmt: skip
        cap = GaugeMetricFamily("conductor_queue_max_running", "The queue's cap on running tasks (set_queue_limit).",
                                labels=["queue"])  # fmt: skip
        for row in stats:
            q = str(row["queue"])
            for key in QUEUE_GAUGES:
                if row.get(key) is not None:
                    gauges[key].add_metric([q], float(row[key]))
            age.add_metric([q], _seconds(row.get("oldest_ready_age")) or 0.0)
            for outcome, family in done.items():
                for window in WINDOWS:
                    value = row.get(f"{outcome}_{window}")
                    if value is not None:
                        family.add_metric([q, window], float(value))
            if row.get("failure_rate") is not None:
                rate.add_metric([q], float(row["failure_rate"]))
            if row.get("unrunnable") is not None:  # a schema before 0.2.0 has no such column
                unrunnable.add_metric([q], float(row["unrunnable"]))
            if row.get("max_running") is not None:  # a capped queue of 0.3.0
                cap.add_metric([q], float(row["max_running"]))
        yield from gauges.values()
        yield age
        yield from done.values()
        yield rate
        yield unrunnable
        yield cap


_UNRUNNABLE_KEYS = ("queue", "kind", "tasks", "dead_letter_at")


def schedule_problems(result: dict[str, Any], grace: float,
                      expect_leader: bool = True) -> tuple[list[str], dict[str, Any] | None]:  # fmt: skip
    """What is wrong with the fleet's schedules, from a probe's "schedules" and
    "overdue" reads: each enabled schedule overdue by more than ``grace``
    seconds, and (with ``expect_leader``, the default: the schedulers lead
    under the lease) no process holding the scheduler lease while schedules
    are enabled. Returns (problems, summary); the summary is None when the
    database did not say (unreachable, or a schema without the functions)."""
    fleet = result.get("schedules")
    overdue = result.get("overdue")
    if not fleet:
        return [], None
    enabled, leader = int(fleet[0]["enabled"]), bool(fleet[0]["scheduler_leader"])
    problems: list[str] = []
    if enabled and not leader and expect_leader:
        problems.append(f"no process holds the scheduler lease while {enabled} schedule(s) are enabled: none fires")
    for row in overdue or ():
        late = _seconds(row["overdue"]) or 0.0
        problems.append(f"schedule {row['name']} is overdue by {late:.0f}s (grace {grace:g}s)")
    summary = {
        "enabled": enabled, "scheduler_leader": leader, "grace_seconds": grace,
        "overdue": None if overdue is None
        else [{"name": r["name"], "next_due_at": r["next_due_at"], "overdue_seconds": _seconds(r["overdue"])}
              for r in overdue],
    }  # fmt: skip
    return problems, summary


def health(worker: Worker, probe: DatabaseProbe, details: bool = True,
           schedule_grace: float | None = None) -> tuple[int, dict[str, Any]]:  # fmt: skip
    """(HTTP status, body) of ``/health``: 200 "ok"; 503 "unavailable" when the
    database does not answer, else 503 "degraded" while the worker reports a
    stuck handler thread or a session outside the engine holds one of its
    advisory keys (``lock_holders``), else (with ``schedule_grace``, seconds)
    503 "unhealthy" when the fleet's schedules have a problem (see
    :func:`schedule_problems`; listed in ``problems``), or when a read the
    check needs failed, so it could not say. Without ``details``,
    the body is only ``{"status": ...}``."""
    reads = ["unrunnable", "lock_holders"] if details else ["lock_holders"]
    params: dict[str, Any] = {"hold": LOCK_HOLD}
    if schedule_grace is not None:
        reads += ["schedules", "overdue"]
        params["grace"] = timedelta(seconds=schedule_grace)
    result = probe(*reads, params=params)
    state = worker.health()
    problems, schedules = (schedule_problems(result, schedule_grace) if schedule_grace is not None
                           else ([], None))  # fmt: skip
    if schedule_grace is not None and result["reachable"] and result["error"] is not None:
        # a read failed (twice): the schedules went unchecked, and ok would claim they were fine
        problems.append(f"could not check the schedules: {result['error']}")
    holders = result.get("lock_holders")
    status = state["status"]
    if not result["reachable"]:
        status = "unavailable"
    elif status == "ok" and holders:
        status = "degraded"
    elif status == "ok" and problems:
        status = "unhealthy"
    code = 200 if status == "ok" else 503
    if not details:
        return code, {"status": status}
    locks = worker.leader_locks
    body = {
        **state,
        "status": status,
        "leader_locks": sorted(name for name, held in locks.items() if held),
        "database": {"reachable": result["reachable"], "error": result["error"], "latency_ms": result["latency_ms"]},
        "unrunnable": None if result["unrunnable"] is None
        else [{key: row[key] for key in _UNRUNNABLE_KEYS} for row in result["unrunnable"]],
        "lock_holders": None if holders is None else [{key: row[key] for key in _LOCK_HOLDER_KEYS} for row in holders],
    }  # fmt: skip
    if schedule_grace is not None:
        body["schedules"] = schedules
        body["problems"] = problems
    return code, body


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # the stdlib's name
        path = self.path.split("?", 1)[0]
        host = self.headers.get("Host")
        if not self.server.host_check(host):
            self._send(421, "text/plain; charset=utf-8", HostCheck.refusal(host).encode())
            return
        token = self.server.token
        authorized = token is None or bearer_matches(self.headers.get("Authorization"), token)
        try:
            if path == "/health":
                status, body = health(self.server.worker, self.server.probe, details=authorized,
                                      schedule_grace=self.server.schedule_grace)  # fmt: skip
                self._send(status, "application/json", json.dumps(body, default=str).encode())
            elif path == "/metrics" and not authorized:
                self._send(401, "text/plain; charset=utf-8", b"401 unauthorized: /metrics needs the token\n",
                           {"WWW-Authenticate": 'Bearer realm="conductor"'})  # fmt: skip
            elif path == "/metrics":
                if self.server.metrics is None:
                    self._send(501, "text/plain; charset=utf-8", f"501 not implemented: {METRICS_MISSING}\n".encode())
                else:
                    self._send(200, *self.server.metrics.exposition())
            else:
                self._send(404, "text/plain; charset=utf-8", b"not found: try /health or /metrics\n")
        except Exception:  # never kill the server thread
            logger.exception("endpoint %s failed", path)
            self._send(500, "text/plain; charset=utf-8", b"internal error\n")

    def _send(self, status: int, content_type: str, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
        # the prefix joins http.server's own %-format, whose args logging still formats lazily
        logger.debug("endpoints: " + format, *args)  # noqa: G003


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    worker: Worker
    probe: DatabaseProbe
    metrics: WorkerMetrics | None
    host_check: HostCheck
    token: str | None
    schedule_grace: float | None


class _Server6(_Server):
    address_family = socket.AF_INET6


class EndpointServer:
    """``/health`` and ``/metrics`` of ``worker`` on ``host:port`` (port 0: any
    free port; read ``.port``). ``start()`` binds and serves from a daemon
    thread; ``stop()`` shuts it down. ``allowed_hosts``: more names the Host
    header may give; ``token``: what ``/metrics`` needs (see the module doc).
    Without prometheus_client, ``metrics`` is None and ``/metrics`` answers 501.
    ``schedule_grace`` (seconds): ``/health`` checks the fleet's schedules (503
    "unhealthy", see :func:`health`), as ``pyconductor serve`` has it; None (the
    worker's default): it does not. ``/metrics`` shows them either way."""

    def __init__(self, worker: Worker, host: str = "127.0.0.1", port: int = 9100, *,
                 dsn: str | None = None, probe_timeout: float = PROBE_TIMEOUT,
                 allowed_hosts: Sequence[str] = (), token: str | None = None,
                 schedule_grace: float | None = None) -> None:  # fmt: skip
        self.worker = worker
        self.schedule_grace = schedule_grace
        self.host = host
        self.port = port
        self.dsn = dsn or worker.dsn
        self.host_check = HostCheck(host, allowed_hosts)
        self.token = token or None
        self.probe = DatabaseProbe(self.dsn, probe_timeout, profile=worker.profile)
        self.metrics: WorkerMetrics | None
        try:
            grace = SCHEDULE_GRACE if schedule_grace is None else schedule_grace
            self.metrics = WorkerMetrics(worker, probe=self.probe, schedule_grace=grace)
        except ImportError:
            self.metrics = None
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> Self:
        server_cls = _Server6 if ":" in self.host else _Server
        httpd = server_cls((self.host, self.port), _Handler)
        httpd.worker = self.worker
        httpd.probe = self.probe
        httpd.metrics = self.metrics
        httpd.host_check = self.host_check
        httpd.token = self.token
        httpd.schedule_grace = self.schedule_grace
        self.port = httpd.server_address[1]
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="pyconductor-http", daemon=True)  # fmt: skip
        self._thread.start()
        logger.info("worker endpoints on %s (/health, /metrics)", self.url, extra={"worker_id": self.worker.worker_id})
        if self.metrics is None:
            logger.warning("worker endpoints: /metrics answers 501: %s", METRICS_MISSING,
                           extra={"worker_id": self.worker.worker_id})  # fmt: skip
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.probe.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
