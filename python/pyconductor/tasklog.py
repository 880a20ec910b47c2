"""Handler log lines: the logging records a handler emits, captured per attempt.

While a handler runs, the records it emits through :mod:`logging` are kept
with its attempt and sent to the database before the attempt's outcome
(``conductor.save_log``, see :mod:`pyconductor.reporter`); the dashboard's run
page shows them beside the step tree. An attempt that captured nothing costs
no call.

How. One :class:`logging.Handler` sits on the root logger while at least one
executor runs (:func:`attach` at the worker's start, :func:`detach` at its
stop; counted, so workers of one process share it). A
:class:`contextvars.ContextVar` names the current attempt's :class:`AttemptLog`:
the executor sets it around the handler call (:func:`capturing`), on the
handler thread for a ``def`` handler and inside the asyncio task for an
``async def`` one, so two tasks running at once, on threads or on the event
loop, never see each other's lines. A record emitted where no attempt is
current (another thread of the app, the worker's own services) is ignored.

What is captured:

- records that reach the root logger (a logger with ``propagate = False``
  keeps its records to itself), so only those the app's logging configuration
  lets through: a logger's level still decides whether a record is made at
  all (Python's default is WARNING; ``pyconductor worker`` sets INFO);
- at or above the worker's ``capture_level`` (default ``logging.INFO``);
- not the records of ``pyconductor``'s own loggers (the worker's lines about
  the task are in the worker's log already);
- in the handler's own context: its thread, or its asyncio task and what it
  runs through ``asyncio.to_thread`` (which copies the context). A thread the
  handler starts itself, or ``loop.run_in_executor``, starts from an empty
  context: its records are not captured.

Bounds, per attempt: at most :data:`MAX_LINES` lines (the rest are counted
as dropped), each message at most :data:`MAX_MESSAGE` characters (cut, with a
marker saying how much was cut). The database keeps at most
``conductor.settings.max_log_bytes`` of them and counts the rest as dropped too.

Who and when (the database's rule, ``conductor.save_log``): lines go into an
attempt of this worker only, from the login that registered it (another
login's are refused, QC208), while the attempt runs and for one hour after it
ended (QC204 later). The lines of an attempt that reports an outcome go just
before it; those of one that ends without (suspended, discarded) or after
its outcome (a time limit's, a release's) go when its handler returns, so a
handler that runs on for over an hour past its time limit, or an outage of
the database as long, loses them: the reporter logs it at WARNING and the
outcome is never affected.

Each line is ``{"at": ISO 8601 UTC with milliseconds, "level": "INFO",
"logger": "app.billing", "message": the formatted message}``, the message
followed by the exception's traceback when the record carries one
(``logger.exception``) and its stack when it has ``stack_info``.
"""

from __future__ import annotations

import logging
import threading
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from typing import Any

from pyconductor.wire import dumps_json, storable_text

__all__ = [
    "MAX_LINES",
    "MAX_MESSAGE",
    "AttemptLog",
    "attach",
    "current",
    "detach",
    "enter",
    "leave",
    "save_params",
]

MAX_LINES = 200
"""The lines kept per attempt; the rest are counted as dropped."""

MAX_MESSAGE = 2000
"""The characters kept of one line's message (its traceback included), marker included."""

OWN_LOGGER = "pyconductor"

_current: ContextVar[AttemptLog | None] = ContextVar("pyconductor_attempt_log", default=None)
_formatter = logging.Formatter()


class AttemptLog:
    """The lines captured for one attempt, not yet sent, and how many were dropped.

    :meth:`add` may be called from several threads at once (a handler's
    ``asyncio.to_thread`` calls); :meth:`take` hands what is pending to the
    reporter, so a second take (a late line after a timeout's report) sends
    only what came since. The bound counts every line taken before."""

    __slots__ = ("_dropped", "_kept", "_lines", "_lock", "level")

    def __init__(self, level: int = logging.INFO) -> None:
        self.level = level
        self._lock = threading.Lock()
        self._lines: list[dict[str, str]] = []
        self._kept = 0
        self._dropped = 0

    def add(self, record: logging.LogRecord) -> None:
        if record.levelno < self.level:
            return
        with self._lock:
            if self._kept >= MAX_LINES:
                self._dropped += 1
                return
            self._kept += 1
        # formatted outside the lock: an argument whose str() logs again must not deadlock
        line = line_of(record)
        with self._lock:
            self._lines.append(line)

    @property
    def pending(self) -> bool:
        """Whether there is something to send (lines, or a count of dropped ones)."""
        return bool(self._lines or self._dropped)

    def take(self) -> tuple[list[dict[str, str]], int] | None:
        """The pending lines and the count dropped since the last take, now
        cleared; None when there is nothing to send."""
        with self._lock:
            if not self._lines and not self._dropped:
                return None
            lines, dropped = self._lines, self._dropped
            self._lines, self._dropped = [], 0
            return lines, dropped


def line_of(record: logging.LogRecord) -> dict[str, str]:
    """One captured line: at, level, logger, message (bounded; see the module doc)."""
    try:
        message = record.getMessage()
    except Exception as exc:  # noqa: BLE001 - a bad format string is the handler's, not ours
        message = f"{record.msg!r} % {record.args!r} (not formattable: {type(exc).__name__}: {exc})"
    if record.exc_info:
        message = f"{message}\n{_formatter.formatException(record.exc_info)}"
    elif record.exc_text:
        message = f"{message}\n{record.exc_text}"
    if record.stack_info:
        message = f"{message}\n{_formatter.formatStack(record.stack_info)}"
    return {
        "at": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
        "level": record.levelname,
        "logger": storable_text(record.name) or "",
        "message": storable_text(cut(message)) or "",
    }


def cut(message: str, limit: int = MAX_MESSAGE) -> str:
    """``message`` when it has at most ``limit`` characters, else its start and a marker, ``limit`` in all."""
    if len(message) <= limit:
        return message
    keep = limit
    while True:  # the marker's length depends on how much it cuts: settle both (a step or two)
        marker = f" [... {len(message) - keep:d} characters cut]"
        if keep + len(marker) == limit:
            return message[:keep] + marker
        keep = limit - len(marker)


class _CaptureHandler(logging.Handler):
    """Appends a record to the current attempt's log, if there is one."""

    def handle(self, record: logging.LogRecord) -> bool:
        # No handler lock: the attempt's log has its own, so handlers on
        # different threads never wait for each other here.
        log = _current.get()
        if log is None:
            return False
        name = record.name
        if name == OWN_LOGGER or name.startswith("pyconductor."):
            return False
        try:
            log.add(record)
        except Exception:  # noqa: BLE001 - never fail the handler's logging call
            self.handleError(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        self.handle(record)


_handler = _CaptureHandler()
_lock = threading.Lock()
_users = 0


def attach() -> None:
    """Put the capturing handler on the root logger (once, however many call this)."""
    global _users
    with _lock:
        _users += 1
        if _users == 1:
            logging.getLogger().addHandler(_handler)


def detach() -> None:
    """Undo one :func:`attach`; the last one takes the handler off the root logger."""
    global _users
    with _lock:
        if _users == 0:
            return
        _users -= 1
        if _users == 0:
            logging.getLogger().removeHandler(_handler)


def enter(log: AttemptLog) -> Token[AttemptLog | None]:
    """Make ``log`` the current attempt's log in this context (the handler's
    thread, or its asyncio task) until :func:`leave` with the token returned."""
    return _current.set(log)


def leave(token: Token[AttemptLog | None]) -> None:
    """End what :func:`enter` began, in the same context."""
    _current.reset(token)


def current() -> AttemptLog | None:
    """The current attempt's log, if one is being captured here."""
    return _current.get()


def save_params(attempt_id: int, taken: tuple[list[dict[str, str]], int]) -> dict[str, Any]:
    """The parameters of :data:`pyconductor.queries.SAVE_LOG` for what :meth:`AttemptLog.take` returned."""
    lines, dropped = taken
    return {"attempt_id": attempt_id, "lines": dumps_json(lines), "dropped": dropped}
