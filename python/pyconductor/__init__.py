"""pyconductor: the Python driver for Conductor, a durable task engine in PostgreSQL.

The engine lives in SQL (schema ``conductor``); this package claims tasks,
dispatches handlers and reports back. Public names are listed in ``__all__``;
add a new export as one import line plus one ``__all__`` entry.

    from pyconductor import Conductor, Worker

    app = Conductor("postgresql://...")

    @app.task("thumbnail", queue="images", max_attempts=3)
    def thumbnail(payload, ctx):
        ctx.raise_if_cancelled()
        return {"ok": True}

    thumbnail.enqueue({"path": "a.png"})
    Worker(app, queues=["images"]).run()   # or: pyconductor worker --app mymod:app

Logging goes to the ``pyconductor`` logger, silent unless configured.
"""

from __future__ import annotations

import logging

from pyconductor.version import __version__

logging.getLogger("pyconductor").addHandler(logging.NullHandler())

# (E402) the NullHandler is attached first, before any submodule's import could log
from pyconductor.client import AttemptInfo, Conductor, TaskInfo  # noqa: E402
from pyconductor.context import EventTimeout, TaskContext  # noqa: E402
from pyconductor.errors import (  # noqa: E402
    AlreadyExists,
    ConductorError,
    DatabaseUnusable,
    DedupeConflict,
    EmptyFilter,
    InvalidArgument,
    InvalidCron,
    InvalidKind,
    InvalidPayload,
    InvalidQueue,
    InvalidState,
    InvalidStatus,
    InvalidTimezone,
    LeaseLost,
    MatchesMoreThanExpected,
    NoRetry,
    NotFound,
    NotOwner,
    NotReadCommitted,
    OperatorSchedule,
    PayloadTooLarge,
    ResultTooLarge,
    RetryLater,
    TaskCancelled,
    TaskCancelledError,
    TaskExpired,
)
from pyconductor.registry import Task  # noqa: E402
from pyconductor.scheduler import Scheduler, ScheduleSpec  # noqa: E402
from pyconductor.worker import Worker  # noqa: E402
from pyconductor.worker_settings import Reporting, Timings  # noqa: E402

__all__ = [
    "AlreadyExists",
    "AttemptInfo",
    "Conductor",
    "ConductorError",
    "DatabaseUnusable",
    "DedupeConflict",
    "EmptyFilter",
    "EventTimeout",
    "InvalidArgument",
    "InvalidCron",
    "InvalidKind",
    "InvalidPayload",
    "InvalidQueue",
    "InvalidState",
    "InvalidStatus",
    "InvalidTimezone",
    "LeaseLost",
    "MatchesMoreThanExpected",
    "NoRetry",
    "NotFound",
    "NotOwner",
    "NotReadCommitted",
    "OperatorSchedule",
    "PayloadTooLarge",
    "Reporting",
    "ResultTooLarge",
    "RetryLater",
    "ScheduleSpec",
    "Scheduler",
    "Task",
    "TaskCancelled",
    "TaskCancelledError",
    "TaskContext",
    "TaskExpired",
    "TaskInfo",
    "Timings",
    "Worker",
    "__version__",
]
