"""The task registry: which handler runs which kind, with which enqueue defaults.

``@app.task("kind", queue=..., max_attempts=...)`` registers a handler and
returns a :class:`Task`, which is still callable like the function and adds
``.enqueue(payload, **options)`` using the registered defaults.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from pyconductor.context import TaskContext

if TYPE_CHECKING:
    from pyconductor.client import Conductor
    from pyconductor.scheduler import ScheduleSpec

__all__ = ["ENQUEUE_OPTIONS", "POLICY_OPTIONS", "Registry", "Task", "takes_context"]

# The options of a kind that are its retry policy in the database (configure_kind).
POLICY_OPTIONS = ("max_attempts", "max_recoveries", "backoff_base", "backoff_factor", "backoff_max")

# The options of Conductor.enqueue a registration may give defaults for.
ENQUEUE_OPTIONS = frozenset({
    "queue", "priority", "max_attempts", "max_recoveries", "concurrency_key",
    "backoff_base", "backoff_factor", "backoff_max",
})  # fmt: skip


def takes_context(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` is called as ``fn(payload, ctx)`` rather than ``fn(payload)``:
    it takes two (or more) positional parameters, or ``*args``."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # some builtins have no signature
        return False
    positional = 0
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            return True
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            positional += 1
    return positional >= 2


class Task:
    """A registered handler: call it like the function, enqueue with ``.enqueue``."""

    def __init__(self, app: Conductor | None, kind: str, fn: Callable[..., Any], defaults: dict[str, Any]) -> None:
        unknown = set(defaults) - ENQUEUE_OPTIONS
        if unknown:
            raise TypeError(f"unknown task option(s) for {kind!r}: {', '.join(sorted(unknown))}")
        self.app = app
        self.kind = kind
        self.fn = fn
        self.defaults = dict(defaults)
        self.takes_context = takes_context(fn)
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Task {self.kind!r} -> {getattr(self.fn, '__qualname__', self.fn)!r}>"

    def run(self, payload: Any, ctx: TaskContext) -> Any:
        """Call the handler the way it asks for: ``fn(payload)`` or ``fn(payload, ctx)``."""
        return self.fn(payload, ctx) if self.takes_context else self.fn(payload)

    def options(self, **overrides: Any) -> dict[str, Any]:
        """The registered defaults updated by ``overrides`` (None overrides nothing)."""
        merged = dict(self.defaults)
        merged.update({k: v for k, v in overrides.items() if v is not None})
        return merged

    def enqueue(self, payload: Any = None, **options: Any) -> int:
        """Enqueue one task of this kind with the registered defaults; returns its id."""
        if self.app is None:
            raise RuntimeError(f"task {self.kind!r} is not bound to a Conductor")
        return self.app.enqueue(self.kind, payload, **options)


class Registry:
    """kind -> Task, and the schedules declared in code (name -> ScheduleSpec)."""

    def __init__(self) -> None:
        self._tasks: dict[str, Task] = {}
        self._schedules: dict[str, ScheduleSpec] = {}

    def add_schedule(self, spec: ScheduleSpec) -> ScheduleSpec:
        if spec.name in self._schedules and self._schedules[spec.name] != spec:
            raise ValueError(f"schedule {spec.name!r} is already declared differently")
        self._schedules[spec.name] = spec
        return spec

    @property
    def schedules(self) -> list[ScheduleSpec]:
        return [self._schedules[name] for name in sorted(self._schedules)]

    def add(self, task: Task) -> Task:
        if task.kind in self._tasks and self._tasks[task.kind].fn is not task.fn:
            raise ValueError(f"kind {task.kind!r} is already registered to {self._tasks[task.kind]!r}")
        self._tasks[task.kind] = task
        return task

    def get(self, kind: str) -> Task | None:
        return self._tasks.get(kind)

    def __contains__(self, kind: object) -> bool:
        return kind in self._tasks

    def __iter__(self) -> Iterator[Task]:
        return iter(self._tasks.values())

    def __len__(self) -> int:
        return len(self._tasks)

    @property
    def kinds(self) -> list[str]:
        return sorted(self._tasks)
