"""Retention: the maintenance role's loop over ``conductor.apply_retention()``.

What is deleted, and when, is the database's decision (``\\df+
conductor.apply_retention``): whole runs whose every task finished, past
the root kind's ``retain_succeeded``/``retain_failed`` (else the settings'),
and events past ``settings.retain_events``; never an unfinished run. This
loop only calls it, in batches, on one process of the fleet at a time:

- one background thread with its own autocommit connection (application_name
  ``pyconductor-retention-<os pid>``, so ``conductor.leaders(array['retention'])``
  maps the lock to this process) contends for the leader lock
  ``conductor.try_lead('retention')`` every ``interval`` seconds; the lock is
  a session lock, so it goes with a dead process or connection and another
  process takes over at its next round;
- while leading, every ``interval`` seconds (default 60) it calls
  ``apply_retention(batch)`` until a call deletes nothing, each call its own
  short transaction, and logs what the round deleted at INFO (counts per
  ``what``: succeeded_runs, failed_runs, events); ``deleted`` counts them
  since start (``/metrics``: ``conductor_retention_deleted_total{what}``);
- a lost connection is waited out by :func:`pyconductor.link.retry` (it stops
  leading meanwhile); any other error is logged and tried again next round.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

import psycopg
from psycopg.rows import dict_row

from pyconductor import defaults
from pyconductor.dsn import tcp_options
from pyconductor.link import Aborted, retry

__all__ = ["BATCH", "INTERVAL", "LEADER_LOCK", "WHATS", "Retention"]

logger = logging.getLogger("pyconductor")

LEADER_LOCK = "retention"
INTERVAL = 60.0  # seconds between rounds (and between tries for the lock)
BATCH = 1000  # what one apply_retention call deletes at most
WHATS = ("succeeded_runs", "failed_runs", "events")  # the rows apply_retention answers

TRY_LEAD = "select conductor.try_lead(name => %(name)s) as leading"
RELEASE_LEAD = "select conductor.release_lead(name => %(name)s) as released"
APPLY_RETENTION = "select what, deleted from conductor.apply_retention(batch => %(batch)s)"


class Retention:
    """Applies retention under the leader lock 'retention'; see the module doc.

    ``Retention(dsn).start()`` … ``.stop()``; ``run_once()`` is one round
    (the lock taken or not) on the caller's thread, for tests and for the
    impatient: not while the thread runs (they would share a connection).
    """

    def __init__(self, dsn: str, *, interval: float = INTERVAL, batch: int = BATCH) -> None:
        if interval <= 0:
            raise ValueError(f"the retention interval must be positive, got {interval}")
        if batch < 1:
            raise ValueError(f"the retention batch must be 1 or more, got {batch}")
        self.dsn = dsn
        self.interval = float(interval)
        self.batch = batch
        self.application_name = f"pyconductor-retention-{os.getpid()}"
        self.deleted: dict[str, int] = dict.fromkeys(WHATS, 0)
        """Rows deleted since start, per what (other whats the database answers are added)."""
        self._leading = False
        self._conn: psycopg.Connection[dict[str, Any]] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"<Retention leader={self._leading} interval={self.interval} batch={self.batch}>"

    @property
    def is_leader(self) -> bool:
        """Whether this process holds the leader lock 'retention' now."""
        return self._leading

    def start(self) -> Retention:
        if self._thread is not None and self._thread.is_alive():
            return self
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="pyconductor-retention", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float | None = 5.0) -> None:
        """End the thread (a call in flight finishes first), release the lock, close."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)  # the thread releases and closes as it ends
        else:
            self._shutdown()  # run_once() on the caller's thread may hold the lock

    def __enter__(self) -> Retention:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def run_once(self) -> dict[str, int]:
        """One round now: take the lock if free, and while holding it delete in
        batches until nothing is left; what this round deleted, per what
        (empty when another process leads)."""
        return retry(self._round, what="retention", abort=self._stop, extra={}, on_lost=self._drop_connection)

    # -- the thread -----------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Aborted:
                break
            except Exception:  # noqa: BLE001 - one bad round never ends the loop
                logger.exception("retention: round failed; trying again in %.0fs", self.interval)
            self._stop.wait(self.interval)
        self._shutdown()

    def _connection(self) -> psycopg.Connection[dict[str, Any]]:
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.dsn, autocommit=True, application_name=self.application_name,
                                         row_factory=dict_row, connect_timeout=defaults.CONNECT_TIMEOUT,
                                         **tcp_options(self.dsn))  # fmt: skip
        return self._conn

    def _round(self) -> dict[str, int]:
        conn = self._connection()
        if not self._leading:
            row = conn.execute(TRY_LEAD, {"name": LEADER_LOCK}).fetchone()
            self._leading = bool(row and row["leading"])
            if not self._leading:
                return {}
            logger.info("retention: leading (backend pid %s)", conn.info.backend_pid)
        total: dict[str, int] = {}
        while not self._stop.is_set():
            rows = conn.execute(APPLY_RETENTION, {"batch": self.batch}).fetchall()
            for row in rows:
                n = int(row["deleted"] or 0)
                if n:
                    total[row["what"]] = total.get(row["what"], 0) + n
                    self.deleted[row["what"]] = self.deleted.get(row["what"], 0) + n
            if not any(row["deleted"] for row in rows):
                break
        if total:
            logger.info("retention: deleted %s", ", ".join(f"{n} {what}" for what, n in sorted(total.items())),
                        extra={"retention_deleted": dict(total)})  # fmt: skip
        return total

    def _drop_connection(self) -> None:
        if self._leading:
            logger.info("retention: no longer leading (connection lost)")
        self._leading = False
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - it is broken already
                pass

    def _shutdown(self) -> None:
        conn = self._conn
        if conn is not None and not conn.closed and self._leading:
            try:
                conn.execute(RELEASE_LEAD, {"name": LEADER_LOCK})
                logger.info("retention: released the leader lock")
            except Exception:  # noqa: BLE001 - closing the connection releases it anyway
                pass
        self._leading = False
        self._drop_connection()
