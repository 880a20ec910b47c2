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
from pyconductor.client import AttemptInfo, Conductor, RunState, TaskInfo, UpdateReply  # noqa: E402
from pyconductor.context import EventTimeout, TaskContext, Update, UpdateTimeout  # noqa: E402
from pyconductor.errors import (  # noqa: E402
    AlreadyExists,
    ConductorError,
    DatabaseUnusable,
    DedupeConflict,
    DependencyCycle,
    EmptyFilter,
    GraphNotFound,
    InvalidArgument,
    InvalidCodeVersions,
    InvalidCron,
    InvalidGraph,
    InvalidKind,
    InvalidPayload,
    InvalidQueue,
    InvalidState,
    InvalidStatus,
    InvalidTimezone,
    InvalidUpdateName,
    LeaseLost,
    MatchesMoreThanExpected,
    NoRetry,
    NotFound,
    NotOwner,
    NotReadCommitted,
    NotThisRunsUpdate,
    OperatorSchedule,
    PayloadTooLarge,
    ReplayMismatch,
    ResultTooLarge,
    RetryLater,
    RunFinished,
    TaskCancelled,
    TaskCancelledError,
    TaskExpired,
    UnknownDependency,
    UnknownStep,
)
from pyconductor.graphs import Graph, GraphNode  # noqa: E402
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
    "DependencyCycle",
    "EmptyFilter",
    "EventTimeout",
    "Graph",
    "GraphNode",
    "GraphNotFound",
    "InvalidArgument",
    "InvalidCodeVersions",
    "InvalidCron",
    "InvalidGraph",
    "InvalidKind",
    "InvalidPayload",
    "InvalidQueue",
    "InvalidState",
    "InvalidStatus",
    "InvalidTimezone",
    "InvalidUpdateName",
    "LeaseLost",
    "MatchesMoreThanExpected",
    "NoRetry",
    "NotFound",
    "NotOwner",
    "NotReadCommitted",
    "NotThisRunsUpdate",
    "OperatorSchedule",
    "PayloadTooLarge",
    "ReplayMismatch",
    "Reporting",
    "ResultTooLarge",
    "RetryLater",
    "RunFinished",
    "RunState",
    "ScheduleSpec",
    "Scheduler",
    "Task",
    "TaskCancelled",
    "TaskCancelledError",
    "TaskContext",
    "TaskExpired",
    "TaskInfo",
    "Timings",
    "UnknownDependency",
    "UnknownStep",
    "Update",
    "UpdateReply",
    "UpdateTimeout",
    "Worker",
    "__version__",
]
