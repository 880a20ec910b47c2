"""What ``manage.py conductor_worker`` runs: the worker and scheduler roles of
``pyconductor serve`` (a :class:`~pyconductor.serve.Node`) over an app whose
handlers are the project's Django tasks (:func:`build_app`).

Each kind the backend declares (:mod:`.kinds`) is registered with a handler
that imports the task by its path and calls it with the payload's args and
kwargs, the way the framework's own immediate backend does:

- Django's database connections are per thread, and a worker's handler
  threads live long. Around every task the handler does what Django does
  around a request: ``reset_queries()`` and ``close_old_connections()``
  before, ``close_old_connections()`` after, so a connection past its
  ``CONN_MAX_AGE`` (0 by default: at once) or broken by the task is closed,
  not carried into the next task of the thread.
- The task's :class:`TaskResult` is read when it starts (one ``get_task`` on
  the worker's pool): ``task_started`` is sent with it (status RUNNING), a
  ``takes_context`` task gets ``TaskContext(task_result=...)`` (``attempt``
  counts this run), and ``task_finished`` is sent with the outcome.
- The return value goes through the framework's ``normalize_json`` (tuples
  become lists) and is the Conductor task's result; an exception fails the
  attempt with its traceback, and Conductor's policy for the kind decides
  whether it is retried (``conductor.configure_kind``: retries are opt-in).
- A coroutine function runs to completion on the handler thread
  (``Task.call``, i.e. ``async_to_sync``).

Which tasks it claims. A worker serving named queues (the backend's QUEUES,
or ``--queues``) is responsible for every task path in them: it claims every
kind of those queues (the registry's ``fallback`` handles the kinds no
discovered task declares). A path that names no task here (its module does
not import, has no such attribute, or the attribute is no ``@task``) is
judged by when its task was enqueued, on the database's clock (the task's
``enqueued_at`` against the worker's registered ``started_at`` and
``conductor.now()``, so a worker's clock that runs fast or slow changes nothing):

- before this worker started, or more than PATH_GRACE (10 minutes) ago: the
  code is gone, and the task fails at once, not retried
  (:class:`.kinds.TaskPathError` is a ``NoRetry``), with an error naming the
  path and the import error;
- since this worker started: a web process of a newer release may have
  enqueued it while a rolling deploy still runs this worker's older code, so
  the task sleeps durably for PATH_RECHECK (30 s, no attempt counted, no slot
  held) and whichever worker claims it next judges it again: one of the new
  release runs it.

A worker serving every queue (QUEUES empty and no ``--queues``) claims only
the kinds it discovered: a queue it was not given may belong to another
deployment, whose paths it cannot judge.

Everything else (claims, leases, heartbeats, SIGTERM, the reaper, the
scheduler on the process's leader service) is pyconductor's, started and
stopped by the same services as ``pyconductor worker`` and ``serve``.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from django import db
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from pyconductor import queries
from pyconductor.client import Conductor
from pyconductor.contrib.django import database, kinds
from pyconductor.contrib.django.backend import ConductorBackend
from pyconductor.contrib.django.compat import (
    TaskContext,
    TaskError,
    TaskResultStatus,
    normalize_json,
    task_finished,
    task_started,
)
from pyconductor.contrib.django.payload import from_payload
from pyconductor.contrib.django.results import task_result
from pyconductor.errors import NotFound
from pyconductor.registry import Task
from pyconductor.worker import Worker

__all__ = [
    "PATH_GRACE", "PATH_RECHECK", "build_app", "build_worker", "make_fallback_handler", "make_handler", "worker_dsn",
]  # fmt: skip

logger = logging.getLogger("pyconductor")


def worker_dsn(backend: ConductorBackend) -> str:
    """OPTIONS["WORKER_DSN"], else a DSN for the backend's Django database."""
    return backend.worker_dsn or database.dsn_for(backend.database)


def _finish(result: Any, status: Any, *, value: Any = None, error: Any = None) -> None:
    object.__setattr__(result, "finished_at", timezone.now())
    object.__setattr__(result, "status", status)
    if error is not None:
        result.errors.append(error)
    else:
        object.__setattr__(result, "_return_value", value)


def run_task(app: Conductor, alias: str, kind: str, payload: Any, ctx: Any) -> Any:
    """Run the Django task of ``kind`` for one claim (see the module doc)."""
    task = kinds.resolve(kind)
    args, kwargs = from_payload(payload)
    db.reset_queries()
    db.close_old_connections()
    try:
        result = task_result(app.get(ctx.task_id), task, alias)
        task_started.send(sender=ConductorBackend, task_result=result)
        try:
            if task.takes_context:
                value = task.call(TaskContext(task_result=result), *args, **kwargs)
            else:
                value = task.call(*args, **kwargs)
            try:
                value = normalize_json(value)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"the return value of {kind} is not JSON: {exc}") from exc
        except BaseException as exc:  # reported, then raised for the worker to fail the attempt
            path = f"{type(exc).__module__}.{type(exc).__qualname__}"
            _finish(result, TaskResultStatus.FAILED,
                    error=TaskError(exception_class_path=path, traceback=traceback.format_exc()))  # fmt: skip
            task_finished.send(sender=ConductorBackend, task_result=result)
            raise
        _finish(result, TaskResultStatus.SUCCESSFUL, value=value)
        task_finished.send(sender=ConductorBackend, task_result=result)
        return value
    finally:
        db.close_old_connections()


def make_handler(app: Conductor, alias: str, kind: str) -> Callable[[Any, Any], Any]:
    """The pyconductor handler (``fn(payload, ctx)``) of ``kind``."""

    def handler(payload: Any, ctx: Any) -> Any:
        return run_task(app, alias, kind, payload, ctx)

    handler.__name__ = handler.__qualname__ = f"django_task[{kind}]"
    return handler


# How long a task path no worker here can load may still be another release's (see the
# module doc), and how often a worker of the older release looks again meanwhile.
PATH_GRACE = timedelta(minutes=10)
PATH_RECHECK = timedelta(seconds=30)


def _path_is_gone(app: Conductor, ctx: Any) -> bool:
    """Whether the task of ``ctx`` was enqueued before its worker started, or more than
    PATH_GRACE ago: both read from the database, on its clock (see the module doc)."""
    with app.connection() as conn:
        row = conn.execute(queries.TASK_PATH_AGE, {"task_id": ctx.task_id, "worker_id": ctx.worker_id,
                                                   "grace": PATH_GRACE}).fetchone()  # fmt: skip
    if row is None:
        raise NotFound(f"task {ctx.task_id} not found")
    before_start, past_grace = row
    return bool(before_start or past_grace)


def make_fallback_handler(app: Conductor, alias: str, kind: str) -> Callable[[Any, Any], Any]:
    """The handler of a ``kind`` no discovered task declares: it runs the task if the path
    names one now, else judges it (module doc)."""

    def handler(payload: Any, ctx: Any) -> Any:
        # a replay passes the sleeps it already slept at once, judging again after each
        while True:
            try:
                kinds.resolve(kind)
            except kinds.TaskPathError:
                if _path_is_gone(app, ctx):
                    raise
                logger.warning("task %s: task path %r names no task in this worker, which started before "
                               "it was enqueued (a newer release's?): looking again in %s", ctx.task_id, kind,
                               PATH_RECHECK)  # fmt: skip
                ctx.sleep(PATH_RECHECK)
            else:
                return run_task(app, alias, kind, payload, ctx)

    handler.__name__ = handler.__qualname__ = f"django_task[{kind}]"
    return handler


def build_app(backend: ConductorBackend, queues: Sequence[str] | None = None, *,
              dsn: str | None = None) -> tuple[Conductor, list[str] | None]:  # fmt: skip
    """The Conductor app whose handlers are the tasks of ``backend``, and the queues a
    worker of it serves (default: the backend's QUEUES; None, all, when QUEUES is empty):
    every task path of named queues, the discovered ones of all queues (see the module
    doc). ImproperlyConfigured when no task uses the backend."""
    found = kinds.discover(backend.alias, backend.task_modules)
    if not found:
        raise ImproperlyConfigured(
            f"no Django task uses the tasks backend {backend.alias!r}: define tasks with @task in an installed "
            f"app's tasks module, or list their modules in TASKS[{backend.alias!r}]['OPTIONS']['TASK_MODULES']"
        )
    app = Conductor(dsn or worker_dsn(backend))
    for kind in found:
        app.register(kind, make_handler(app, backend.alias, kind))
    if queues is None:
        queues = sorted(backend.queues) or None
    if queues is not None:  # its queues' every path is its own (see the module doc)
        app.registry.fallback = lambda kind: Task(app, kind, make_fallback_handler(app, backend.alias, kind), {})
    return app, list(queues) if queues is not None else None


def build_worker(backend: ConductorBackend, queues: Sequence[str] | None = None, concurrency: int | None = None,
                 *, dsn: str | None = None, **options: Any) -> Worker:  # fmt: skip
    """A Worker for the tasks of ``backend`` on ``queues`` (:func:`build_app`);
    ``options`` go to the Worker."""
    app, queues = build_app(backend, queues, dsn=dsn)
    return Worker(app, queues, concurrency, **options)
