"""The worker's connections: the one reconnect-with-backoff loop, and a link.

:func:`retry` is the only place a lost connection is waited out. Every part
of the worker goes through it: each service's :class:`Link` (one dedicated
autocommit connection: claim, report, heartbeat, reap, listen), and the
handlers' durable calls on their pool. A lost or refused connection is
retried after :data:`~pyconductor.defaults.BACKOFF_MIN` seconds, doubling up
to :data:`~pyconductor.defaults.BACKOFF_MAX`, until it works, the caller's
abort event is set (:class:`Aborted`), or the caller's deadline would pass
(the connection error is raised). Each retry is logged without the password:
WARNING while the trouble may pass by itself (the server is down or
restarting), ERROR when it cannot (see :func:`pyconductor.dsn.permanent_problem`),
since a password rotation or a restore may be under way.

Poolers. Each connection follows the process's
:class:`~pyconductor.profile.ConnectionProfile`: through a transaction-mode
pooler it prepares no statement and keeps no session state, and what cannot
do without a session (the dashboard's live updates, the event bus) refuses
with :class:`DirectConnectionNeeded`. Leadership needs no session: a leader
lease (:mod:`pyconductor.leadership`) is one autocommit statement at a time.
``application_name`` is a startup parameter, which pgbouncer passes on per
client; nothing else is set per session.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import psycopg
from psycopg.rows import dict_row

from pyconductor import defaults
from pyconductor.dsn import permanent_problem, redact_dsn
from pyconductor.profile import DIRECT, ConnectionProfile
from pyconductor.wire import use_fast_loads

__all__ = [
    "CONNECTION_ERRORS",
    "Aborted",
    "DirectConnectionNeeded",
    "Link",
    "connect",
    "retry",
]

logger = logging.getLogger("pyconductor")

T = TypeVar("T")

# What a lost or unusable connection raises: reconnect and try again.
CONNECTION_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError)


class Aborted(Exception):
    """A retry loop was told to give up: its abort event was set."""


class DirectConnectionNeeded(RuntimeError):
    """A feature that needs a database session of its own was asked for
    through a transaction-mode pooler. The message names the feature, why,
    and what to do: point that process at the database directly (or through
    a session-mode pool)."""

    def __init__(self, feature: str, why: str) -> None:
        super().__init__(
            f"{feature} needs a direct connection to PostgreSQL ({why}); it cannot run through a "
            "transaction-mode pooler (pooler=transaction, CONDUCTOR_POOLER=transaction). Run it in a process "
            "whose DSN points at the database itself or at a session-mode pool, without the pooler setting."
        )
        self.feature = feature


def connect(dsn: str, name: str, worker_id: str, *,
            profile: ConnectionProfile = DIRECT) -> psycopg.Connection[Any]:  # fmt: skip
    """An autocommit connection named ``pyconductor <name> <worker_id>`` in
    pg_stat_activity, decoding json with the shared decoder, made as
    ``profile`` says (through a transaction-mode pooler, one that prepares no statement)."""
    conn = psycopg.connect(dsn, autocommit=True, connect_timeout=defaults.CONNECT_TIMEOUT,
                           application_name=f"pyconductor {name} {worker_id}"[:63],
                           **profile.connect_options(dsn))  # fmt: skip
    use_fast_loads(conn)
    return conn


def _log_trouble(what: str, exc: BaseException, delay: float, extra: Mapping[str, Any]) -> None:
    lines = str(exc).strip().splitlines()
    text = redact_dsn(lines[0]) if lines else type(exc).__name__
    problem = permanent_problem(exc)
    if problem is None:
        logger.warning("%s connection lost (%s); retrying in %.1fs", what, text, delay, extra=dict(extra))
    else:
        logger.error("%s connection: %s (%s); retrying in %.1fs, but this does not pass by itself: check the "
                     "DSN and the server", what, problem, text, delay, extra=dict(extra))  # fmt: skip


def retry(attempt: Callable[[], T], *, what: str, abort: threading.Event, extra: Mapping[str, Any],
          on_lost: Callable[[], None] | None = None, until: float | None = None) -> T:  # fmt: skip
    """``attempt()`` again and again while it raises a connection error; its result.

    ``on_lost`` runs after each such error (close the broken connection).
    Raises :class:`Aborted` once ``abort`` is set (checked after each error
    and during each wait), or the connection error itself when the next try
    would start after ``until`` (a ``time.monotonic()`` deadline). A try that
    lasted longer than BACKOFF_MAX before its connection broke (a long LISTEN
    session) starts the backoff over."""
    delay = defaults.BACKOFF_MIN
    while True:
        started = time.monotonic()
        try:
            return attempt()
        except CONNECTION_ERRORS as exc:
            if on_lost is not None:
                on_lost()
            if abort.is_set():
                raise Aborted from exc
            now = time.monotonic()
            if now - started > defaults.BACKOFF_MAX:
                delay = defaults.BACKOFF_MIN
            if until is not None and now + delay > until:
                raise
            _log_trouble(what, exc, delay, extra)
            if abort.wait(delay):
                raise Aborted from exc
            delay = min(delay * 2, defaults.BACKOFF_MAX)


class Link:
    """One dedicated autocommit connection of a service, (re)opened on demand.

    Used by one thread at a time (its service's); :meth:`close` from another
    thread only once that one has ended."""

    def __init__(self, dsn: str, name: str, worker_id: str, *, profile: ConnectionProfile = DIRECT) -> None:
        self.dsn = dsn
        self.name = name
        self.worker_id = worker_id
        self.profile = profile
        self.conn: psycopg.Connection[Any] | None = None
        self._extra = {"worker_id": worker_id}

    def get(self) -> psycopg.Connection[Any]:
        """The open connection, connecting first when there is none (or it broke)."""
        if self.conn is None or self.conn.closed:
            self.conn = connect(self.dsn, self.name, self.worker_id, profile=self.profile)
        return self.conn

    def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # closing a broken connection
                conn.close()

    def call(self, fn: Callable[[psycopg.Connection[Any]], T], abort: threading.Event) -> T:
        """``fn(connection)``, through :func:`retry`: reconnected and called
        again on a connection error, until it works or ``abort`` is set (Aborted)."""
        return retry(lambda: fn(self.get()), what=self.name, abort=abort, extra=self._extra, on_lost=self.close)

    def rows(self, query: str, params: Mapping[str, Any], abort: threading.Event) -> list[dict[str, Any]]:
        """The rows of one statement (dicts; none for a statement without a result), as :meth:`call`."""

        def run(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
            with conn.cursor(row_factory=dict_row) as cur:
                cur.execute(query, params)
                return cur.fetchall() if cur.description else []

        return self.call(run, abort)
