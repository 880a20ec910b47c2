"""The leader service: every leader lease of one process, on one connection of its own.

What must happen once in the fleet (the scheduler's tick, retention, each
singleton) is a :class:`Duty`: work done under one lease
(:class:`~pyconductor.leadership.Lease`, ``conductor.try_lead``). One
:class:`Leader` runs the duties of its process on one thread and one
autocommit connection outside any pool, so a process holds every lease it
has on one backend, however many singletons it runs:

- each duty is stepped when it is due: its lease is taken or renewed when a
  renewal is due (a renewal that failed is tried again every tenth of the
  lease) and, while it is held, the duty does one short piece of work (a
  tick, a retention batch, a look at a singleton's thread) and says when it
  wants the next; while another process leads, it tries every
  :attr:`Duty.contend_every` seconds;
- a duty stops leading (:meth:`Duty.resign`) as soon as its lease may no
  longer be acted on (``lease - margin`` after the last renewal sent), also
  while the connection is lost: the thread wakes for it then;
- a lost connection is closed and opened again with capped exponential
  backoff (0.1 s to 5 s); any other error of a duty is logged and the duty
  tried again after :attr:`Duty.contend_every`;
- :meth:`Leader.stop` ends the duties (a singleton's function is told to stop
  and awaited within the grace), then releases every lease held, so other
  processes take over at once.

A duty's step shares the thread with the others: each is one statement or
a few (``apply_retention`` runs one batch per step), so a lease's renewal
waits at most one step of another duty. Every call is one autocommit
statement, so leading works behind a transaction-mode pooler as it does
directly.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections.abc import Iterable
from typing import Any, Self

import psycopg
from psycopg.rows import dict_row

from pyconductor import defaults
from pyconductor.leadership import Lease
from pyconductor.link import CONNECTION_ERRORS
from pyconductor.profile import DIRECT, ConnectionProfile

__all__ = ["Duty", "Leader"]

logger = logging.getLogger("pyconductor")

RELEASE_TIMEOUT = 1.0  # seconds stop() waits for the thread to end its step and release the leases


class Duty:
    """Work one process does while it holds :attr:`lease` (None: always, without a lease).

    A subclass sets ``label`` (for the logs), ``lease`` and ``contend_every``
    and implements :meth:`lead`; :meth:`resign` and :meth:`close` end what
    leading started (by default nothing)."""

    label: str
    lease: Lease | None
    contend_every: float
    """Seconds between tries for the lease while another process leads (and after an error)."""

    leading = False
    """Whether the last step found this process leading (what a change is logged against)."""

    @property
    def is_leader(self) -> bool:
        """Whether this process acts for the duty now: it holds the lease, and it has not run out
        (False without a lease)."""
        return self.lease is not None and self.lease.held

    def lead(self, conn: psycopg.Connection[dict[str, Any]]) -> float:
        """One piece of work while leading; seconds until the next one."""
        raise NotImplementedError

    def resign(self) -> None:
        """This process no longer leads (the lease could not be renewed in time, or a stop):
        end what :meth:`lead` started. Never blocks."""

    def close(self, timeout: float | None) -> bool:
        """At the service's stop, before the lease is released: end what leading started,
        waiting ``timeout`` seconds at most (None: as long as it takes); whether it ended."""
        self.resign()
        return True

    def note(self, leading: bool) -> None:
        """Log a change of leadership; resign when leadership ended."""
        if leading and not self.leading and self.lease is not None:
            logger.info("%s: leading (lease %s, %gs)", self.label, self.lease.holder, self.lease.ttl,
                        extra={"lease_holder": self.lease.holder})  # fmt: skip
        elif self.leading and not leading and self.lease is not None:
            logger.info("%s: no longer leading (the lease could not be renewed in time)", self.label)
            self.resign()
        self.leading = leading


class Leader:
    """Runs ``duties`` on one thread and one connection (named ``application_name``);
    see the module doc. Duties are added (:meth:`add`) before :meth:`start`."""

    def __init__(self, dsn: str, duties: Iterable[Duty] = (), *, application_name: str,
                 profile: ConnectionProfile = DIRECT) -> None:  # fmt: skip
        self.dsn = dsn
        self.application_name = application_name[:63]
        self.profile = profile
        self.duties: list[Duty] = list(duties)
        self._conn: psycopg.Connection[dict[str, Any]] | None = None
        self._halt = threading.Event()  # stop() began: no step starts
        self._closed = threading.Event()  # stop() ended the duties: release the leases
        self._thread: threading.Thread | None = None
        self._delay = defaults.BACKOFF_MIN  # before the next reconnect, after a connection error
        self._reconnect_at = 0.0  # monotonic time the next connect may be tried
        self._stopped = False

    def __repr__(self) -> str:
        return f"<Leader {', '.join(d.label for d in self.duties)} leading={sorted(self.leader_locks)}>"

    def add(self, duty: Duty) -> None:
        if self._thread is not None:
            raise RuntimeError("duties are added before the leader service starts")
        self.duties.append(duty)

    @property
    def leader_locks(self) -> dict[str, bool]:
        """Every lease this service contends for, and whether it holds it now."""
        return {d.lease.name: d.is_leader for d in self.duties if d.lease is not None}

    def start(self) -> Self:
        if self._thread is None and self.duties:
            self._thread = threading.Thread(target=self._run, name="pyconductor-leader", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float | None = 10.0) -> bool:
        """End every duty (waiting ``timeout`` seconds at most for what they run; None or
        infinity: as long as it takes), then release the leases held and close the
        connection on the service's thread, waited for :data:`RELEASE_TIMEOUT` at most (a
        database that stopped answering leaves the leases to run out). Whether everything
        ended in time."""
        if self._stopped:
            return True
        self._stopped = True
        self._halt.set()
        deadline = None if timeout is None or math.isinf(timeout) else time.monotonic() + timeout
        ended = True
        for duty in self.duties:
            ended = duty.close(None if deadline is None else max(0.0, deadline - time.monotonic())) and ended
        self._closed.set()
        thread = self._thread
        if thread is None:
            self._release_all()
            return ended
        thread.join(RELEASE_TIMEOUT)
        return ended and not thread.is_alive()

    # -- the thread -----------------------------------------------------------------

    def _run(self) -> None:
        due = dict.fromkeys(range(len(self.duties)), 0.0)
        while not self._halt.is_set():
            now = time.monotonic()
            for i, duty in enumerate(self.duties):
                if due[i] <= now and not self._halt.is_set():
                    due[i] = time.monotonic() + self._step(duty)
            self._halt.wait(max(0.0, min(due.values()) - time.monotonic()))
        self._closed.wait()  # stop() ended the duties: now their leases go, on this thread's connection
        self._release_all()

    def connection(self) -> psycopg.Connection[dict[str, Any]]:
        """The service's connection (opened again when it was lost); only for its thread, or
        for a caller's one-off step while the service does not run (``Retention.run_once``)."""
        if self._conn is not None and not self._conn.closed:
            return self._conn
        self._conn = psycopg.connect(self.dsn, autocommit=True, application_name=self.application_name,
                                     row_factory=dict_row, connect_timeout=defaults.CONNECT_TIMEOUT,
                                     **self.profile.connect_options(self.dsn))  # fmt: skip
        return self._conn

    def _step(self, duty: Duty) -> float:
        """Keep the duty's lease and, while it leads, one piece of its work; seconds until its next step."""
        lease = duty.lease
        try:
            if (self._conn is None or self._conn.closed) and time.monotonic() < self._reconnect_at:
                # waiting to reconnect: only let go of what may no longer be acted on
                duty.note(duty.is_leader)
                return self._retry_in(duty)
            conn = self.connection()
            leading = lease.keep(conn) if lease is not None else True
            duty.note(leading)
            if not leading:
                return duty.contend_every
            wait = duty.lead(conn)
            self._delay = defaults.BACKOFF_MIN
        except CONNECTION_ERRORS as exc:
            self._lost(exc)
            duty.note(duty.is_leader)
            return self._retry_in(duty)
        except Exception:  # one bad step never ends the service
            logger.exception("%s failed; trying again in %.1fs", duty.label, duty.contend_every)
            return duty.contend_every
        if lease is None or not lease.held:  # without a lease, or released by the duty
            return wait
        return min(wait, lease.due_in() or lease.ttl / 10)  # a renewal that failed: again soon

    def _retry_in(self, duty: Duty) -> float:
        """While the connection is lost: wake at the reconnect, or when the duty's lease runs out."""
        wait = max(0.0, self._reconnect_at - time.monotonic())
        if duty.lease is not None and duty.is_leader:
            wait = min(wait, duty.lease.ttl / 10)
        return max(wait, 0.01)

    def _lost(self, exc: BaseException) -> None:
        if self._reconnect_at <= time.monotonic():  # once per loss, not once per duty
            lines = str(exc).strip().splitlines()
            logger.warning("leader connection lost (%s); retrying in %.1fs",
                           lines[0] if lines else type(exc).__name__, self._delay)  # fmt: skip
            self._reconnect_at = time.monotonic() + self._delay
            self._delay = min(self._delay * 2, defaults.BACKOFF_MAX)
        self.drop_connection()

    def drop_connection(self) -> None:
        # the leases stay this process's until they run out: a new connection renews them
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # it is broken already
                conn.close()

    def _release_all(self) -> None:
        """Release every lease held, then close the connection."""
        conn = self._conn
        for duty in self.duties:
            lease = duty.lease
            if lease is None:
                continue
            held = lease.held
            try:
                if conn is not None and not conn.closed:
                    lease.release(conn)
                    if held:
                        logger.info("%s: released the lease", duty.label)
            except Exception:  # noqa: BLE001 - it runs out by itself
                pass
            lease.forget()
            duty.leading = False
        self.drop_connection()
