"""The statuses of a task, named once for the package.

The database names them once too: the enum ``conductor.task_status`` and the
functions ``conductor.unfinished_statuses()`` and ``conductor.finished_statuses()``,
which drivers in other languages read; ``python/tests/test_statuses.py`` holds
these tuples to them. Every list of statuses in pyconductor is one of these
(River's ``rivertype.JobStates()`` is the model).
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["ALL", "FINISHED", "QUEUED", "RETRYABLE", "SUCCEEDED", "UNFINISHED", "status_list"]

QUEUED: Final = "queued"
SUCCEEDED: Final = "succeeded"

UNFINISHED: Final[tuple[str, ...]] = (QUEUED, "running", "waiting")
"""Not finished yet, in lifecycle order: ready or due later, held by a worker, suspended."""

FINISHED: Final[tuple[str, ...]] = (SUCCEEDED, "failed", "cancelled", "timed_out", "expired", "dead")
"""Terminal: the task never changes status again unless ``retry`` starts it over."""

ALL: Final[tuple[str, ...]] = UNFINISHED + FINISHED
"""Every status, in the order of the enum ``conductor.task_status``."""

RETRYABLE: Final[tuple[str, ...]] = tuple(s for s in FINISHED if s != SUCCEEDED)
"""The finished statuses ``conductor.retry`` starts over: every one but succeeded."""


def status_list(value: Any) -> list[str] | None:
    """A ``conductor.task_status[]`` as psycopg reads it (a list, or the array's
    text ``{queued,running}`` when the enum's type is not registered) as a list
    of status words; None stays None."""
    if value is None:
        return None
    if isinstance(value, str):
        inner = value.strip("{}")
        return inner.split(",") if inner else []
    return [str(status) for status in value]
