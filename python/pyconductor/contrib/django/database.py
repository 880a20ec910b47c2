"""Django's database connections, as Conductor uses them.

- :func:`run`: a statement of :mod:`pyconductor.queries` (a
  :class:`~pyconductor.calls.Call`) on ``django.db.connections[alias]``, through
  Django's own cursor, so it joins whatever transaction Django has open there
  (``transaction.atomic``, ``ATOMIC_REQUESTS``, a test case's) and shows up in
  Django's query log and execute wrappers like any other query. Inside an
  atomic block it runs in a savepoint of its own, so a refused enqueue raises
  without breaking the caller's transaction. Conductor's errors (SQLSTATE
  ``QC...``) come out as :mod:`pyconductor.errors` classes, whichever driver
  (psycopg 3 or psycopg2) Django uses.
- :func:`dsn_for`: a libpq connection string for the same database, built from
  ``DATABASES[alias]``, for what needs connections of its own (the worker, the
  management commands).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, connections, transaction

from pyconductor.errors import ConductorError, error_class

__all__ = ["dsn_for", "execute", "is_postgresql", "translate"]

# what Django's connection parameters hold besides libpq's (adapters, cursor classes)
_NOT_LIBPQ = {"cursor_factory", "context", "prepare_threshold", "server_side_binding", "pool", "assume_role",
              "isolation_level"}  # fmt: skip
APPLICATION_NAME = "pyconductor django"


def is_postgresql(alias: str) -> bool:
    return connections[alias].vendor == "postgresql"


def translate(exc: DatabaseError) -> ConductorError | DatabaseError:
    """The Conductor error a Django database error stands for (its cause's
    SQLSTATE is one of Conductor's), else ``exc`` itself."""
    cause = exc.__cause__
    sqlstate = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    cls = error_class(sqlstate)
    if cls is None:
        return exc
    diag = getattr(cause, "diag", None)
    message = getattr(diag, "message_primary", None) or str(cause).strip()
    return cls(message, sqlstate=sqlstate, detail=getattr(diag, "message_detail", None),
               hint=getattr(diag, "message_hint", None))  # fmt: skip


def execute(alias: str, query: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Run ``query`` on Django's connection ``alias`` (see the module doc); its
    rows as dicts."""
    conn = connections[alias]
    try:
        if conn.in_atomic_block:
            with transaction.atomic(using=alias):
                return _fetch(conn, query, params)
        return _fetch(conn, query, params)
    except DatabaseError as exc:
        new = translate(exc)
        if new is exc:
            raise
        raise new from exc


def _fetch(conn: Any, query: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    with conn.cursor() as cur:
        cur.execute(query, params)
        names: Sequence[str] = [col[0] for col in cur.description or ()]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def dsn_for(alias: str) -> str:
    """A libpq connection string for ``DATABASES[alias]`` (name, user, password,
    host, port and the libpq keys of its OPTIONS), with application_name
    ``pyconductor django``. ImproperlyConfigured for an alias that is not a
    PostgreSQL database. OPTIONS["assume_role"] is not carried over: give the
    worker a DSN of its own (the backend's OPTIONS["WORKER_DSN"]) if it needs one."""
    from psycopg.conninfo import make_conninfo

    if alias not in connections.settings:
        raise ImproperlyConfigured(f"no database {alias!r} in settings.DATABASES")
    if not is_postgresql(alias):
        raise ImproperlyConfigured(f"database {alias!r} is not PostgreSQL (ENGINE "
                                   f"{connections[alias].settings_dict['ENGINE']!r}); "
                                   "Conductor lives in PostgreSQL")  # fmt: skip
    params = connections[alias].get_connection_params()
    libpq = {key: str(value) for key, value in params.items()
             if key not in _NOT_LIBPQ and value is not None and isinstance(value, (str, int))}  # fmt: skip
    libpq["application_name"] = APPLICATION_NAME
    return make_conninfo("", **libpq)
