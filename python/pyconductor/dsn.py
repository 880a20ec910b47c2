"""Connection strings: what may be shown of one, and whether a failure to
connect with it is worth retrying.

``redact_dsn`` is the one place that hides passwords: every message, log line
and HTTP answer that may carry a DSN, or a driver error quoting one, goes
through it.

``check_connect`` is a worker's first connection. A failure that retrying
cannot cure (a DSN libpq cannot parse, a host name that does not resolve,
authentication refused, a database or role that does not exist) raises
:class:`~pyconductor.errors.DatabaseUnusable` with a clear, password-free
message; any other (connection refused or timed out while the server
restarts, too many clients, the server starting up) is returned, for the
caller to retry with backoff. libpq reports these conditions without a
SQLSTATE, so they are told apart by libpq's and the server's English
messages; a server whose ``lc_messages`` is another language gets its
failures retried as before.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from pyconductor import defaults
from pyconductor.errors import DatabaseUnusable

__all__ = ["check_connect", "permanent_problem", "redact_dsn", "tcp_options"]

REDACTED = "***"

# postgresql://user:secret@host/db -> postgresql://user:***@host/db
_URI_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^:@/\s]*:)[^@/\s]*(?=@)", re.IGNORECASE)
# ...?sslmode=require&password=secret
_QUERY_PASSWORD = re.compile(r"([?&](?:ssl)?password=)[^&\s#]*", re.IGNORECASE)
# host=db password='se cret' / password=secret
_KEYWORD_PASSWORD = re.compile(r"((?<![\w?&])(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|\S+)", re.IGNORECASE)

# (what libpq or the server says, what it means); matched lower-case
_PERMANENT = (
    ("authentication failed", "authentication failed"),
    ("no password supplied", "authentication failed"),
    ("no pg_hba.conf entry", "the server's pg_hba.conf refuses this connection"),
    ("is not permitted to log in", "the role may not log in"),
    ("permission denied for database", "the role may not connect to this database"),
    ("name or service not known", "unknown host name"),
    ("nodename nor servname provided", "unknown host name"),
    ("no address associated with hostname", "unknown host name"),
    ("invalid connection option", "invalid DSN"),
    ("for connection option", "invalid DSN"),
    ("invalid port number", "invalid DSN"),
    ("invalid sslmode value", "invalid DSN"),
)
_DOES_NOT_EXIST = re.compile(r'\b(database|role) ".*" does not exist')


def tcp_options(dsn: str) -> dict[str, Any]:
    """The :data:`~pyconductor.defaults.TCP_OPTIONS` that ``dsn`` does not set
    itself, as psycopg.connect keyword arguments (which override the DSN's
    values, hence only the missing ones: a DSN's own value always wins). {}
    for a DSN libpq cannot parse: connecting reports that as before."""
    try:
        given = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return {}
    return {name: value for name, value in defaults.TCP_OPTIONS.items() if name not in given}


def redact_dsn(text: str) -> str:
    """``text`` (a DSN, or a message that may quote one) with every password
    replaced by ``***``: the password of a ``scheme://user:password@`` URI, a
    ``password=`` query parameter, a ``password=`` keyword (quoted or not).
    Host, port, database and user stay, for the reader to know where it went."""
    text = _URI_PASSWORD.sub(rf"\g<1>{REDACTED}", text)
    text = _QUERY_PASSWORD.sub(rf"\g<1>{REDACTED}", text)
    return _KEYWORD_PASSWORD.sub(rf"\g<1>{REDACTED}", text)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def permanent_problem(exc: BaseException) -> str | None:
    """What makes a failed connection attempt hopeless ("authentication
    failed", "unknown host name", "invalid DSN", ...), or None when retrying
    may help (the server is down, restarting, full, or the network slow)."""
    if isinstance(exc, psycopg.ProgrammingError):
        return "invalid DSN"
    if not isinstance(exc, psycopg.OperationalError):
        return None
    text = str(exc).lower()
    if "temporary failure" in text:
        return None
    for needle, problem in _PERMANENT:
        if needle in text:
            return problem
    found = _DOES_NOT_EXIST.search(text)
    return f"the {found.group(1)} does not exist" if found else None


def check_connect(dsn: str, timeout: int = 10) -> psycopg.Error | None:
    """Connect once to ``dsn`` and disconnect. None when that worked; the error
    when it failed and may work later; raises DatabaseUnusable (a message
    without the password) when it never will."""
    try:
        conninfo_to_dict(dsn)
        psycopg.connect(dsn, connect_timeout=timeout, application_name="pyconductor check").close()
    except psycopg.Error as exc:
        problem = permanent_problem(exc)
        if problem is None:
            return exc
        raise DatabaseUnusable(
            f"cannot use the database {redact_dsn(dsn)}: {problem}: {redact_dsn(_one_line(exc))}. "
            "Not retrying, as this does not pass by itself: check the DSN (host, port, database, user, "
            "password) and the server's pg_hba.conf"
        ) from None  # the driver's error may quote the DSN, password included
    return None
