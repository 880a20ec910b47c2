"""The dashboard's data layer: every read of its pages and every call of its
buttons, each one statement of :mod:`pyconductor.queries` (``DASHBOARD_*`` and
the operators' calls) on a small pool; no HTML, no HTTP.

Every read is index-backed and bounded: list_tasks is keyset on the primary key;
a search page (search_tasks) examines at most SEARCH_SCAN tasks through an index;
a run's tasks come by tasks_run (root_id), their attempts by attempts_task;
nothing counts or scans finished history (the charts read conductor.queue_samples,
a row per queue and minute, through queue_series). The one exception is asked for: a bulk
action's confirmation page counts the tasks its filter matches (preview_matching,
which may read every task of the statuses the action takes), once per visit and
never in a live refresh.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from pyconductor import defaults, queries, statuses
from pyconductor.dsn import redact_dsn, tcp_options
from pyconductor.errors import mapped_errors
from pyconductor.schema import check_schema
from pyconductor.wire import load_infinite_times

__all__ = [
    "BULK_ACTIONS",
    "BULK_BATCH",
    "BULK_SAMPLE",
    "RANGES",
    "SCHEDULES_LIMIT",
    "TIME_FIELDS",
    "TREE_LIMIT",
    "BulkFilter",
    "DashboardData",
    "QueuesView",
    "RunView",
    "RunsView",
    "SearchFilter",
    "SearchView",
    "check_release",
]

TREE_LIMIT = 500  # tasks of a run shown at most
STEPS_LIMIT = 1000
SCHEDULES_LIMIT = 1000  # schedules, and paused or capped queues, listed at most
SEARCH_SCAN = 10000  # tasks a search page examines at most (search_tasks' scan_limit)
LOG_ATTEMPTS = 10  # the run page shows the log lines of the task's latest attempts
BULK_SAMPLE = 20  # the newest matching ids a bulk action's confirmation lists
BULK_BATCH = 1000  # tasks one statement of a bulk action takes at most
# each bulk action and the statuses it takes when the filter names none (retryable_statuses(),
# unfinished_statuses() in SQL)
BULK_ACTIONS: dict[str, tuple[str, ...]] = {"retry": statuses.RETRYABLE, "cancel": statuses.UNFINISHED}
TIME_FIELDS = ("enqueued", "finished")  # the timestamps a bulk filter's time range may bound
# the queues page's chart ranges: name -> (span, step), what queue_series is asked for
RANGES: dict[str, tuple[timedelta, timedelta]] = {
    "hour": (timedelta(hours=1), timedelta(minutes=1)),
    "day": (timedelta(days=1), timedelta(minutes=10)),
}

Row = dict[str, Any]


logger = logging.getLogger("pyconductor")


def check_release(dsn: str) -> None:
    """Refuse (SchemaMismatch, naming the fix) a database that holds another release of the
    conductor schema, as a worker does at its start: the pages' statements are this release's.
    A database out of reach now is left to the pages, which say so while it is."""
    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=defaults.CONNECT_TIMEOUT, **tcp_options(dsn))
    except psycopg.OperationalError as exc:
        logger.warning("dashboard: the database cannot be reached to check its schema release (%s); "
                       "the pages say so until it can", redact_dsn(str(exc).strip().splitlines()[0]))  # fmt: skip
        return
    with conn:
        check_schema(conn)


@dataclass(frozen=True)
class BulkFilter:
    """What a bulk action (retry or cancel by filter) takes, as the dashboard's forms say it:
    status, kind, queue (None: any), a time range [start, end) on enqueued_at or finished_at
    (``time_of``), and a text the last attempt's error contains, ignoring case."""

    status: str | None = None
    kind: str | None = None
    queue: str | None = None
    time_of: str = "enqueued"
    start: datetime | None = None
    end: datetime | None = None
    error: str | None = None

    def is_empty(self) -> bool:
        """No filter at all: it would match every task, so no bulk action takes it (QC209)."""
        values = (self.status, self.kind, self.queue, self.start, self.end, self.error)
        return all(v is None for v in values)

    def takes(self, action: str) -> bool:
        """Whether ``action`` can take the tasks this filter matches: a filter is set, and its
        status (if any) is one the action takes."""
        return not self.is_empty() and (self.status is None or self.status in BULK_ACTIONS[action])

    def params(self) -> dict[str, Any]:
        """The statements' parameters (DASHBOARD_PREVIEW_MATCHING and the actions')."""
        finished = self.time_of == "finished"
        return {
            "status": self.status, "queue": self.queue, "kind": self.kind,
            "enqueued_after": None if finished else self.start, "enqueued_before": None if finished else self.end,
            "finished_after": self.start if finished else None, "finished_before": self.end if finished else None,
            "error_contains": self.error,
        }  # fmt: skip


@dataclass(frozen=True)
class QueuesView:
    """The queues page: stats() per queue, the paused queues and the queue caps by name, the live workers,
    the leader leases, per queue how many queued tasks wait for each reason (waiting_reasons(): queue ->
    reason -> tasks), and the charts' points over ``range`` (queue_series(): by queue, then time)."""

    stats: list[Row]
    paused: dict[str, Row]
    caps: dict[str, Row]
    workers: list[Row]
    leaders: list[Row]
    waiting: dict[str, dict[str, int]]
    series: list[Row]
    range: str


@dataclass(frozen=True)
class RunsView:
    """One page of tasks, newest first; ``more``: an older page exists."""

    rows: list[Row]
    more: bool


@dataclass(frozen=True)
class SearchFilter:
    """What a search looks for (None: any): search_tasks' parameters, the times as timestamps
    and payload_contains as the JSON text of an object."""

    kind: str | None = None
    queue: str | None = None
    status: str | None = None
    dedupe_key: str | None = None
    payload_contains: str | None = None
    enqueued_after: datetime | None = None
    enqueued_before: datetime | None = None
    finished_after: datetime | None = None
    finished_before: datetime | None = None

    def any(self) -> bool:
        return any(v is not None for v in vars(self).values())


@dataclass(frozen=True)
class SearchView:
    """One page of a search: its matches newest first; ``next_before`` where the next page starts
    (None: nothing older matches); ``cut_short``: the page stopped after examining ``scanned`` tasks,
    so it may hold fewer matches than a page, and searching further may find more."""

    rows: list[Row]
    next_before: int | None
    scanned: int
    cut_short: bool


@dataclass(frozen=True)
class RunView:
    """One task and its run: the root, the root's descendants (at most TREE_LIMIT),
    the attempts and steps of each by task id, the log lines of the task's
    latest attempts (``own``) by attempt id, and why the task waits when it is
    queued (why_waiting(): its reasons, or 'ready'; empty when it is not queued)."""

    task: Row
    root: Row
    descendants: list[Row]
    attempts: dict[int, list[Row]]
    own: list[Row]
    logs: dict[int, Row]
    steps: dict[int, list[Row]]
    waiting: list[Row]
    timeline: list[Row]
    graph: Row | None = None  # {graph_id, name} when the task is a graph's member

    def attempt_label(self, attempt_id: int) -> str:
        """The attempt's label as run_timeline names it ('attempt 1, resume 2')."""
        return next((s["label"] for s in self.timeline if s["span"] == "attempt" and s["attempt_id"] == attempt_id), "")


class DashboardData:
    """The reads and calls of one dashboard, on a pool of at most ``pool_size``
    sessions (opened by :meth:`open`). Conductor's SQLSTATEs come back as its
    errors (:func:`pyconductor.errors.mapped_errors`)."""

    def __init__(self, dsn: str, pool_size: int = 4) -> None:
        self.pool = ConnectionPool(
            dsn, min_size=1, max_size=pool_size, open=False, name="pyconductor-dashboard",
            kwargs={"autocommit": True, "row_factory": dict_row, "application_name": "pyconductor dashboard",
                    **tcp_options(dsn)},
            configure=load_infinite_times,
        )  # fmt: skip
        self._has_steps: bool | None = None

    def open(self) -> None:
        self.pool.open()

    def close(self) -> None:
        self.pool.close()

    def _rows(self, query: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        with mapped_errors(), self.pool.connection() as conn:
            return conn.execute(query, params or {}).fetchall()

    def _has_steps_table(self) -> bool:
        if not self._has_steps:  # cached once true; the table may appear after a migrate
            self._has_steps = bool(self._rows(queries.DASHBOARD_HAS_STEPS)[0]["has_steps"])
        return self._has_steps

    # -- pages -----------------------------------------------------------------------

    def queues(self, range_name: str = "hour") -> QueuesView:
        return QueuesView(
            stats=self._rows(queries.STATS),
            paused={r["queue"]: r for r in self._rows(queries.DASHBOARD_PAUSED_QUEUES, {"limit": SCHEDULES_LIMIT})},
            caps={r["queue"]: r for r in self._rows(queries.DASHBOARD_QUEUE_LIMITS, {"limit": SCHEDULES_LIMIT})},
            workers=self._rows(queries.DASHBOARD_WORKERS),
            leaders=self._rows(queries.LEADERS),
            waiting=self._waiting_reasons(),
            series=self.series(range_name),
            range=range_name,
        )

    def series(self, range_name: str, queues: list[str] | None = None) -> list[Row]:
        """queue_series() over the range (a key of :data:`~pyconductor.web.charts.RANGES`) up to the
        current minute on the database's clock: every queue sampled in it, or those of ``queues``."""
        span, step = RANGES[range_name]
        return self._rows(queries.QUEUE_SERIES, {"span": span, "step": step, "queues": queues or None})

    def _waiting_reasons(self) -> dict[str, dict[str, int]]:
        waiting: dict[str, dict[str, int]] = {}
        for r in self._rows(queries.WAITING_REASONS):
            waiting.setdefault(r["queue"], {})[r["reason"]] = r["tasks"]
        return waiting

    def runs(self, status: str | None, queue: str | None, kind: str | None, before: int | None,
             limit: int) -> RunsView:  # fmt: skip
        rows = self._rows(queries.LIST_TASKS, {
            "status": status, "queue": queue, "kind": kind, "before_id": before, "limit": limit + 1,
        })  # fmt: skip
        return RunsView(rows[:limit], more=len(rows) > limit)

    def search(self, what: SearchFilter, before: int | None, limit: int, scan: int = SEARCH_SCAN) -> SearchView:
        """One page of conductor.search_tasks: at most ``limit`` matches below task ``before``,
        examining at most ``scan`` tasks."""
        rows = self._rows(queries.SEARCH_TASKS, {**vars(what), "before_id": before, "limit": limit,
                                                  "scan_limit": scan})  # fmt: skip
        first = rows[0]
        return SearchView([r for r in rows if r["id"] is not None], first["next_before_id"], first["scanned"],
                          first["cut_short"])  # fmt: skip

    def run(self, task_id: int) -> RunView:
        """Task ``task_id`` and its run; NotFound when there is no such task."""
        task = self._rows(queries.GET_TASK, {"task_id": task_id})[0]
        root_id = task["root_id"]
        root = task if root_id == task_id else self._rows(queries.GET_TASK, {"task_id": root_id})[0]
        descendants = self._rows(queries.DASHBOARD_RUN_TASKS, {"root_id": root_id, "limit": TREE_LIMIT})
        ids = [root_id, *(d["id"] for d in descendants)]
        attempts: dict[int, list[Row]] = {}
        for a in self._rows(queries.DASHBOARD_ATTEMPTS, {"task_ids": ids}):
            attempts.setdefault(a["task_id"], []).append(a)
        own = attempts.get(task_id, [])[-LOG_ATTEMPTS:]
        logs = {r["attempt_id"]: r for r in self._rows(queries.DASHBOARD_ATTEMPT_LOGS,
                                                        {"attempt_ids": [a["id"] for a in own]})
                } if own else {}  # fmt: skip
        steps: dict[int, list[Row]] = {}
        if self._has_steps_table():
            for s in self._rows(queries.DASHBOARD_STEPS, {"task_ids": ids, "limit": STEPS_LIMIT}):
                steps.setdefault(s["task_id"], []).append(s)
        waiting = self._rows(queries.WHY_WAITING, {"task_ids": [task_id]}) if task["status"] == statuses.QUEUED else []
        timeline = self._rows(queries.RUN_TIMELINE, {"task_id": task_id, "max_tasks": TREE_LIMIT + 1})
        graph = next(iter(self._rows(queries.DASHBOARD_TASK_GRAPH, {"task_id": task_id})), None)
        return RunView(task, root, descendants, attempts, own, logs, steps, waiting, timeline, graph)

    def graph(self, graph_id: int) -> list[Row]:
        """conductor.graph: the graph's tasks by layer; GraphNotFound when there is none."""
        return self._rows(queries.GRAPH, {"graph_id": graph_id})

    def schedules(self) -> list[Row]:
        """Every schedule (at most SCHEDULES_LIMIT) with its latest fire."""
        return self._rows(queries.DASHBOARD_SCHEDULES, {"limit": SCHEDULES_LIMIT})

    def preview_matching(self, action: str, bulk: BulkFilter) -> tuple[int, list[int]]:
        """conductor.preview_matching: how many tasks ``action`` would take under ``bulk`` now,
        and the newest BULK_SAMPLE of their ids (newest first)."""
        row = self._rows(queries.DASHBOARD_PREVIEW_MATCHING, {"action": action, **bulk.params(),
                                                              "sample": BULK_SAMPLE})[0]  # fmt: skip
        return int(row["matching"]), list(row["sample_ids"] or [])

    # -- buttons -----------------------------------------------------------------------

    def act_matching(self, action: str, bulk: BulkFilter, expected: int, batch: int) -> int:
        """One batch of conductor.retry_matching or cancel_matching: how many tasks it changed
        (a cancel counts the descendants it cancelled). MatchesMoreThanExpected (QC210) when
        more than ``expected`` tasks match now; nothing changed then."""
        statement = queries.DASHBOARD_RETRY_MATCHING if action == "retry" else queries.DASHBOARD_CANCEL_MATCHING
        changed: int = self._rows(statement, {**bulk.params(), "expected": expected, "batch": batch})[0]["changed"]
        return changed

    def retry(self, task_id: int) -> None:
        """conductor.retry: the task is queued again."""
        self._rows(queries.RETRY, {"task_id": task_id})

    def rewind(self, task_id: int, step: str) -> None:
        """conductor.rewind: the finished run is queued again from ``step``, the steps before it kept."""
        self._rows(queries.REWIND, {"task_id": task_id, "from_step": step})

    def fork(self, task_id: int, step: str) -> int:
        """conductor.fork: the id of the copy, which carries the steps before ``step``."""
        fork_id: int = self._rows(queries.FORK, {"task_id": task_id, "from_step": step})[0]["task_id"]
        return fork_id

    def cancel(self, task_id: int) -> int:
        """conductor.cancel: how many tasks it cancelled."""
        cancelled: int = self._rows(queries.CANCEL, {"task_id": task_id})[0]["cancel"]
        return cancelled

    def fire_schedule(self, name: str) -> int:
        """conductor.fire_schedule: the id of the task it enqueued."""
        task_id: int = self._rows(queries.FIRE_SCHEDULE, {"name": name})[0]["task_id"]
        return task_id

    def enable_schedule(self, name: str, enabled: bool) -> None:
        """conductor.enable_schedule: the schedule is enabled (or disabled)."""
        self._rows(queries.DASHBOARD_ENABLE_SCHEDULE, {"name": name, "enabled": enabled})

    def pause_queue(self, queue: str) -> bool:
        """conductor.pause_queue: whether it changed the queue's state."""
        paused: bool = self._rows(queries.PAUSE_QUEUE, {"queue": queue})[0]["changed"]
        return paused

    def resume_queue(self, queue: str) -> bool:
        """conductor.resume_queue: whether it changed the queue's state."""
        resumed: bool = self._rows(queries.RESUME_QUEUE, {"queue": queue})[0]["changed"]
        return resumed
