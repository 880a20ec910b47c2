"""Run a long-lived function on exactly one process of the fleet.

    @app.singleton("price-feed", failover=2.0)
    def feed(stop: threading.Event) -> None:
        while not stop.wait(1.0):
            poll_prices()

    runners = app.run_singletons()      # pyconductor serve does this
    ...
    for r in runners:
        r.stop()

A :class:`SingletonRunner` holds a connection of its own and, every
``failover`` seconds, tries the leader lock ``'singleton:' || name``
(``conductor.try_lead``, a session advisory lock: ``conductor.leaders()``
names its holder). The process that gets it runs ``fn(stop)`` in a thread; the
others keep trying. The lock lives as long as the holder's database session,
so when the holder dies (even by kill -9) another process takes it within
about ``failover`` seconds. The holder checks its connection every
``failover / 2`` seconds: if it is lost (so the lock may already be another's)
``stop`` is set and ``fn`` must return. When ``fn`` returns by itself (or
raises, logged), the lock is released and contended for again after
``failover`` seconds.

Singletons need a direct connection: behind a transaction-mode pooler
(``pooler="transaction"`` or ``$CONDUCTOR_POOLER``) the session lock would
stay on a server session that other clients use, so the runner refuses at
construction (:class:`~pyconductor.link.DirectConnectionNeeded`).

Exactly one at a time holds as long as ``fn`` honours ``stop`` within
``failover / 2`` seconds of a lost connection; work that must never overlap
should also take :meth:`Conductor.exclusive <pyconductor.client.Conductor.exclusive>`
in its transactions.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any

import psycopg

from pyconductor.link import CONNECTION_ERRORS, DirectConnectionNeeded, connect, pooler_mode

__all__ = ["RELEASE_LEAD", "TRY_LEAD", "SingletonRunner"]

logger = logging.getLogger("pyconductor")

TRY_LEAD = "select conductor.try_lead(name => 'singleton:' || %(name)s) as held"
RELEASE_LEAD = "select conductor.release_lead(name => 'singleton:' || %(name)s)"
ALIVE = "select 1"


class SingletonRunner:
    """Contends for the leader lock ``'singleton:' || name`` and runs
    ``fn(stop)`` while it holds it. :meth:`start` it once; :meth:`stop` ends
    it (``fn`` is told through its event and awaited)."""

    def __init__(self, dsn: str, name: str, fn: Callable[[threading.Event], Any], failover: float = 2.0, *,
                 pooler: str | None = None) -> None:  # fmt: skip
        if not name:
            raise ValueError("a singleton needs a name")
        if pooler_mode(pooler):
            raise DirectConnectionNeeded(f"app.singleton {name!r}",
                                         "its leader lock is a session advisory lock, held as long as its session lives")  # fmt: skip
        if failover <= 0:
            raise ValueError("failover must be more than 0 seconds")
        self.dsn = dsn
        self.name = name
        self.fn = fn
        self.failover = failover
        self._stopping = threading.Event()
        self._leading = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"singleton {name}", daemon=True)
        self._extra = {"singleton": name}

    def __repr__(self) -> str:
        return f"<SingletonRunner {self.name!r} leader={self.is_leader}>"

    @property
    def is_leader(self) -> bool:
        """Whether this runner holds the lock and its function runs."""
        return self._leading.is_set()

    def start(self) -> SingletonRunner:
        self._thread.start()
        return self

    def stop(self, timeout: float | None = None) -> bool:
        """Stop contending; tell a running ``fn`` to stop, wait for it (at most
        ``timeout`` seconds; None: as long as it takes), release the lock.
        Returns whether everything ended in time."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    # -- the contending thread -------------------------------------------------------

    def _run(self) -> None:
        conn: psycopg.Connection[Any] | None = None
        while not self._stopping.is_set():
            try:
                if conn is None or conn.closed:
                    conn = connect(self.dsn, "singleton", f"{self.name} {os.getpid()}")
                row = conn.execute(TRY_LEAD, {"name": self.name}).fetchone()
                if row is not None and row[0]:
                    self._lead(conn)
            except CONNECTION_ERRORS as exc:
                logger.warning("singleton %s: connection lost (%s); trying again in %.1fs", self.name,
                               _first_line(exc), self.failover, extra=self._extra)  # fmt: skip
                conn = _close(conn)
            self._stopping.wait(self.failover)
        _close(conn)

    def _lead(self, conn: psycopg.Connection[Any]) -> None:
        """Run fn while the lock is held; release it (if the connection still
        holds it) when fn ends or a stop is asked. Raises a connection error when
        the connection is lost (fn told to stop and awaited first)."""
        stop = threading.Event()
        done = threading.Event()

        def body() -> None:
            try:
                self.fn(stop)
            except Exception:
                logger.exception("singleton %s failed", self.name, extra=self._extra)
            finally:
                done.set()

        logger.info("singleton %s: leading (pid %s)", self.name, os.getpid(), extra=self._extra)
        self._leading.set()
        worker = threading.Thread(target=body, name=f"singleton {self.name} fn", daemon=True)
        worker.start()
        lost: BaseException | None = None
        try:
            while not done.is_set() and not self._stopping.is_set():
                if done.wait(self.failover / 2):
                    break
                try:
                    conn.execute(ALIVE)
                except CONNECTION_ERRORS as exc:
                    lost = exc
                    break
        finally:
            stop.set()
            if lost is not None:
                logger.warning("singleton %s: lock connection lost (%s); stopping", self.name, _first_line(lost),
                               extra=self._extra)  # fmt: skip
            worker.join()
            self._leading.clear()
        if lost is not None:
            raise lost
        conn.execute(RELEASE_LEAD, {"name": self.name})
        logger.info("singleton %s: released", self.name, extra=self._extra)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _close(conn: psycopg.Connection[Any] | None) -> None:
    if conn is not None:
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - closing a broken connection
            pass
    return None
