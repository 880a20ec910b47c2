"""The task registry: which handler runs which kind, with which options.

``@app.task("kind", queue=..., max_attempts=..., timeout=...)`` registers a
handler and returns a :class:`Task`, which is still callable like the function
and adds ``.enqueue(payload, **options)`` using the registered options.

A kind's options live in two places that agree once a worker has started:
here, and in the database's ``conductor.kinds`` (``conductor.configure_kind``,
which a worker calls at start for each kind it serves with
:meth:`Task.configuration`). ``enqueue`` from any client (psql, a trigger,
another language, this package without the registry) takes the kind's row for
what it does not say; this package sends the registered options itself, so
they apply even before a worker of the newest code has written them.

Checked here, when the module defining the handler is imported, rather than at
the first enqueue: ``timeout`` (more than 0 seconds; SQL checks its upper
bound) and ``concurrency_key`` (text: it is written to SQL as the kind's
default, so a value computed per task belongs in ``enqueue(concurrency_key=...)``;
0.1.0 took any value here, but nothing else ever reached the database: psycopg
refused to send a callable). The other options are checked by the database, at the worker's start.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol

from pyconductor.wire import interval_text

if TYPE_CHECKING:
    from pyconductor.context import TaskContext
    from pyconductor.scheduler import ScheduleSpec

__all__ = ["INTERVAL_OPTIONS", "KIND_OPTIONS", "RETENTION_OPTIONS", "Registry", "Task", "takes_context"]

# A kind's options: what @app.task may give, what Conductor.enqueue takes the
# registered value of when the caller gives none, and conductor.configure_kind's
# parameters after kind (what a worker writes at start for each kind it serves).
KIND_OPTIONS = (
    "queue", "priority", "concurrency_key", "max_attempts", "max_recoveries",
    "backoff_base", "backoff_factor", "backoff_max", "timeout", "concurrency_limit", "expires_in",
)  # fmt: skip

# A kind's retention (how long its finished runs are kept; None: the settings'),
# what @app.task may give too: configure_kind's last parameters, never an
# enqueue option (a task does not choose how long its run is kept).
RETENTION_OPTIONS = ("retain_succeeded", "retain_failed")

# The options that are durations (seconds, a timedelta, or interval text); sent as interval_text.
INTERVAL_OPTIONS = frozenset({"backoff_base", "backoff_max", "timeout", "expires_in", *RETENTION_OPTIONS})


class _App(Protocol):
    """What a Task needs of its Conductor: enqueue, called with the options a
    caller gave Task.enqueue (Conductor.enqueue names each of them, so the
    protocol takes any keywords rather than a ``**options`` only it would accept)."""

    @property
    def enqueue(self) -> Callable[..., int]: ...


def _check_options(kind: str, options: dict[str, Any]) -> None:
    """TypeError for an unknown option or a concurrency_key that is not text,
    ValueError for a timeout or expires_in that is not more than 0 seconds."""
    unknown = set(options) - set(KIND_OPTIONS) - set(RETENTION_OPTIONS)
    if unknown:
        raise TypeError(f"unknown task option(s) for {kind!r}: {', '.join(sorted(unknown))}")
    key = options.get("concurrency_key")
    if key is not None and not isinstance(key, str):
        raise TypeError(f"concurrency_key of {kind!r} must be a str (the kind's default, written to SQL), "
                        f"not {type(key).__name__}; pass a per-task key to enqueue(concurrency_key=...)")  # fmt: skip
    for name in ("timeout", "expires_in"):
        value = options.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float, timedelta)):
            raise TypeError(f"{name} of {kind!r} must be seconds (int or float) or a timedelta, "
                            f"not {type(value).__name__}")  # fmt: skip
        seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
        if not seconds > 0:  # NaN too
            raise ValueError(f"{name} of {kind!r} must be more than 0 seconds, got {value!r}")


def default_kind(fn: Callable[..., Any]) -> str:
    """The kind of a handler registered without one: its ``module.qualname``,
    without the angle brackets of ``<locals>`` and ``<lambda>`` (a kind may
    not hold markup characters: conductor._spec_problem), so a function defined
    inside another is ``module.outer.locals.inner``."""
    return f"{fn.__module__}.{fn.__qualname__}".replace("<", "").replace(">", "")


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

    def __init__(self, app: _App | None, kind: str, fn: Callable[..., Any], defaults: dict[str, Any]) -> None:
        _check_options(kind, defaults)
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
        merged = {k: v for k, v in self.defaults.items() if k not in RETENTION_OPTIONS}
        merged.update({k: v for k, v in overrides.items() if v is not None})
        return merged

    def configuration(self) -> dict[str, Any]:
        """``conductor.configure_kind``'s parameters for this kind (queries.CONFIGURE_KIND):
        ``kind`` and every one of KIND_OPTIONS and RETENTION_OPTIONS, None where
        nothing is registered (the engine's default), durations as interval text."""
        params: dict[str, Any] = {"kind": self.kind}
        for key in (*KIND_OPTIONS, *RETENTION_OPTIONS):
            value = self.defaults.get(key)
            params[key] = interval_text(value) if key in INTERVAL_OPTIONS else value
        return params

    def enqueue(self, payload: Any = None, *, conn: Any = None, **options: Any) -> int:
        """Enqueue one task of this kind with the registered defaults; returns its id.
        ``conn``: a psycopg Connection or Cursor of the caller's transaction
        (see :meth:`Conductor.enqueue <pyconductor.client.Conductor.enqueue>`)."""
        if self.app is None:
            raise RuntimeError(f"task {self.kind!r} is not bound to a Conductor")
        if conn is not None:
            options["conn"] = conn
        return self.app.enqueue(self.kind, payload, **options)


class Registry:
    """kind -> Task, and the schedules declared in code (name -> ScheduleSpec)."""

    def __init__(self) -> None:
        self._tasks: dict[str, Task] = {}
        self._schedules: dict[str, ScheduleSpec] = {}
        self.fallback: Callable[[str], Task] | None = None
        """The Task of a kind registered nowhere here, made when a worker claimed one. With
        one, a Worker claims every kind of its queues (pyconductor.contrib.django's worker:
        a queue's every task path is its to run, or to fail)."""

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

    def handler(self, kind: str) -> Task | None:
        """What runs a claimed task of ``kind``: its registered Task, else the fallback's."""
        task = self._tasks.get(kind)
        if task is None and self.fallback is not None:
            return self.fallback(kind)
        return task

    def __contains__(self, kind: object) -> bool:
        return kind in self._tasks

    def __iter__(self) -> Iterator[Task]:
        return iter(self._tasks.values())

    def __len__(self) -> int:
        return len(self._tasks)

    @property
    def kinds(self) -> list[str]:
        return sorted(self._tasks)

    def configurations(self) -> list[dict[str, Any]]:
        """What a worker writes at start: :meth:`Task.configuration` of each kind
        that registers at least one option, by kind. A kind registered with none
        is left out: configure_kind replaces the kind's whole row, and writing
        NULLs would wipe what an operator configured in SQL."""
        tasks = [self._tasks[kind] for kind in self.kinds]
        return [task.configuration() for task in tasks if any(v is not None for v in task.defaults.values())]
