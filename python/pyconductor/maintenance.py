"""Maintenance: the heartbeat and the reaper, each one thread on its own link.

- :class:`Heartbeat` extends the leases of everything the worker holds with one
  ``conductor.heartbeat`` call per interval. An attempt answered 'cancelled'
  or 'lost' is no longer held: its handler is flagged (``ctx.cancelled``) and
  its outcome will be discarded; 'timed_out' (its time limit passed) ends it
  as the executor's watchdog would; 'finished' means a report of this worker
  crossed the beat, and is left to the reporter. A stuck handler thread never
  delays it: nothing here waits for a handler.
- :class:`Reaper` runs ``conductor.reap_report()`` every ``interval``, or sooner
  when ``conductor.next_wake()`` says a wait's deadline or a lease's expiry
  comes first (durable sleeps and timeouts wake on time). It looks again at
  once when a handler parks a wait (:meth:`Reaper.nudge`), or when a claim's
  lease ends before its next run (:meth:`Reaper.expect`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from pyconductor import queries
from pyconductor.ledger import Ledger, task_extra
from pyconductor.link import Aborted, Link

__all__ = ["Heartbeat", "Reaper"]

logger = logging.getLogger("pyconductor")

REAP_MIN_WAIT = 0.02  # seconds between reaps when next_wake is due now
REAP_STUCK_WAIT = 0.5  # ... and when it was already due at the last reap (a row reap skipped, locked)


class Heartbeat:
    """One heartbeat per ``interval`` for every held attempt; the answers go to
    ``on_lost(ctx, state)`` ('cancelled', 'lost') and ``on_timed_out(attempt_id)``."""

    def __init__(self, ledger: Ledger, link: Link, halt: threading.Event, *, lease: timedelta, interval: float,
                 on_lost: Callable[[Any, str], None], on_timed_out: Callable[[int], None]) -> None:  # fmt: skip
        self.ledger = ledger
        self.link = link
        self.halt = halt
        self.lease = lease
        self.interval = interval
        self.on_lost = on_lost
        self.on_timed_out = on_timed_out
        self._extra = {"worker_id": link.worker_id}
        self.thread = threading.Thread(target=self._loop, name="pyconductor-heartbeat", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _loop(self) -> None:
        while not self.halt.wait(self.interval):
            self.beat()

    def beat(self) -> list[dict[str, Any]]:
        """One heartbeat now; returns the answers (none when it could not be sent)."""
        try:
            rows = self.link.rows(queries.HEARTBEAT, {
                "worker_id": self.link.worker_id, "attempt_ids": self.ledger.held_ids(), "lease": self.lease,
            }, self.halt)  # fmt: skip
        except Aborted:
            return []
        except Exception as exc:  # noqa: BLE001 - never die
            logger.error("heartbeat failed: %s", exc, extra=self._extra)
            return []
        for row in rows:
            state = row["state"]
            if state == "finished":
                continue  # this worker's own report crossed the beat: the reporter owns it
            if state == "timed_out":
                self.on_timed_out(row["attempt_id"])  # its fail report ends the holding
                continue
            ctx = self.ledger.drop(row["attempt_id"])
            if ctx is not None:
                self.on_lost(ctx, state)
                logger.warning("task %d (%s) %s; stopping its handler", ctx.task_id, ctx.kind, state,
                               extra=task_extra(ctx))  # fmt: skip
        return rows


class Reaper:
    """reap(), then sleep until min(interval, next_wake - now) (the database's
    clock), or until nudged.

    A claim's :meth:`expect` only moves the next reap earlier (it never reaps
    at once: the lease it names ends a lease's length from now); only
    :meth:`nudge` reaps at once. Under load every claim expects, and an
    expectation that woke the loop to reap made the reaper run back to back
    (each pass walking the running tasks) instead of at its interval."""

    def __init__(self, link: Link, halt: threading.Event, *, interval: float) -> None:
        self.link = link
        self.halt = halt
        self.interval = interval
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._due = float("inf")  # monotonic time of the next reap (while reaping: the earliest expected)
        self.passes = 0  # reaps run (tests read it)
        self._extra = {"worker_id": link.worker_id}
        self.thread = threading.Thread(target=self._loop, name="pyconductor-reap", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def nudge(self) -> None:
        """Reap and read next_wake again now (a handler parked a wait)."""
        with self._lock:
            self._due = float("-inf")
        self._wake.set()

    def expect(self, expires_at: float) -> None:
        """A lease ends at ``expires_at`` (monotonic): reap by then."""
        with self._lock:
            if expires_at >= self._due:
                return
            self._due = expires_at
        self._wake.set()

    def stop(self) -> None:
        """The halt event is set: wake the sleeping loop so it ends."""
        self._wake.set()

    def _loop(self) -> None:
        was_due = False
        while True:
            delay = self.interval
            with self._lock:
                self._due = float("inf")  # what claims expect during this reap lowers it
            try:
                row = self.link.rows(queries.REAP_NEXT, {}, self.halt)[0]
                self.passes += 1
                self._log(row)
                wake_in = row["wake_in"]
                if wake_in is not None:
                    # due already: reap again soon, but do not spin on a deadline reap skipped (row locked)
                    floor = REAP_STUCK_WAIT if (wake_in <= 0 and was_due) else REAP_MIN_WAIT
                    was_due = wake_in <= 0
                    delay = min(self.interval, max(wake_in, floor))
                else:
                    was_due = False
            except Aborted:
                return
            except Exception as exc:  # noqa: BLE001 - never die
                logger.error("reap failed: %s", exc, extra=self._extra)
            with self._lock:
                self._due = min(self._due, time.monotonic() + delay)
            if self._wait_until_due():
                return

    def _log(self, row: dict[str, Any]) -> None:
        """What a reap did: reclaims (a lost worker's lease), time limits, failed runs,
        dead-lettered kinds and expired tasks at WARNING; waits that ended at their deadline at INFO."""
        parts = []
        if row["leases_lost"]:
            dead = f", {row['leases_dead']} of them dead" if row["leases_dead"] else ""
            parts.append(f"took back {row['leases_lost']} task(s) whose worker was lost (lease expired{dead})")
        if row["leases_timed_out"]:
            parts.append(f"failed {row['leases_timed_out']} attempt(s) past their time limit")
        if row["runs_failed"]:
            parts.append(f"failed {row['runs_failed']} run(s) at their recovery limit")
        if row["kinds_swept"]:
            parts.append(f"dead-lettered {row['kinds_swept']} task(s) of a kind no live worker serves")
        if row["tasks_expired"]:
            parts.append(f"expired {row['tasks_expired']} task(s) not started by their deadline (expires_in)")
        if parts:
            logger.warning("reaper %s", "; ".join(parts), extra=self._extra)
        if row["waits_ended"]:
            logger.info("reaper ended %d wait(s) (a deadline passed, or an event's waiter was woken)",
                        row["waits_ended"], extra=self._extra)  # fmt: skip

    def _wait_until_due(self) -> bool:
        """Sleep until the due time, which expect and nudge may move; whether halted."""
        while True:
            self._wake.clear()
            with self._lock:
                left = self._due - time.monotonic()
            if self.halt.is_set():
                return True
            if left <= 0:
                return False
            self._wake.wait(left)
