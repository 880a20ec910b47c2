"""Retention: the maintenance role's loop over ``conductor.apply_retention()``.

What is deleted, and when, is the database's decision (``\\df+
conductor.apply_retention``): whole runs whose every task finished, past
the root kind's ``retain_succeeded``/``retain_failed`` (else the settings'),
and events past ``settings.retain_events``; never an unfinished run. This
loop only calls it, in batches, on one process of the fleet at a time:

- one background thread with its own autocommit connection (application_name
  ``pyconductor-retention-<os pid>``) leads under the lease ``'retention'``
  (:class:`~pyconductor.leadership.Lease`, ``conductor.try_lead``; listed by
  ``conductor.leaders(array['retention'])``): tried every ``interval`` seconds,
  renewed every third of the lease (three times ``interval``, at least 5 s),
  also between the batches of a long round; a process that dies keeps it
  until it runs out, then another takes over at its next round; a clean stop
  releases it;
- while leading, every ``interval`` seconds (default 60) it calls
  ``apply_retention(batch)`` until a call deletes nothing, each call its own
  short transaction, and logs what the round deleted at INFO (counts per
  ``what``: succeeded_runs, failed_runs, events); ``deleted`` counts them
  since start (``/metrics``: ``conductor_retention_deleted_total{what}``);
  a round stops early when the lease could not be renewed in time;
- a lost connection is waited out by :func:`pyconductor.link.retry`; any other
  error is logged and tried again next round. Every call is one autocommit
  statement, so it runs the same behind a transaction-mode pooler
  (``pooler="transaction"``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from typing import Any, Self

import psycopg
from psycopg.rows import dict_row

from pyconductor import defaults
from pyconductor.leadership import Lease
from pyconductor.link import Aborted, retry
from pyconductor.profile import ConnectionProfile, profile_from

__all__ = ["BATCH", "INTERVAL", "LEADER_LOCK", "MIN_LEASE", "WHATS", "Retention"]

logger = logging.getLogger("pyconductor")

LEADER_LOCK = "retention"
INTERVAL = 60.0  # seconds between rounds (and between tries for the lock)
BATCH = 1000  # what one apply_retention call deletes at most
WHATS = ("succeeded_runs", "failed_runs", "events", "exclusive_locks")  # the rows apply_retention answers
MIN_LEASE = 5.0  # seconds: the lease is three rounds long, and never shorter than this

APPLY_RETENTION = "select what, deleted from conductor.apply_retention(batch => %(batch)s)"


class Retention:
    """Applies retention under the lease 'retention'; see the module doc.

    ``Retention(dsn).start()`` … ``.stop()``; ``run_once()`` is one round
    (the lock taken or not) on the caller's thread, for tests and for the
    impatient: not while the thread runs (they would share a connection).
    """

    def __init__(self, dsn: str, *, interval: float = INTERVAL, batch: int = BATCH,
                 pooler: ConnectionProfile | str | None = None) -> None:  # fmt: skip
        if interval <= 0:
            raise ValueError(f"the retention interval must be positive, got {interval}")
        if batch < 1:
            raise ValueError(f"the retention batch must be 1 or more, got {batch}")
        self.dsn = dsn
        self.interval = float(interval)
        self.batch = batch
        self.profile = profile_from(pooler)
        self.application_name = f"pyconductor-retention-{os.getpid()}"
        self.deleted: dict[str, int] = dict.fromkeys(WHATS, 0)
        """Rows deleted since start, per what (other whats the database answers are added)."""
        self.lease = Lease(LEADER_LOCK, min(3600.0, max(MIN_LEASE, 3 * self.interval)))
        """The lease 'retention' this process takes and renews."""
        self._leading = False
        self._conn: psycopg.Connection[dict[str, Any]] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"<Retention leader={self.is_leader} interval={self.interval} batch={self.batch}>"

    @property
    def is_leader(self) -> bool:
        """Whether this process holds the lease 'retention' now (and it has not run out)."""
        return self.lease.held

    def start(self) -> Self:
        if self._thread is not None and self._thread.is_alive():
            return self
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="pyconductor-retention", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float | None = 5.0) -> None:
        """End the thread (a call in flight finishes first), release the lease, close."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)  # the thread releases and closes as it ends
        else:
            self._shutdown()  # run_once() on the caller's thread may hold the lease

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def run_once(self) -> dict[str, int]:
        """One round now: take the lease if free (or renew it), and while holding
        it delete in batches until nothing is left; what this round deleted, per
        what (empty when another process leads)."""
        return retry(self._round, what="retention", abort=self._stop, extra={}, on_lost=self._drop_connection)

    # -- the thread -----------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Aborted:
                break
            except Exception:  # one bad round never ends the loop
                logger.exception("retention: round failed; trying again in %.0fs", self.interval)
            self._stop.wait(self.interval)
        self._shutdown()

    def _connection(self) -> psycopg.Connection[dict[str, Any]]:
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.dsn, autocommit=True, application_name=self.application_name,
                                         row_factory=dict_row, connect_timeout=defaults.CONNECT_TIMEOUT,
                                         **self.profile.connect_options(self.dsn))  # fmt: skip
        return self._conn

    def _round(self) -> dict[str, int]:
        conn = self._connection()
        if not self._keep(conn):
            return {}
        total: dict[str, int] = {}
        while not self._stop.is_set() and self._keep(conn):
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

    def _keep(self, conn: psycopg.Connection[dict[str, Any]]) -> bool:
        """Take or renew the lease when due; whether this process leads now (a change is logged)."""
        leading = self.lease.keep(conn)
        if leading and not self._leading:
            logger.info("retention: leading (lease %s, %gs)", self.lease.holder, self.lease.ttl)
        elif self._leading and not leading:
            logger.info("retention: no longer leading (the lease could not be renewed in time)")
        self._leading = leading
        return leading

    def _drop_connection(self) -> None:
        # the lease stays this process's until it runs out: a new connection renews it
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # it is broken already
                conn.close()

    def _shutdown(self) -> None:
        conn = self._conn
        if conn is not None and not conn.closed and self.lease.held:
            try:
                self.lease.release(conn)
                logger.info("retention: released the lease")
            except Exception:  # noqa: BLE001 - it runs out by itself
                pass
        self.lease.forget()
        self._leading = False
        self._drop_connection()
