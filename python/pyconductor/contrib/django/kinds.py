"""Which Django tasks are Conductor kinds, and the task of a kind.

A Django task's kind is its function's dotted path (``Task.module_path``, e.g.
``shop.tasks.send_receipt``): what the backend enqueues and what a worker
imports to run it. The backend notes every task it validates (the ``@task``
decorator and ``.using()`` both validate) under its alias, so a worker knows
the kinds to claim once the modules defining them are imported:
:func:`discover` imports each installed app's ``tasks`` module (as Django's
admin finds ``admin`` modules) and the backend's ``OPTIONS["TASK_MODULES"]``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from importlib import import_module
from typing import Any

from django.utils.module_loading import autodiscover_modules, import_string

from pyconductor.contrib.django.compat import Task

__all__ = ["declare", "declared", "discover", "resolve"]

_lock = threading.Lock()
_declared: dict[str, set[str]] = {}  # backend alias -> kinds


def declare(alias: str, task: Any) -> None:
    """Note that ``task`` runs on backend ``alias`` (the backend's validate_task calls this)."""
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
    """The Django task of ``kind``: the object at that dotted path. LookupError
    when there is none or it is not a task (a plain function, say)."""
    try:
        found = import_string(kind)
    except ImportError as exc:
        raise LookupError(f"kind {kind!r} names no Django task: {exc}") from exc
    if not isinstance(found, Task):
        raise LookupError(f"kind {kind!r} names a {type(found).__name__}, not a Django task "
                          "(a function decorated with @task)")  # fmt: skip
    return found
