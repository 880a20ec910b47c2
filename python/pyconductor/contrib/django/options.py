"""``task_options``: Conductor's own enqueue options for the Django tasks enqueued in a block.

Django's Tasks API carries a queue, a priority and a time to run after, and
nothing else, so Conductor's per-task options (flow control: a concurrency
key and limit, a dedupe key with its window, states, replace mode or
debounce, a deadline to start, a rate key; and a retry policy or timeout for
one task) are given around the call instead::

    from pyconductor.contrib.django import task_options

    with task_options(dedupe_key=f"digest:{user.id}", dedupe_window=timedelta(hours=1)):
        send_digest.enqueue(user.id)

Every enqueue in the block (``enqueue`` and ``aenqueue``, in this thread or
task: the options are a context variable) gets them, on top of the task's
kind's configuration (``conductor.configure_kind``), exactly as
``Conductor.enqueue`` passes them; blocks nest, the inner one's value winning
for a key both give. The database checks the values (the same SQLSTATEs as
enqueue's); an unknown name, or one the framework's task already carries
(queue, priority, run_at), is a TypeError here, before anything is stored.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any

from pyconductor.calls import SPEC_KEYS

__all__ = ["OPTION_NAMES", "current", "task_options"]

# The framework's own fields (the task's queue_name, priority, run_after), and what
# only the engine sets for a Django task (kind and payload are the task's path and
# arguments; a parent is a durable run's, through ctx.spawn).
_THE_FRAMEWORKS = frozenset({"kind", "payload", "queue", "priority", "run_at", "parent_id"})
OPTION_NAMES = tuple(key for key in SPEC_KEYS if key not in _THE_FRAMEWORKS)

_current: ContextVar[Mapping[str, Any]] = ContextVar("pyconductor_django_task_options",
                                                     default=MappingProxyType({}))  # fmt: skip


def current() -> Mapping[str, Any]:
    """The options of the innermost ``task_options`` block around this call ({} outside any)."""
    return _current.get()


@contextmanager
def task_options(**options: Any) -> Iterator[None]:
    """Give ``options`` (Conductor's enqueue options, see :data:`OPTION_NAMES`)
    to every Django task enqueued in the block."""
    taken = sorted(set(options) & _THE_FRAMEWORKS)
    if taken:
        raise TypeError(f"task_options cannot set {', '.join(taken)}: a Django task carries its own "
                        f"(queue_name, priority, run_after; kind and payload are its path and arguments)")  # fmt: skip
    unknown = sorted(set(options) - set(OPTION_NAMES))
    if unknown:
        raise TypeError(f"unknown task option(s): {', '.join(unknown)} (known: {', '.join(OPTION_NAMES)})")
    token = _current.set(MappingProxyType({**_current.get(), **options}))
    try:
        yield
    finally:
        _current.reset(token)
