"""Which Tasks framework this Django has: ``django.tasks`` (Django 6.0 and later,
Python 3.12+) when it exists, else the ``django-tasks`` backport (module
``django_tasks``, the same DEP 14 API), so the rest of the package imports
every framework name from here and never names either module.

The two differ only in names: Django 6 calls the invalid-task error
``InvalidTask`` and keeps ``normalize_json`` in ``django.utils.json``; the
backport (0.12) says ``InvalidTaskError`` and ``django_tasks.utils``.
"""

from __future__ import annotations

from importlib.util import find_spec

__all__ = [
    "FRAMEWORK", "BaseTaskBackend", "InvalidTaskError", "Task", "TaskContext", "TaskError", "TaskResult",
    "TaskResultDoesNotExist", "TaskResultMismatch", "TaskResultStatus", "normalize_json", "task_backends",
    "task_enqueued", "task_finished", "task_started",
]  # fmt: skip


def _has_django_tasks() -> bool:
    try:
        return find_spec("django.tasks") is not None
    except ImportError:  # no django at all: the import below says so
        return False


if _has_django_tasks():
    FRAMEWORK = "django.tasks"
    from django.tasks import task_backends  # type: ignore[import-not-found, no-redef, unused-ignore]
    from django.tasks.backends.base import BaseTaskBackend  # type: ignore[import-not-found, no-redef, unused-ignore]
    from django.tasks.base import (  # type: ignore[import-not-found, no-redef, unused-ignore]
        Task,
        TaskContext,
        TaskError,
        TaskResult,
        TaskResultStatus,
    )
    from django.tasks.exceptions import InvalidTask as InvalidTaskError  # type: ignore[import-not-found, no-redef, unused-ignore]
    from django.tasks.exceptions import TaskResultDoesNotExist, TaskResultMismatch  # type: ignore[import-not-found, no-redef, unused-ignore]
    from django.tasks.signals import task_enqueued, task_finished, task_started  # type: ignore[import-not-found, no-redef, unused-ignore]
    from django.utils.json import normalize_json  # type: ignore[attr-defined, no-redef, unused-ignore]
else:
    FRAMEWORK = "django_tasks"
    from django_tasks import task_backends  # type: ignore[no-redef, unused-ignore]
    from django_tasks.backends.base import BaseTaskBackend  # type: ignore[no-redef, unused-ignore]
    from django_tasks.base import (  # type: ignore[no-redef, unused-ignore]
        Task,
        TaskContext,
        TaskError,
        TaskResult,
        TaskResultStatus,
    )
    from django_tasks.exceptions import InvalidTaskError, TaskResultDoesNotExist, TaskResultMismatch  # type: ignore[no-redef, unused-ignore]
    from django_tasks.signals import task_enqueued, task_finished, task_started  # type: ignore[no-redef, unused-ignore]
    from django_tasks.utils import normalize_json  # type: ignore[no-redef, unused-ignore]
