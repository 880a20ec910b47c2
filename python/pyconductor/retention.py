"""Retention: the maintenance role's loop over ``conductor.apply_retention()``.

What is deleted, and when, is the database's decision (``\\df+
conductor.apply_retention``): whole runs whose every task finished, past
the root kind's ``retain_succeeded``/``retain_failed`` (else the settings'),
and events past ``settings.retain_events``; never an unfinished run. This
loop only calls it, in batches, on one process of the fleet at a time:

- a leader duty (:mod:`pyconductor.leader`: on ``pyconductor serve``'s one
  leader connection; alone, a thread and connection of its own,
  application_name ``pyconductor-retention-<os pid>``) leads under the lease ``'retention'``
  (:class:`~pyconductor.leadership.Lease`, ``conductor.try_lead``; listed by
  ``conductor.leaders(array['retention'])``): tried every ``interval`` seconds,
  renewed every third of the lease (three times ``interval``, at least 5 s),
  also between the batches of a long round; a process that dies keeps it
  until it runs out, then another takes over at its next round; a clean stop
  releases it;
- while leading, every ``interval`` seconds (default 60) it calls
  ``apply_retention(batch)`` until a call deletes nothing, each call its own
  short transaction and one step of the leader service (the other duties'
  steps come between two batches), and logs what the round deleted at INFO (counts per
  ``what``: succeeded_runs, failed_runs, events); ``deleted`` counts them
  since start (``/metrics``: ``conductor_retention_deleted_total{what}``);
  a round stops early when the lease could not be renewed in time;
- a lost connection is waited out by the leader service (``run_once``:
  :func:`pyconductor.link.retry`); any other error is logged and tried again
  next round. Every call is one autocommit
  statement, so it runs the same behind a transaction-mode pooler
  (``pooler="transaction"``).
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any, Self

import psycopg

from pyconductor import queries
from pyconductor.leader import Duty, Leader
from pyconductor.leadership import Lease
from pyconductor.link import retry
from pyconductor.profile import ConnectionProfile, profile_from

__all__ = ["BATCH", "INTERVAL", "LEADER_LOCK", "MIN_LEASE", "WHATS", "Retention"]

logger = logging.getLogger("pyconductor")

LEADER_LOCK = "retention"
INTERVAL = 60.0  # seconds between rounds (and between tries for the lock)
BATCH = 1000  # what one apply_retention call deletes at most
WHATS = ("succeeded_runs", "failed_runs", "events", "exclusive_locks")  # the rows apply_retention answers
MIN_LEASE = 5.0  # seconds: the lease is three rounds long, and never shorter than this


class Retention(Duty):
    """Applies retention under the lease 'retention'; see the module doc. A
    :class:`~pyconductor.leader.Duty`: ``pyconductor serve``'s maintenance role
    runs it on the process's leader service; ``Retention(dsn).start()`` …
    ``.stop()`` runs it alone (a thread and a connection of its own).
    ``run_once()`` is one round (the lease taken or not) on the caller's
    thread, for tests and for the impatient: not while it runs otherwise.
    """

    label = "retention"

    def __init__(self, dsn: str, *, interval: float = INTERVAL, batch: int = BATCH,
                 pooler: ConnectionProfile | str | None = None) -> None:  # fmt: skip
        if interval <= 0:
            raise ValueError(f"the retention interval must be positive, got {interval}")
        if batch < 1:
            raise ValueError(f"the retention batch must be 1 or more, got {batch}")
        self.dsn = dsn
        self.interval = float(interval)
        self.contend_every = self.interval
        self.batch = batch
        self.profile = profile_from(pooler)
        self.application_name = f"pyconductor-retention-{os.getpid()}"
        self.deleted: dict[str, int] = dict.fromkeys(WHATS, 0)
        """Rows deleted since start, per what (other whats the database answers are added)."""
        self.lease: Lease = Lease(LEADER_LOCK, min(3600.0, max(MIN_LEASE, 3 * self.interval)))
        """The lease 'retention' this process takes and renews."""
        self._round: dict[str, int] = {}  # what the round under way deleted so far
        self._alone = Leader(dsn, [self], application_name=self.application_name, profile=self.profile)
        self._halt = threading.Event()

    def __repr__(self) -> str:
        return f"<Retention leader={self.is_leader} interval={self.interval} batch={self.batch}>"

    def start(self) -> Self:
        """Run on a leader service of its own."""
        self._alone.start()
        return self

    def stop(self, timeout: float | None = 5.0) -> None:
        """End the thread (a call in flight finishes first), release the lease, close."""
        self._halt.set()  # a run_once() waiting for the database gives up
        self._alone.stop(timeout)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def run_once(self) -> dict[str, int]:
        """One round now: take the lease if free (or renew it), and while holding
        it delete in batches until nothing is left; what this round deleted, per
        what (empty when another process leads)."""
        return retry(self._whole_round, what="retention", abort=self._halt, extra={},
                     on_lost=self._alone.drop_connection)  # fmt: skip

    def _whole_round(self) -> dict[str, int]:
        conn = self._alone.connection()
        self._round = {}
        while self.lease.keep(conn) and self._batch(conn):
            pass
        return self._end_round()

    # -- the duty ---------------------------------------------------------------------

    def lead(self, conn: psycopg.Connection[dict[str, Any]]) -> float:
        """One batch of the round; at once again while a batch deletes, else after ``interval``."""
        if self._batch(conn):
            return 0.0
        self._end_round()
        return self.interval

    def resign(self) -> None:
        self._end_round()  # a round stops early when the lease could not be renewed in time

    def _batch(self, conn: psycopg.Connection[dict[str, Any]]) -> bool:
        """One apply_retention call; whether it deleted anything."""
        rows = conn.execute(queries.APPLY_RETENTION, {"batch": self.batch}).fetchall()
        for row in rows:
            n = int(row["deleted"] or 0)
            if n:
                self._round[row["what"]] = self._round.get(row["what"], 0) + n
                self.deleted[row["what"]] = self.deleted.get(row["what"], 0) + n
        return any(row["deleted"] for row in rows)

    def _end_round(self) -> dict[str, int]:
        """Log what the round deleted (nothing when it deleted nothing) and start the next."""
        total, self._round = self._round, {}
        if total:
            logger.info("retention: deleted %s", ", ".join(f"{n} {what}" for what, n in sorted(total.items())),
                        extra={"retention_deleted": dict(total)})  # fmt: skip
        return total
