"""Scheduler: calls ``conductor.tick()`` when schedules are due.

One background thread with its own autocommit connection (application_name
``pyconductor-scheduler-<os pid>``, so ``conductor.leaders()`` maps the lock's
backend to this process):

- it contends for the leader lock ``conductor.try_lead('scheduler')``, every
  ``tick_interval`` seconds while another session holds it; the lock is a
  session lock, so when the leader's process or connection dies the lock goes
  with it and another scheduler takes over within ``tick_interval``;
- while leading (or always, with ``use_leader_lock=False``) it calls
  ``conductor.tick()`` and sleeps until the earliest ``next_due_at`` of the
  enabled schedules, at most ``tick_interval`` (a schedule created or changed
  elsewhere is seen that late at worst);
- a lost connection never stops it: it stops leading, reconnects with capped
  exponential backoff (0.1 s to 5 s) and contends again.

Correctness never depends on the lock: ``tick()`` fires each due time once by
itself (SKIP LOCKED and the unique key of ``conductor.schedule_fires``), so
any number of schedulers may tick at once; the lock only saves duplicate work.

Behind a transaction-mode pooler (``pooler="transaction"`` or
``$CONDUCTOR_POOLER``) it ticks without the lock: a session advisory lock
taken through the pooler stays on whichever server session ran that
transaction, which other clients use next, and outlives this process there
(no other scheduler would ever lead again). ``use_leader_lock=True`` with
such a pooler raises :class:`~pyconductor.link.DirectConnectionNeeded`.

Logging goes to ``logging.getLogger("pyconductor")``: each fire at INFO with
``extra`` keys schedule, due_at, task_id; leadership changes at INFO;
connection trouble at WARNING.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row

from pyconductor import defaults, queries
from pyconductor.errors import mapped_errors
from pyconductor.link import Aborted, DirectConnectionNeeded, connect_options, pooler_mode, retry
from pyconductor.wire import dumps_json

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

    def params(self) -> dict[str, Any]:
        p = asdict(self)
        p["payload"] = dumps_json(dict(self.payload))
        return p


class Scheduler:
    """Ticks Conductor's schedules from a background thread; see the module doc.

    ``Scheduler(dsn).start()`` … ``.stop()``; or ``with Scheduler(dsn): ...``.
    """

    def __init__(
        self,
        dsn: str,
        *,
        tick_interval: float = 5.0,
        use_leader_lock: bool | None = None,
        grace: float | timedelta = 60.0,
        pooler: str | None = None,
    ) -> None:
        if tick_interval <= 0:
            raise ValueError("tick_interval must be positive")
        self.pooler = pooler_mode(pooler)
        if self.pooler and use_leader_lock:
            raise DirectConnectionNeeded("the scheduler's leader lock",
                                         "it is a session advisory lock, held as long as its session lives")  # fmt: skip
        self.dsn = dsn
        self.tick_interval = float(tick_interval)
        self.use_leader_lock = not self.pooler if use_leader_lock is None else use_leader_lock
        """Whether it contends for the leader lock: yes by default, never behind a transaction-mode pooler."""
        self.grace = grace.total_seconds() if isinstance(grace, timedelta) else float(grace)
        self.application_name = f"pyconductor-scheduler-{os.getpid()}"
        self._conn: psycopg.Connection[dict[str, Any]] | None = None
        self._leading = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"<Scheduler leader={self._leading} tick_interval={self.tick_interval}>"

    # -- public ---------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        """Whether this scheduler holds the leader lock now (always False without it)."""
        return self._leading

    def start(self) -> Scheduler:
        if self._thread and self._thread.is_alive():
            return self
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="pyconductor-scheduler", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float | None = 10.0) -> None:
        """Stop the thread, give up the lock and close the connection."""
        self._stop.set()
        if self._thread:
            self._thread.join(timeout)
            self._thread = None

    def __enter__(self) -> Scheduler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def sync_schedules(self, specs: Iterable[ScheduleSpec | Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Create or replace the schedules declared in code, in one transaction.

        Each is ``conductor.create_schedule(..., replace => true)``: an unchanged
        line and zone keep their place, so every process may call this at start.
        A schedule an operator created or changed (QC207) keeps the operator's
        version: it is logged and skipped, the others are written. Returns the
        rows written. Raises the mapped ConductorError (InvalidCron, ...).
        """
        items = [s if isinstance(s, ScheduleSpec) else ScheduleSpec(**s) for s in specs]
        rows: list[dict[str, Any]] = []
        with mapped_errors(), psycopg.connect(
            self.dsn, autocommit=True, application_name=self.application_name, row_factory=dict_row,
            connect_timeout=defaults.CONNECT_TIMEOUT, **connect_options(self.dsn, self.pooler),
        ) as conn, conn.transaction():
            for spec in items:
                try:
                    with conn.transaction():  # a savepoint: a refused one leaves the others
                        row = conn.execute(queries.CREATE_SCHEDULE, spec.params()).fetchone()
                except psycopg.Error as exc:
                    if exc.sqlstate != "QC207":
                        raise
                    logger.warning("schedule %s: keeping the operator's version, not the one declared in code (%s)",
                                   spec.name, exc.diag.message_primary)  # fmt: skip
                    continue
                assert row is not None
                rows.append(row)
        return rows

    # -- the thread -----------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                # a lost connection is waited out by the worker's one reconnect loop
                wait = retry(self._step, what="scheduler", abort=self._stop, extra={},
                             on_lost=self._drop_connection)  # fmt: skip
            except Aborted:
                break
            except Exception:  # noqa: BLE001 - never let one bad tick kill the scheduler
                logger.exception("scheduler: tick failed; trying again in %.1fs", self.tick_interval)
                wait = self.tick_interval
            self._stop.wait(wait)
        self._shutdown()

    def _connection(self) -> psycopg.Connection[dict[str, Any]]:
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(
                self.dsn, autocommit=True, application_name=self.application_name, row_factory=dict_row,
                connect_timeout=defaults.CONNECT_TIMEOUT, **connect_options(self.dsn, self.pooler),
            )
        return self._conn

    def _step(self) -> float:
        """One round: contend if needed, tick if allowed; returns seconds to sleep."""
        conn = self._connection()
        if self.use_leader_lock and not self._leading:
            row = conn.execute(queries.TRY_LEAD, {"name": LEADER_LOCK}).fetchone()
            self._leading = bool(row and row["leading"])
            if not self._leading:
                return self.tick_interval
            logger.info("scheduler: leading (backend pid %s)", conn.info.backend_pid,
                        extra={"backend_pid": conn.info.backend_pid})  # fmt: skip
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
        seconds = (next_due - row["now"]).total_seconds() + DUE_SLACK
        return min(max(seconds, 0.0), self.tick_interval)

    def _drop_connection(self) -> None:
        if self._leading:
            logger.info("scheduler: no longer leading (connection lost)")
        self._leading = False
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - it is already broken
                pass

    def _shutdown(self) -> None:
        conn = self._conn
        if conn is not None and not conn.closed and self._leading:
            try:
                conn.execute(queries.RELEASE_LEAD, {"name": LEADER_LOCK})
                logger.info("scheduler: released the leader lock")
            except Exception:  # noqa: BLE001 - closing the connection releases it anyway
                pass
        self._leading = False
        self._drop_connection()
