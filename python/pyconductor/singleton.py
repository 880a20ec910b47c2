"""Run a long-lived function on exactly one process of the fleet.

    @app.singleton("price-feed", failover=2.0)
    def feed(stop: threading.Event) -> None:
        while not stop.wait(1.0):
            poll_prices()

    runners = app.run_singletons()      # pyconductor serve does this
    ...
    for r in runners:
        r.stop()

A :class:`SingletonRunner` is a leader duty (:mod:`pyconductor.leader`): run
alone (``runner.start()``, ``app.run_singletons()``) it holds a connection of
its own; ``pyconductor serve`` runs every singleton of the app on its one
leader connection. It contends for the
lease ``'singleton:' || name`` (:class:`~pyconductor.leadership.Lease`,
``conductor.try_lead``; ``conductor.leaders()`` names its holder), ``failover``
seconds long, every ``failover / 2`` seconds. The process that gets it runs
``fn(stop)`` in a thread and renews the lease every ``failover / 4`` seconds;
the others keep trying. When the holder dies (even by kill -9) its lease runs
out and another process takes it within about ``1.5 * failover`` seconds.
When the holder cannot renew (its connection lost, the database away) it
reconnects and keeps trying, and sets ``stop`` half a lease after its last
renewal: ``fn`` must return within ``failover / 2`` seconds of ``stop``, the
time left before another process may take the lease. When ``fn`` returns by
itself (or raises, logged), the lease is released and contended for again
after ``failover`` seconds; a clean stop releases it too, so another process
takes over at once.

No session outside the engine can hold the lease (v0.2.0's session advisory
lock could be taken by any login with no grant at all), and every call is one
autocommit statement, so singletons run behind a transaction-mode pooler
(``pooler="transaction"`` or ``$CONDUCTOR_POOLER``) as well.

Exactly one at a time holds as long as ``fn`` honours ``stop`` within
``failover / 2`` seconds; work that must never overlap should also take
:meth:`Conductor.exclusive <pyconductor.client.Conductor.exclusive>` in its
transactions.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any

import psycopg

from pyconductor.leader import Duty, Leader
from pyconductor.leadership import Lease
from pyconductor.profile import ConnectionProfile, profile_from

__all__ = ["SingletonRunner"]

logger = logging.getLogger("pyconductor")


class SingletonRunner(Duty):
    """Contends for the lease ``'singleton:' || name`` and runs ``fn(stop)``
    while it holds it. A :class:`~pyconductor.leader.Duty`: ``pyconductor
    serve`` runs every singleton of the app on its one leader service;
    :meth:`start` runs it alone (a thread and a connection of its own);
    :meth:`stop` ends it (``fn`` is told through its event and awaited)."""

    def __init__(self, dsn: str, name: str, fn: Callable[[threading.Event], Any], failover: float = 2.0, *,
                 pooler: ConnectionProfile | str | None = None) -> None:  # fmt: skip
        if not name:
            raise ValueError("a singleton needs a name")
        if failover <= 0:
            raise ValueError("failover must be more than 0 seconds")
        self.dsn = dsn
        self.name = name
        self.label = f"singleton {name}"
        self.fn = fn
        self.failover = failover
        self.contend_every = failover / 2
        self.profile = profile_from(pooler)
        ttl = min(3600.0, failover)
        self.lease: Lease = Lease(f"singleton:{name}", ttl, margin=ttl / 2, renew_every=ttl / 4)
        """The lease this runner takes and renews; fn runs while it is held."""
        self._stop: threading.Event | None = None  # the running fn's stop event
        self._thread: threading.Thread | None = None  # the running fn's thread
        self._returned = False  # fn returned by itself: release the lease, contend again later
        self._closed = False
        self._extra = {"singleton": name}
        self._alone = Leader(dsn, [self], application_name=f"pyconductor singleton {name} {os.getpid()}",
                             profile=self.profile)  # fmt: skip

    def __repr__(self) -> str:
        return f"<SingletonRunner {self.name!r} leader={self.is_leader}>"

    @property
    def is_leader(self) -> bool:
        """Whether this runner holds the lease and its function runs."""
        return self.running and self.lease.held

    @property
    def running(self) -> bool:
        """Whether fn runs now (after a stop: it has not returned yet)."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> SingletonRunner:
        """Run alone, on a leader service of its own."""
        self._alone.start()
        return self

    def stop(self, timeout: float | None = None) -> bool:
        """Stop contending; tell a running ``fn`` to stop, wait for it (at most
        ``timeout`` seconds; None: as long as it takes), release the lease.
        Returns whether everything ended in time."""
        return self._alone.stop(timeout)

    # -- the duty ---------------------------------------------------------------------

    def lead(self, conn: psycopg.Connection[dict[str, Any]]) -> float:
        """Start fn when it does not run; release the lease once it returned by itself."""
        if self._closed:  # a step that crossed the stop starts nothing
            return self.contend_every
        if self._returned:
            self._returned = False
            self.lease.release(conn)
            self.leading = False
            logger.info("singleton %s: released", self.name, extra=self._extra)
            return self.contend_every
        if self._thread is not None and self._thread.is_alive():
            # running; or told to stop at a lease lost before and not returned yet: start no second one
            # (the leader service steps it again at the lease's next renewal, or sooner)
            return self.lease.ttl if self._stop is not None and not self._stop.is_set() else self.lease.ttl / 10
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._body, args=(self._stop,), name=f"singleton {self.name} fn",
                                        daemon=True)  # fmt: skip
        logger.info("singleton %s: leading (pid %s, lease %s)", self.name, os.getpid(), self.lease.holder,
                    extra=self._extra)  # fmt: skip
        self._thread.start()
        return self.lease.ttl

    def _body(self, stop: threading.Event) -> None:
        try:
            self.fn(stop)
        except Exception:
            logger.exception("singleton %s failed", self.name, extra=self._extra)
        if not stop.is_set():
            self._returned = True  # by itself: the next step releases the lease

    def resign(self) -> None:
        """The lease could not be renewed in time: tell fn to stop (half a lease before anyone else may lead)."""
        if self._stop is not None and not self._stop.is_set():
            self._stop.set()
            logger.warning("singleton %s: the lease could not be renewed in time; stopping", self.name,
                           extra=self._extra)  # fmt: skip

    def close(self, timeout: float | None) -> bool:
        """Tell fn to stop and wait for it, ``timeout`` seconds at most."""
        self._closed = True
        if self._stop is not None:
            self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return thread is None or not thread.is_alive()
