"""``ConductorBackend``: the Django Tasks backend that enqueues into Conductor.

    TASKS = {
        "default": {
            "BACKEND": "pyconductor.contrib.django.ConductorBackend",
            "QUEUES": ["default", "emails"],
            "OPTIONS": {"DATABASE": "default"},
        }
    }

``enqueue`` runs ``select conductor.enqueue(...)`` (pyconductor's own call) on
``django.db.connections[DATABASE]``, Django's connection of this thread: inside
``transaction.atomic`` (or ``ATOMIC_REQUESTS``) the task is part of the
caller's transaction, visible to workers at its commit and gone with its
rollback, savepoints included. Outside a transaction (autocommit) it is
committed at once. The kind is the task function's dotted path; the payload
``{"args": [...], "kwargs": {...}}`` (JSON only, :mod:`.payload`); queue_name
and priority are the task's; run_after becomes run_at. Conductor's other
options (flow control, uniqueness, a deadline to start) come from a
:func:`.options.task_options` block around the call.

Priority: Django's -100..100 (higher first, default 0) is stored as it is:
Conductor's priority is an integer whose higher values a worker claims first,
among the ready tasks of the queues it serves, so the two scales agree and no
mapping loses anything. It orders; it does not preempt.

OPTIONS: ``DATABASE`` (the Django database alias, default ``"default"``),
``WORKER_DSN`` (libpq DSN for ``manage.py conductor_worker``'s own
connections; default: built from ``DATABASES[DATABASE]``), ``TASK_MODULES``
(modules the worker imports to find tasks, besides each app's ``tasks``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core import checks
from django.db import connections
from django.utils import timezone

from pyconductor import calls, queries
from pyconductor.calls import TaskInfo
from pyconductor.contrib.django import database, kinds, options
from pyconductor.contrib.django.compat import (
    BaseTaskBackend,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_enqueued,
)
from pyconductor.contrib.django.payload import to_payload
from pyconductor.contrib.django.results import django_time, task_result
from pyconductor.errors import NotFound
from pyconductor.registry import Registry

__all__ = ["OPTION_KEYS", "ConductorBackend"]

OPTION_KEYS = ("DATABASE", "WORKER_DSN", "TASK_MODULES")
# conductor._spec_problem's rule for a queue name
_QUEUE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/-]*")
_NO_REGISTRY = Registry()  # a Django task's options are its own, never a pyconductor registration's


class ConductorBackend(BaseTaskBackend):
    """Tasks go into ``conductor.tasks`` in the caller's transaction; workers are
    ``manage.py conductor_worker`` processes (see the module doc)."""

    supports_defer = True
    supports_async_task = True  # the worker runs a coroutine function to completion (async_to_sync)
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        self.params = params
        options = params.get("OPTIONS", {}) or {}
        self.database: str = options.get("DATABASE", "default")
        self.worker_dsn: str | None = options.get("WORKER_DSN")
        self.task_modules: list[str] = list(options.get("TASK_MODULES", []))

    def __repr__(self) -> str:
        return f"<ConductorBackend {self.alias!r} database={self.database!r} queues={sorted(self.queues)!r}>"

    def validate_task(self, task: Any) -> None:
        super().validate_task(task)
        kinds.declare(self.alias, task)

    # -- enqueue ---------------------------------------------------------------------

    def enqueue(self, task: Any, args: Any, kwargs: Any) -> Any:
        self.validate_task(task)
        payload = to_payload(task.module_path, args, kwargs)
        run_at = task.run_after
        if run_at is not None and timezone.is_naive(run_at):  # USE_TZ = False: a time in TIME_ZONE
            run_at = timezone.make_aware(run_at)
        call = calls.enqueue(_NO_REGISTRY, task.module_path, payload,
                             {**options.current(), "queue": task.queue_name, "priority": int(task.priority),
                              "run_at": run_at})  # fmt: skip
        # the time the row stores (the transaction's conductor.now()), not this process's clock
        rows = database.execute(self.database, queries.with_enqueued_at(call.query), call.params)
        task_id = call.decode(rows)
        result: TaskResult[Any] = TaskResult(
            task=task, id=str(task_id), status=TaskResultStatus.READY, enqueued_at=django_time(rows[0]["enqueued_at"]),
            started_at=None, finished_at=None, last_attempted_at=None, args=payload["args"],
            kwargs=payload["kwargs"], backend=self.alias, errors=[], worker_ids=[],
        )  # fmt: skip
        task_enqueued.send(type(self), task_result=result)
        return result

    # -- results ---------------------------------------------------------------------

    def get_result(self, result_id: str) -> Any:
        """The task's state now, read on Django's connection (so inside a
        transaction it sees what that transaction enqueued).
        TaskResultDoesNotExist for an id that is no task, or a task whose
        payload is not a Django task's. A task whose path names no task here
        (removed by a deploy, say) is read with a placeholder task of that path
        (:func:`.kinds.placeholder`): FAILED, with the error, once a worker of
        its queue has tried it."""
        try:
            task_id = int(result_id)
        except (TypeError, ValueError):
            raise TaskResultDoesNotExist(result_id) from None
        if not 0 < task_id < 2**63:
            raise TaskResultDoesNotExist(result_id)
        try:
            (row,) = database.execute(self.database, queries.GET_TASK_TEXT, {"task_id": task_id})
        except NotFound:
            raise TaskResultDoesNotExist(result_id) from None
        for key in ("payload", "result", "attempts"):
            row[key] = None if row[key] is None else json.loads(row[key])
        info = TaskInfo.from_row(row)
        try:
            task = kinds.resolve(info.kind)
        except kinds.TaskPathError:  # a path that does not import here: shown as it is (FAILED once a worker tried)
            task = kinds.placeholder(info.kind, self.alias)
        try:
            return task_result(info, task, self.alias)
        except ValueError as exc:
            raise TaskResultDoesNotExist(f"{result_id}: {exc}") from None

    # -- system checks ---------------------------------------------------------------

    def check(self, **kwargs: Any) -> Iterable[Any]:
        yield from super().check(**kwargs) or ()
        where = f"TASKS[{self.alias!r}]"
        options = self.params.get("OPTIONS", {}) or {}
        unknown = sorted(set(options) - set(OPTION_KEYS))
        if unknown:
            yield checks.Error(f"{where}['OPTIONS'] has unknown key(s): {', '.join(unknown)}",
                               hint=f"ConductorBackend reads {', '.join(OPTION_KEYS)}.",
                               id="pyconductor.E001")  # fmt: skip
        if self.database not in settings.DATABASES:
            yield checks.Error(f"{where}: no database {self.database!r} in settings.DATABASES",
                               hint="OPTIONS['DATABASE'] names a Django database alias.",
                               id="pyconductor.E002")  # fmt: skip
        elif connections[self.database].vendor != "postgresql":
            yield checks.Error(f"{where}: database {self.database!r} is not PostgreSQL",
                               hint="Conductor lives in PostgreSQL.", id="pyconductor.E003")  # fmt: skip
        for queue in sorted(self.queues):
            if not (isinstance(queue, str) and len(queue) <= 100 and _QUEUE_NAME.fullmatch(queue)):
                yield checks.Error(f"{where}: queue {queue!r} is not a valid Conductor queue name",
                                   hint="1-100 letters, digits and _ . : / -, starting with a letter or digit.",
                                   id="pyconductor.E004")  # fmt: skip
        if "ENQUEUE_ON_COMMIT" in self.params:
            yield checks.Warning(
                f"{where}: ENQUEUE_ON_COMMIT is not read",
                hint="Neither Django 6's django.tasks nor django-tasks 0.12 define it. ConductorBackend enqueues "
                     "in the caller's transaction: the task is visible at its commit and gone with its rollback. "
                     "To enqueue only after the commit, use transaction.on_commit(partial(task.enqueue, ...)).",
                id="pyconductor.W001",
            )  # fmt: skip
