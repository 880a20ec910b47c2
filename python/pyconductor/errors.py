"""Exceptions: one class per SQLSTATE a Conductor caller handles.

Every condition the SQL API reports has its own SQLSTATE in class ``QC``
(see the header of ``sql/functions/internal.sql``). Each is mapped here, in
one table, to a subclass of :class:`ConductorError`; :func:`translate` turns a
``psycopg.Error`` into the matching class (``raise translate(exc) from exc``),
keeping ``.sqlstate`` and the server's message, detail and hint.

Errors that are not Conductor's (connection failures, syntax errors, ...)
are left as they are: a caller that catches ``psycopg.OperationalError`` to
reconnect keeps working.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import psycopg

__all__ = [
    "AlreadyExists",
    "ConductorError",
    "DatabaseUnusable",
    "DebounceConflict",
    "DedupeConflict",
    "DedupeOptionsWithoutKey",
    "DependencyCycle",
    "GraphNotFound",
    "InvalidArgument",
    "InvalidCodeVersions",
    "InvalidCron",
    "InvalidDedupeStates",
    "InvalidGraph",
    "InvalidKind",
    "InvalidPayload",
    "InvalidQueue",
    "InvalidState",
    "InvalidStatus",
    "InvalidTimezone",
    "InvalidUpdateName",
    "LeaseLost",
    "NoRetry",
    "NotFound",
    "NotOwner",
    "NotReadCommitted",
    "NotThisRunsUpdate",
    "OperatorSchedule",
    "PayloadTooLarge",
    "ReplayMismatch",
    "ResultTooLarge",
    "RetryLater",
    "RunFinished",
    "SchemaMismatch",
    "TaskCancelled",
    "TaskCancelledError",
    "TaskExpired",
    "UnknownDependency",
    "UnknownStep",
    "error_class",
    "mapped_errors",
    "translate",
]

E = TypeVar("E", bound="type[ConductorError]")

_BY_SQLSTATE: dict[str, type[ConductorError]] = {}


class ConductorError(Exception):
    """Root of every error Conductor raises on purpose.

    ``sqlstate`` is the server's code (None when raised by the driver itself),
    ``detail`` and ``hint`` the server's extra fields when it gave them.
    """

    sqlstate: str | None = None

    def __init__(self, message: str, *, sqlstate: str | None = None,
                 detail: str | None = None, hint: str | None = None) -> None:  # fmt: skip
        super().__init__(message)
        self.message = message
        if sqlstate is not None:
            self.sqlstate = sqlstate
        self.detail = detail
        self.hint = hint


def _register(sqlstate: str) -> Callable[[E], E]:
    def deco(cls: E) -> E:
        cls.sqlstate = sqlstate
        _BY_SQLSTATE[sqlstate] = cls
        return cls

    return deco


@_register("QC101")
class InvalidKind(ConductorError):
    """QC101: a task kind that is empty, too long, padded with spaces, or holds a control,
    format (bidi, zero width) or markup character."""


@_register("QC102")
class InvalidPayload(ConductorError):
    """QC102: a payload that is not a JSON object."""


@_register("QC103")
class PayloadTooLarge(ConductorError):
    """QC103: a payload above the size limit (conductor.settings.max_payload_bytes, 1 MiB by
    default), or an event bus message above the notification limit (7999 bytes)."""


@_register("QC107")
class ResultTooLarge(PayloadTooLarge):
    """QC107: a result or step value above conductor.settings.max_result_bytes."""


@_register("QC104")
class InvalidQueue(ConductorError):
    """QC104: a malformed queue name, or an empty queue list."""


@_register("QC105")
class InvalidStatus(ConductorError):
    """QC105: an unknown task status."""


@_register("QC106")
class InvalidArgument(ConductorError):
    """QC106: any other invalid argument (retry policy, lease, limits, ...)."""


@_register("QC120")
class DedupeOptionsWithoutKey(ConductorError):
    """QC120: dedupe_window, dedupe_states, on_duplicate or debounce without a dedupe_key."""


@_register("QC121")
class InvalidDedupeStates(ConductorError):
    """QC121: dedupe_states that leave out queued, running or waiting."""


@_register("QC122")
class DebounceConflict(ConductorError):
    """QC122: debounce_max without debounce or under it, or debounce with on_duplicate not replace."""


@_register("QC127")
class InvalidGraph(ConductorError):
    """QC127: a malformed graph declaration (enqueue_graph): not a non-empty array of
    task objects, a member's name missing, malformed or given twice, an after that is not
    an array, a run_on_failure not a boolean, dedupe options or parent_id on a member, a
    callback that is not a task object or whose payload holds the key "graph"."""


@_register("QC128")
class UnknownDependency(ConductorError):
    """QC128: a graph member runs after a name that no member has."""


@_register("QC129")
class DependencyCycle(ConductorError):
    """QC129: a graph's dependencies form a cycle (the members on it or after it are named)."""


@_register("QC201")
class LeaseLost(ConductorError):
    """QC201: the attempt no longer holds its task; its result is discarded."""


@_register("QC202")
class TaskCancelled(ConductorError):
    """QC202: the task was cancelled; stop working on it.

    Also what :meth:`TaskContext.raise_if_cancelled` raises inside a handler.
    """


TaskCancelledError = TaskCancelled
"""Alias of :class:`TaskCancelled`, the name handlers usually spell."""


@_register("QC203")
class NotFound(ConductorError):
    """QC203: no such task, attempt or parent."""


@_register("QC204")
class InvalidState(ConductorError):
    """QC204: the task is in a status that does not allow the operation."""


@_register("QC130")
class UnknownStep(ConductorError):
    """QC130: the task has no checkpointed step of that name (rewind, fork); the message
    names it. Nothing changed."""


@_register("QC131")
class InvalidUpdateName(ConductorError):
    """QC131: an update name that is empty or over 200 bytes (send_update, wait_update)."""


@_register("QC217")
class RunFinished(ConductorError):
    """QC217: an update was sent to a finished run, which takes none. Nothing was sent."""


@_register("QC218")
class NotThisRunsUpdate(ConductorError):
    """QC218: a run replied to an update sent to another task. Nothing was stored."""


@_register("QC205")
class DedupeConflict(ConductorError):
    """QC205: another task holds the dedupe_key (unfinished, or finished in its dedupe_states)."""


@_register("QC206")
class AlreadyExists(ConductorError):
    """QC206: a schedule of that name exists (create_schedule without replace)."""


@_register("QC207")
class OperatorSchedule(ConductorError):
    """QC207: the schedule was created or changed by an operator (conductor_admin);
    code may not replace or disable it. Nothing changed."""


@_register("QC208")
class NotOwner(ConductorError):
    """QC208: the row (a kind's policy, a rate limit, a worker registration, a
    schedule, an attempt's log) was declared by another login; only that login
    or an admin (conductor_admin) may change it. Nothing changed."""


@_register("QC209")
class EmptyFilter(ConductorError):
    """QC209: a bulk action (retry_matching, cancel_matching, preview_matching) was given
    no filter at all, which would match every task. Nothing changed."""


@_register("QC210")
class MatchesMoreThanExpected(ConductorError):
    """QC210: a bulk action's filter matches more tasks than the caller confirmed
    (expected); preview again. Nothing changed."""


@_register("QC123")
class InvalidCodeVersions(ConductorError):
    """QC123: a code_versions list (claim; a Worker's ``code_version`` and ``replays``)
    that is empty, holds NULL or an empty name, a name over 100 characters, padded with
    spaces, or holding a control, format or markup character."""


@_register("QC215")
class GraphNotFound(ConductorError):
    """QC215: no graph of that id (graph, cancel_graph)."""


@_register("QC213")
class NotReadCommitted(ConductorError):
    """QC213: complete_in_transaction was called in a transaction that is not READ
    COMMITTED (docs/transactions.md). Nothing changed."""


@_register("QC301")
class InvalidCron(ConductorError):
    """QC301: a cron expression that does not parse."""


@_register("QC302")
class InvalidTimezone(ConductorError):
    """QC302: an unknown time zone name."""


class TaskExpired(ConductorError):
    """The task ended ``expired``: no worker started it within its ``expires_in``
    of its due time (docs/expiry.md), so it never ran. Not a server error (no
    SQLSTATE): the exception a result reader reports for such a task (the
    Django backend's ``TaskResult.errors``), its message the engine's error,
    which names the deadline."""


class DatabaseUnusable(ConductorError):
    """The database cannot be used with this DSN, and retrying will not change
    that: the DSN does not parse, its host name does not resolve, the server
    refused the login, or the database or role does not exist. Raised by the
    driver (no SQLSTATE: libpq reports these without one); its message names
    the database without the password. See :mod:`pyconductor.dsn`."""


class SchemaMismatch(ConductorError):
    """The database's conductor schema is not the release this driver was
    built for (older, newer, or not deployed at all). Raised by the driver
    before it does anything; its message names both versions and the command
    that fixes it (``pyconductor migrate``). See :mod:`pyconductor.schema`."""


def error_class(sqlstate: str | None) -> type[ConductorError] | None:
    """The class registered for ``sqlstate``; ConductorError for an unregistered
    ``QC...`` code; None for a code that is not Conductor's."""
    if not sqlstate:
        return None
    cls = _BY_SQLSTATE.get(sqlstate)
    if cls is None and sqlstate.startswith("QC"):
        return ConductorError
    return cls


def translate(exc: psycopg.Error) -> ConductorError | psycopg.Error:
    """The Conductor exception for a server error, or ``exc`` itself when its
    SQLSTATE is not Conductor's. Use as ``raise translate(exc) from exc``."""
    cls = error_class(exc.sqlstate)
    if cls is None:
        return exc
    diag = exc.diag
    message = diag.message_primary or str(exc).strip()
    return cls(message, sqlstate=exc.sqlstate, detail=diag.message_detail, hint=diag.message_hint)


@contextmanager
def mapped_errors() -> Iterator[None]:
    """Re-raise Conductor's server errors inside the block as ConductorError subclasses."""
    try:
        yield
    except psycopg.Error as exc:
        new = translate(exc)
        if new is exc:
            raise
        raise new from exc


class NoRetry(Exception):
    """Raised by a handler to fail its task now, whatever attempts it has left
    (``conductor.fail(retryable => false)``): for what no new attempt can change,
    such as a handler the worker cannot load. ``raise NoRetry(...) from exc``
    keeps the cause in the stored traceback; ``retry`` (an operator's) still
    requeues the task once what was wrong is fixed.
    """


@_register("QC211")
class ReplayMismatch(ConductorError, NoRetry):
    """QC211: a resumed run's handler asked for a step that is not the next one its run
    recorded (a deploy renamed, inserted, removed or reordered steps under it); raised by
    the worker's replay check before the step runs, and the task fails at once
    (docs/versioning.md). ``expected`` is the recorded step's name, ``asked`` the
    handler's, ``position`` the step's place in the run (1 for the first)."""

    def __init__(self, message: str, *, task_id: int | None = None, position: int | None = None,
                 expected: str | None = None, asked: str | None = None) -> None:  # fmt: skip
        super().__init__(message, sqlstate="QC211")
        self.task_id = task_id
        self.position = position
        self.expected = expected
        self.asked = asked


class RetryLater(Exception):
    """Raised by a handler to fail this attempt and ask for the retry at a given
    time: ``raise RetryLater("rate limited", delay=30)`` or ``at=datetime``.

    The database still decides: the task is retried then only if it has
    attempts left (``max_attempts``); otherwise it fails as any error would.
    """

    def __init__(self, message: str = "retry later", *, delay: float | timedelta | None = None,
                 at: datetime | None = None) -> None:  # fmt: skip
        if (delay is None) == (at is None):
            raise TypeError("RetryLater takes one of delay= or at=")
        super().__init__(message)
        if at is None:
            assert delay is not None  # exactly one of the two (checked above)
            seconds = delay.total_seconds() if isinstance(delay, timedelta) else float(delay)
            at = datetime.now(UTC) + timedelta(seconds=seconds)
        elif at.tzinfo is None:
            raise ValueError("RetryLater(at=...) needs a timezone-aware datetime")
        self.at = at
