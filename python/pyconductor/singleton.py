"""Run a long-lived function on exactly one process of the fleet.

    @app.singleton("price-feed", failover=2.0)
    def feed(stop: threading.Event) -> None:
        while not stop.wait(1.0):
            poll_prices()

    runners = app.run_singletons()      # pyconductor serve does this
    ...
    for r in runners:
        r.stop()

A :class:`SingletonRunner` holds a connection of its own and contends for the
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

import contextlib
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

import psycopg

from pyconductor.leadership import Lease
from pyconductor.link import CONNECTION_ERRORS, connect
from pyconductor.profile import ConnectionProfile, profile_from

__all__ = ["SingletonRunner"]

logger = logging.getLogger("pyconductor")


class SingletonRunner:
    """Contends for the lease ``'singleton:' || name`` and runs ``fn(stop)``
    while it holds it. :meth:`start` it once; :meth:`stop` ends it (``fn`` is
    told through its event and awaited)."""

    def __init__(self, dsn: str, name: str, fn: Callable[[threading.Event], Any], failover: float = 2.0, *,
                 pooler: ConnectionProfile | str | None = None) -> None:  # fmt: skip
        if not name:
            raise ValueError("a singleton needs a name")
        if failover <= 0:
            raise ValueError("failover must be more than 0 seconds")
        self.dsn = dsn
        self.name = name
        self.fn = fn
        self.failover = failover
        self.profile = profile_from(pooler)
        self.lease = Lease(f"singleton:{name}", min(3600.0, failover), margin=min(3600.0, failover) / 2,
                           renew_every=min(3600.0, failover) / 4)  # fmt: skip
        """The lease this runner takes and renews; fn runs while it is held."""
        self._conn: psycopg.Connection[Any] | None = None
        self._stopping = threading.Event()
        self._leading = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"singleton {name}", daemon=True)
        self._extra = {"singleton": name}

    def __repr__(self) -> str:
        return f"<SingletonRunner {self.name!r} leader={self.is_leader}>"

    @property
    def is_leader(self) -> bool:
        """Whether this runner holds the lease and its function runs."""
        return self._leading.is_set()

    def start(self) -> SingletonRunner:
        self._thread.start()
        return self

    def stop(self, timeout: float | None = None) -> bool:
        """Stop contending; tell a running ``fn`` to stop, wait for it (at most
        ``timeout`` seconds; None: as long as it takes), release the lease.
        Returns whether everything ended in time."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    # -- the contending thread -------------------------------------------------------

    def _try(self) -> bool:
        """Take or renew the lease when due (reconnecting first when needed);
        whether it is held now. A lost connection is logged and closed, the
        lease left to run out."""
        try:
            if self._conn is None or self._conn.closed:
                self._conn = connect(self.dsn, "singleton", f"{self.name} {os.getpid()}", profile=self.profile)
            return self.lease.keep(self._conn)
        except CONNECTION_ERRORS as exc:
            logger.warning("singleton %s: connection lost (%s); trying again", self.name, _first_line(exc),
                           extra=self._extra)  # fmt: skip
            self._close()
            return self.lease.held

    def _run(self) -> None:
        while not self._stopping.is_set():
            if self._try():
                self._lead()
                if self._stopping.is_set():
                    break
            self._stopping.wait(self.failover / 2 if not self.lease.held else self.lease.due_in())
        self._release()
        self._close()

    def _lead(self) -> None:
        """Run fn while the lease is held, renewing it; tell fn to stop when a
        stop is asked or the lease could not be renewed in time, and wait for
        it. Release the lease when fn returned by itself."""
        stop = threading.Event()
        done = threading.Event()

        def body() -> None:
            try:
                self.fn(stop)
            except Exception:
                logger.exception("singleton %s failed", self.name, extra=self._extra)
            finally:
                done.set()

        logger.info("singleton %s: leading (pid %s, lease %s)", self.name, os.getpid(), self.lease.holder,
                    extra=self._extra)  # fmt: skip
        self._leading.set()
        worker = threading.Thread(target=body, name=f"singleton {self.name} fn", daemon=True)
        worker.start()
        lost = False
        try:
            while not done.is_set() and not self._stopping.is_set():
                # renew when due; when a renewal failed, try again every tenth of the lease
                wait = self.lease.due_in() if self.lease.due_in() > 0 else self.lease.ttl / 10
                if done.wait(wait):
                    break
                if not self._try():
                    lost = True
                    break
        finally:
            stop.set()
            if lost:
                logger.warning("singleton %s: the lease could not be renewed in time; stopping", self.name,
                               extra=self._extra)  # fmt: skip
            worker.join()
            self._leading.clear()
        if not lost and done.is_set():
            self._release()
            logger.info("singleton %s: released", self.name, extra=self._extra)

    def _release(self) -> None:
        try:
            if self._conn is not None and not self._conn.closed:
                self.lease.release(self._conn)
        except CONNECTION_ERRORS:
            pass  # it runs out by itself
        self.lease.forget()

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # closing a broken connection
                conn.close()


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
