"""Which Django tasks are Conductor kinds, and the task of a kind.

A Django task's kind is its function's dotted path (``Task.module_path``, e.g.
``shop.tasks.send_receipt``): what the backend enqueues and what a worker
imports to run it. The backend notes every task it validates (the ``@task``
decorator and ``.using()`` both validate) under its alias, so a worker knows
the kinds to claim once the modules defining them are imported:
:func:`discover` imports each installed app's ``tasks`` module (as Django's
admin finds ``admin`` modules) and the backend's ``OPTIONS["TASK_MODULES"]``.

A kind that names no task here (its module does not import, has no such
attribute, or the attribute is no ``@task``: a task renamed or removed by a
deploy, say) raises :class:`TaskPathError` from :func:`resolve`; the worker
fails such a task at once, without retries, and ``get_result`` shows it with
a :func:`placeholder` task of that path.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable
from importlib import import_module
from typing import Any

from django.utils.module_loading import autodiscover_modules, import_string

from pyconductor.contrib.django.compat import Task
from pyconductor.errors import NoRetry

__all__ = ["TaskPathError", "declare", "declared", "discover", "is_placeholder", "placeholder", "resolve"]

_PLACEHOLDER = "_conductor_placeholder"  # set on a placeholder's function


class TaskPathError(NoRetry, ImportError):
    """A kind (a task's dotted path) that names no Django task in this process.
    An ImportError, as the framework reports a task path that does not import;
    a :class:`~pyconductor.errors.NoRetry`, so a worker fails the task at once."""


_lock = threading.Lock()
_declared: dict[str, set[str]] = {}  # backend alias -> kinds


def declare(alias: str, task: Any) -> None:
    """Note that ``task`` runs on backend ``alias`` (the backend's validate_task calls this);
    a placeholder is not noted."""
    if is_placeholder(task):
        return
    with _lock:
        _declared.setdefault(alias, set()).add(task.module_path)


def declared(alias: str) -> list[str]:
    """The kinds of the tasks validated for backend ``alias`` so far, sorted."""
    with _lock:
        return sorted(_declared.get(alias, ()))


def discover(alias: str, modules: Iterable[str] = ()) -> list[str]:
    """Import every installed app's ``tasks`` module and ``modules``; the kinds
    of backend ``alias`` then declared."""
    autodiscover_modules("tasks")
    for name in modules:
        import_module(name)
    return declared(alias)


def resolve(kind: str) -> Any:
    """The Django task of ``kind``: the object at that dotted path.
    TaskPathError, naming the path and why, when there is none or it is not a
    task (a plain function, say)."""
    hint = "; not retried: deploy the code that defines it, then retry the task"
    try:
        found = import_string(kind)
    except Exception as exc:  # ImportError, or the module's own error at import (a SyntaxError, say)
        raise TaskPathError(f"task path {kind!r} does not import: {type(exc).__name__}: {exc}{hint}") from exc
    if not isinstance(found, Task):
        raise TaskPathError(f"task path {kind!r} names a {type(found).__name__}, not a Django task "
                            f"(a function decorated with @task){hint}")  # fmt: skip
    return found


def placeholder(kind: str, backend: str) -> Any:
    """A Task standing for ``kind`` where it names no task: its ``module_path``
    is ``kind``; calling it raises TaskPathError. Made without the framework's
    validation (its queue and priority are the defaults until ``using``)."""
    module, _, name = kind.rpartition(".")

    def missing(*args: Any, **kwargs: Any) -> Any:
        raise TaskPathError(f"task path {kind!r} names no Django task in this process")

    missing.__module__, missing.__name__, missing.__qualname__ = module, name, name
    setattr(missing, _PLACEHOLDER, True)
    task = object.__new__(Task)
    for field in dataclasses.fields(Task):
        if field.default is not dataclasses.MISSING:
            object.__setattr__(task, field.name, field.default)
    object.__setattr__(task, "func", missing)
    object.__setattr__(task, "backend", backend)
    return task


def is_placeholder(task: Any) -> bool:
    return bool(getattr(getattr(task, "func", None), _PLACEHOLDER, False))
