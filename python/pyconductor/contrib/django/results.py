"""A Conductor task as the framework's ``TaskResult``.

Statuses (Conductor has nine, the framework four):

    queued                                  -> READY     (new, due later, or waiting for a retry)
    running, waiting                        -> RUNNING   (waiting: a durable run parked on
                                                          children, an event or a timer)
    succeeded                               -> SUCCESSFUL
    failed, dead, timed_out, expired,
    cancelled                               -> FAILED

``errors`` holds one :class:`TaskError` per failed attempt, oldest first:
``exception_class_path`` is the dotted path of the exception the task raised
(read from the traceback the worker stored, as Python writes it), ``traceback``
the full traceback. An attempt that failed without a traceback (its time limit
passed) gets ``builtins.TimeoutError`` with the error text; a task that ended
without a failed attempt of its own (cancelled, expired before any worker
started it, dead after its workers were lost three times, failed by its run's
limit of four lost workers) gets one entry for that,
``pyconductor.errors.TaskCancelled``, ``pyconductor.errors.TaskExpired`` (the
error naming the deadline) or ``builtins.Exception``, so a FAILED result
always says why.

``worker_ids``: the worker of every claim of the task but the ones handed back
at a clean shutdown (``released``, which Conductor counts as nothing), so
``TaskResult.attempts`` (and ``TaskContext.attempt``) is 1 on the first run.
"""

from __future__ import annotations

import builtins
import re
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from pyconductor import statuses
from pyconductor.calls import TaskInfo
from pyconductor.contrib.django.compat import Task, TaskError, TaskResult, TaskResultStatus
from pyconductor.contrib.django.payload import from_payload

__all__ = ["STATUSES", "django_time", "exception_path", "task_result"]


def _django_status(status: str) -> Any:
    """The TaskResultStatus of a conductor status: a waiting task counts as running."""
    if status == statuses.QUEUED:
        return TaskResultStatus.READY
    if status in statuses.UNFINISHED:
        return TaskResultStatus.RUNNING
    return TaskResultStatus.SUCCESSFUL if status == statuses.SUCCEEDED else TaskResultStatus.FAILED


STATUSES: dict[str, Any] = {s: _django_status(s) for s in statuses.ALL}


def exception_path(error: str | None, traceback: str | None) -> str:
    """The dotted path of the exception an attempt failed with. The worker stores
    ``error`` as ``QualName: message`` and the traceback as Python formats it,
    whose exception line reads ``module.QualName: message`` (no module for
    builtins and ``__main__``)."""
    qualname = (error or "").split(":", 1)[0].strip()
    if not qualname or not re.fullmatch(r"[\w.]+", qualname):
        return "builtins.TimeoutError" if (error or "").startswith("timed out") else "builtins.Exception"
    found = None
    if traceback:
        pattern = re.compile(rf"^((?:[\w.]+\.)?{re.escape(qualname)})(?::|$)", re.MULTILINE)
        # the last one: the exception that ended the attempt
        found = next(reversed(list(pattern.finditer(traceback))), None)
    path = found.group(1) if found is not None else qualname
    if path == qualname:  # Python leaves out builtins and __main__
        return f"builtins.{qualname}" if isinstance(getattr(builtins, qualname, None), type) else f"__main__.{qualname}"
    return path


def django_time(value: datetime | None) -> datetime | None:
    """A time as Django's settings want it: aware with USE_TZ, else naive in TIME_ZONE."""
    if value is None or settings.USE_TZ or timezone.is_naive(value):
        return value
    return timezone.make_naive(value)


def _errors(info: TaskInfo) -> list[Any]:
    errors = [TaskError(exception_class_path=exception_path(a.error, a.traceback),
                        traceback=a.traceback or a.error or "")
              for a in info.attempts if a.outcome == "failed"]  # fmt: skip
    if not errors and info.status in statuses.RETRYABLE:
        path = {"cancelled": "pyconductor.errors.TaskCancelled",
                "expired": "pyconductor.errors.TaskExpired"}.get(info.status, "builtins.Exception")  # fmt: skip
        errors.append(TaskError(exception_class_path=path, traceback=info.error or info.status))
    return errors


def task_result(info: TaskInfo, task: Any, backend: str) -> Any:
    """The framework's TaskResult for ``info``, a task of the Django task ``task``
    (its queue, priority and run_after as the task was enqueued, when the
    backend still accepts them). ValueError for a payload not of a Django task."""
    assert isinstance(task, Task)
    args, kwargs = from_payload(info.payload)
    try:
        # run_at is the enqueue time when no run_after was given (and a retry's time after a failure)
        run_after = django_time(info.run_at) if info.run_at != info.enqueued_at else None
        task = task.using(priority=info.priority, queue_name=info.queue, run_after=run_after)
    except Exception:  # noqa: BLE001 - e.g. a queue since removed from QUEUES: the task as declared
        pass
    attempts = [a for a in info.attempts if a.outcome != "released"]
    result: TaskResult[Any] = TaskResult(
        task=task, id=str(info.id), status=STATUSES[info.status], enqueued_at=django_time(info.enqueued_at),
        started_at=django_time(info.started_at), finished_at=django_time(info.finished_at),
        last_attempted_at=django_time(attempts[-1].claimed_at) if attempts else None,
        args=args, kwargs=kwargs, backend=backend, errors=_errors(info), worker_ids=[a.worker_id for a in attempts],
    )  # fmt: skip
    if info.status == "succeeded":
        object.__setattr__(result, "_return_value", info.result)
    return result
