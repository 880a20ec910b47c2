"""Scheduler: calls ``conductor.tick()`` when schedules are due.

A leader duty (:mod:`pyconductor.leader`): a worker or ``pyconductor serve``
runs it on the process's one leader connection (application_name
``pyconductor leader <worker id>``), beside retention and the singletons;
alone (``Scheduler(dsn).start()``, ``pyconductor scheduler``) it has a thread
and an autocommit connection of its own (``pyconductor-scheduler-<os pid>``):

- it leads under the lease ``'scheduler'`` (:class:`~pyconductor.leadership.Lease`,
  ``conductor.try_lead``): a row of the database, renewed every step, at least
  every third of the lease (``lease``, default three times ``tick_interval``),
  taken over by another scheduler once it expires. So when the leader's
  process dies (even by kill -9) another takes over within about ``lease`` +
  ``tick_interval`` seconds; on a clean stop it releases the lease and another
  takes over at its next try. No session outside the engine can hold the lease
  (v0.2.0's session advisory lock could be taken by any login). While it
  cannot renew (a lost connection, the database away) it stops ticking once
  its lease has run out;
- while leading (or always, with ``use_leader_lock=False``) it calls
  ``conductor.tick()`` and sleeps until the earliest ``next_due_at`` of the
  enabled schedules, at most ``tick_interval`` (a schedule created or changed
  elsewhere is seen that late at worst), and contenders try every
  ``tick_interval``;
- a lost connection never stops it: the leader service reconnects with capped
  exponential backoff (0.1 s to 5 s) and it renews or contends again.

Correctness never depends on the lease: ``tick()`` fires each due time once
by itself (SKIP LOCKED and the unique key of ``conductor.schedule_fires``), so
any number of schedulers may tick at once; the lease only saves duplicate
work. Every call is one autocommit statement, so the scheduler leads the same
way behind a transaction-mode pooler (``pooler="transaction"`` or
``$CONDUCTOR_POOLER``).

Logging goes to ``logging.getLogger("pyconductor")``: each fire at INFO with
``extra`` keys schedule, due_at, task_id; leadership changes at INFO;
connection trouble at WARNING.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any, Self

import psycopg
from psycopg.rows import dict_row

from pyconductor import defaults, queries
from pyconductor.errors import mapped_errors
from pyconductor.leader import Duty, Leader
from pyconductor.leadership import Lease
from pyconductor.profile import ConnectionProfile, profile_from
from pyconductor.wire import dumps_json, interval_text

__all__ = ["LEADER_LOCK", "ScheduleSpec", "Scheduler"]

logger = logging.getLogger("pyconductor")

LEADER_LOCK = "scheduler"
# Wake this long after a due time, so the tick never runs a hair before it.
DUE_SLACK = 0.005


@dataclass
class ScheduleSpec:
    """A schedule declared in code; the arguments of ``conductor.create_schedule``.

    The defaults are create_schedule's (its contract: ``\\df+ conductor.create_schedule``).
    """

    name: str
    cron: str
    kind: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    queue: str = "default"
    timezone: str = "UTC"
    priority: int = 0
    max_attempts: int | None = None
    dedupe_key: str | None = None
    concurrency_key: str | None = None
    catch_up: str = "once"
    catch_up_limit: int = 100
    enabled: bool | None = None  # None: on when new, unchanged when it exists (an operator's off stays off)
    concurrency_limit: int | None = None  # with concurrency_key; None: the kind's, else 1
    expires_in: float | timedelta | None = None  # a fire not started this long after it is enqueued ends expired
    rate_key: str | None = None  # the fires' key for per-key rate limits

    def params(self) -> dict[str, Any]:
        p = asdict(self)
        p["payload"] = dumps_json(dict(self.payload))
        p["expires_in"] = interval_text(self.expires_in)
        return p


class Scheduler(Duty):
    """Ticks Conductor's schedules; see the module doc. A :class:`~pyconductor.leader.Duty`:
    a process's :class:`~pyconductor.leader.Leader` runs it beside its other leader duties;
    ``Scheduler(dsn).start()`` … ``.stop()`` (or ``with Scheduler(dsn): ...``) runs it
    alone, on a leader service and connection of its own.
    """

    label = "scheduler"

    def __init__(
        self,
        dsn: str,
        *,
        tick_interval: float = 5.0,
        use_leader_lock: bool | None = None,
        grace: float | timedelta = 60.0,
        pooler: ConnectionProfile | str | None = None,
        lease: float | None = None,
    ) -> None:
        if tick_interval <= 0:
            raise ValueError("tick_interval must be positive")
        self.profile = profile_from(pooler)
        self.dsn = dsn
        self.tick_interval = float(tick_interval)
        self.contend_every = self.tick_interval
        self.use_leader_lock = True if use_leader_lock is None else use_leader_lock
        """Whether it leads under the lease 'scheduler' (default), or ticks without it."""
        self.grace = grace.total_seconds() if isinstance(grace, timedelta) else float(grace)
        self.application_name = f"pyconductor-scheduler-{os.getpid()}"
        ttl = min(3600.0, lease if lease is not None else 3 * self.tick_interval)
        self.lease = Lease(LEADER_LOCK, ttl) if self.use_leader_lock else None
        """The lease 'scheduler' this scheduler takes and renews (None without ``use_leader_lock``)."""
        self._alone: Leader | None = None

    def __repr__(self) -> str:
        return f"<Scheduler leader={self.is_leader} tick_interval={self.tick_interval}>"

    # -- alone ----------------------------------------------------------------------

    def start(self) -> Self:
        """Run on a leader service of its own (its own thread and connection)."""
        if self._alone is None:
            self._alone = Leader(self.dsn, [self], application_name=self.application_name, profile=self.profile)
            self._alone.start()
        return self

    def stop(self, timeout: float | None = 10.0) -> None:
        """Stop the thread, give up the lease and close the connection."""
        alone, self._alone = self._alone, None
        if alone is not None:
            alone.stop(timeout)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def sync_schedules(self, specs: Iterable[ScheduleSpec | Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Create or replace the schedules declared in code, in one transaction.

        Each is ``conductor.create_schedule(..., replace => true)``: an unchanged
        line and zone keep their place, so every process may call this at start.
        A schedule an operator created or changed (QC207), or one another login
        declared (QC208), keeps that version: it is logged and skipped, the
        others are written. Returns the rows written. Raises the mapped
        ConductorError (InvalidCron, ...).
        """
        items = [s if isinstance(s, ScheduleSpec) else ScheduleSpec(**s) for s in specs]
        rows: list[dict[str, Any]] = []
        with (
            mapped_errors(),
            psycopg.connect(
                self.dsn,
                autocommit=True,
                application_name=self.application_name,
                row_factory=dict_row,
                connect_timeout=defaults.CONNECT_TIMEOUT,
                **self.profile.connect_options(self.dsn),
            ) as conn,
            conn.transaction(),
        ):
            for spec in items:
                try:
                    with conn.transaction():  # a savepoint: a refused one leaves the others
                        row = conn.execute(queries.CREATE_SCHEDULE, spec.params()).fetchone()
                except psycopg.Error as exc:
                    if exc.sqlstate not in ("QC207", "QC208"):
                        raise
                    whose = "the operator's" if exc.sqlstate == "QC207" else "another login's"
                    logger.warning("schedule %s: keeping %s version, not the one declared in code (%s)",
                                   spec.name, whose, exc.diag.message_primary)  # fmt: skip
                    continue
                assert row is not None
                rows.append(row)
        return rows

    # -- the duty ---------------------------------------------------------------------

    def lead(self, conn: psycopg.Connection[dict[str, Any]]) -> float:
        """One tick; seconds until the next due time, at most ``tick_interval``."""
        for fire in conn.execute(queries.TICK, {"grace": f"{self.grace} seconds"}).fetchall():
            logger.info(
                "scheduler: fired %s due %s as task %s", fire["schedule_name"], fire["due_at"], fire["task_id"],
                extra={"schedule": fire["schedule_name"], "due_at": fire["due_at"], "task_id": fire["task_id"]},
            )  # fmt: skip
        return self._until_next_due(conn)

    def _until_next_due(self, conn: psycopg.Connection[dict[str, Any]]) -> float:
        row = conn.execute(queries.NEXT_DUE).fetchone()
        next_due: datetime | None = row["next_due_at"] if row else None
        if next_due is None or row is None:
            return self.tick_interval
        now: datetime = row["now"]
        seconds = (next_due - now).total_seconds() + DUE_SLACK
        return min(max(seconds, 0.0), self.tick_interval)
