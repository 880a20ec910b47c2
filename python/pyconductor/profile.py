"""What a process's connections to the database can do, decided once.

A :class:`ConnectionProfile` says how the DSN reaches PostgreSQL and so what
a connection may rely on (River's driver says the same: whether it supports
a listener). Directly or through a session-mode pool, a connection is a
session of its own: it may LISTEN, keep session settings and prepared
statements, and hold session-level advisory locks. Through a
transaction-mode pooler (pgbouncer ``pool_mode = transaction``) each
transaction may run on another server session, which serves other clients
in turn: none of that survives, so psycopg prepares no statement, the
worker polls instead of listening, a setting lasts one transaction, and
what cannot do without a session refuses
(:class:`~pyconductor.link.DirectConnectionNeeded`).

The profile is built once, where a setting comes in: :func:`profile_from`
turns the ``pooler`` argument of :class:`~pyconductor.client.Conductor`
(or of a worker, scheduler, retention or singleton runner started on its
own, or the CLI's ``--pooler``) into one, reading ``$CONDUCTOR_POOLER`` when
none was given. It is the only place that variable is read. What these
start is handed the profile, not the setting.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from pyconductor.dsn import tcp_options

__all__ = ["DIRECT", "POOLERS", "ConnectionProfile", "profile_from"]

POOLERS = ("transaction",)
"""The pooler modes a connection can be told about (a session-mode pooler needs none)."""


@dataclass(frozen=True)
class ConnectionProfile:
    """How the DSN reaches PostgreSQL: ``pooler`` 'transaction' through a
    transaction-mode pooler, None with a session of its own."""

    pooler: str | None = None

    @property
    def listens(self) -> bool:
        """Whether LISTEN works: notifications reach only the session that listens."""
        return self.pooler is None

    @property
    def keeps_session(self) -> bool:
        """Whether session state survives from one transaction to the next:
        settings (the ``options`` startup parameter too, which pgbouncer
        refuses), prepared statements, session-level advisory locks."""
        return self.pooler is None

    def connect_options(self, dsn: str) -> dict[str, Any]:
        """psycopg.connect keyword arguments for a connection to ``dsn``: the
        TCP keepalives and user timeout the DSN does not set
        (:func:`pyconductor.dsn.tcp_options`: a dead connection fails within
        about 30 s), and no prepared statements where the session does not last."""
        return {**tcp_options(dsn), **({} if self.keeps_session else {"prepare_threshold": None})}


DIRECT = ConnectionProfile()
"""A connection that is a session of its own (directly, or through a session-mode pool)."""


def profile_from(setting: ConnectionProfile | str | None = None) -> ConnectionProfile:
    """The profile a ``pooler`` setting asks for: a profile as it is; else
    the mode named by ``setting``, or by ``$CONDUCTOR_POOLER`` when it is None.
    'transaction' -> through a transaction-mode pooler; '', 'none',
    'session' or 'direct' -> :data:`DIRECT`. ValueError for anything else."""
    if isinstance(setting, ConnectionProfile):
        return setting
    value = os.environ.get("CONDUCTOR_POOLER") if setting is None else setting
    mode = (value or "").strip().lower()
    if mode in ("", "none", "session", "direct"):
        return DIRECT
    if mode not in POOLERS:
        raise ValueError(f"unknown pooler mode {value!r}: 'transaction' (a transaction-mode pooler such as "
                         "pgbouncer pool_mode=transaction), or none")  # fmt: skip
    return ConnectionProfile(mode)
