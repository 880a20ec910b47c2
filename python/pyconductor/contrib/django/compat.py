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
from typing import TYPE_CHECKING

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


# mypy reads the backport's branch: typed, and the one Python 3.11 (Django 5.2)
# has; at run time the test is _has_django_tasks() alone.
if TYPE_CHECKING or not _has_django_tasks():
    FRAMEWORK = "django_tasks"
    from django_tasks import task_backends
    from django_tasks.backends.base import BaseTaskBackend
    from django_tasks.base import (
        Task,
        TaskContext,
        TaskError,
        TaskResult,
        TaskResultStatus,
    )
    from django_tasks.exceptions import InvalidTaskError, TaskResultDoesNotExist, TaskResultMismatch
    from django_tasks.signals import task_enqueued, task_finished, task_started
    from django_tasks.utils import normalize_json
else:
    FRAMEWORK = "django.tasks"
    from django.tasks import task_backends
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import (
        Task,
        TaskContext,
        TaskError,
        TaskResult,
        TaskResultStatus,
    )
    from django.tasks.exceptions import InvalidTask as InvalidTaskError
    from django.tasks.exceptions import TaskResultDoesNotExist, TaskResultMismatch
    from django.tasks.signals import task_enqueued, task_finished, task_started
    from django.utils.json import normalize_json
