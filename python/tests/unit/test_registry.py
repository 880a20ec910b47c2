"""Handler dispatch and registered defaults (no database: nothing here connects)."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from pyconductor import Conductor, TaskCancelledError, TaskContext
from pyconductor.registry import takes_context


def ctx(**kw: Any) -> TaskContext:
    return TaskContext(task_id=1, attempt_id=10, attempt=1, kind="k", queue="q", **kw)


def one(payload: Any) -> Any:
    return ("one", payload)


def two(payload: Any, ctx: TaskContext) -> Any:
    return ("two", payload, ctx.task_id)


def with_default(payload: Any, ctx: Any = None) -> Any:
    return ("default", ctx is not None)


def varargs(*args: Any) -> Any:
    return ("var", len(args))


def kw_only(payload: Any, *, ctx: Any = None) -> Any:
    return ("kw", ctx)


class Callable:
    def __call__(self, payload: Any, ctx: TaskContext) -> Any:
        return ("obj", ctx.attempt_id)


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        (one, ("one", {"a": 1})),
        (two, ("two", {"a": 1}, 1)),
        (with_default, ("default", True)),
        (varargs, ("var", 2)),
        (kw_only, ("kw", None)),
        (Callable(), ("obj", 10)),
        (lambda p: p["a"], 1),
        (lambda p, c: c.kind, "k"),
        (functools.partial(one), ("one", {"a": 1})),
        (functools.partial(two), ("two", {"a": 1}, 1)),
    ],
)
def test_handlers_get_ctx_when_they_take_two_positional_parameters(fn: Any, expected: Any) -> None:
    app = Conductor("postgresql://unused.invalid/none")
    task = app.register("k", fn)
    assert task.run({"a": 1}, ctx()) == expected


def test_takes_context_never_raises() -> None:
    assert takes_context(print) is True  # print(*args): gets ctx
    assert takes_context(len) is False


def test_decorator_returns_a_callable_task_with_defaults() -> None:
    app = Conductor("postgresql://unused.invalid/none")

    @app.task("mail.send", queue="mail", max_attempts=5)
    def send(payload: dict[str, str]) -> str:
        """Send one mail."""
        return payload["to"]

    assert send({"to": "x"}) == "x"
    assert send.__name__ == "send" and send.__doc__ == "Send one mail."
    assert send.kind == "mail.send" and app.registry.get("mail.send") is send
    assert "mail.send" in app.registry and app.registry.kinds == ["mail.send"]
    assert app._pool is None, "registering opens no connection"


def test_default_kind_is_module_and_qualname_without_angle_brackets() -> None:
    app = Conductor("postgresql://unused.invalid/none")

    @app.task()
    def handler(payload: Any) -> None:
        return None

    # a kind may not hold markup characters (conductor._spec_problem): <locals> loses its brackets
    assert handler.kind == f"{__name__}.test_default_kind_is_module_and_qualname_without_angle_brackets.locals.handler"
    assert app.task()(one).kind == f"{__name__}.one"


def test_task_spec_applies_registered_defaults_then_overrides() -> None:
    app = Conductor("postgresql://unused.invalid/none")
    app.register("k", one, queue="q1", max_attempts=3, backoff_base=2.5)
    assert app.task_spec("k", {"x": 1}) == {
        "kind": "k", "payload": {"x": 1}, "queue": "q1", "max_attempts": 3, "backoff_base": "2.5 seconds",
    }  # fmt: skip
    spec = app.task_spec("k", None, queue="q2", priority=4, max_attempts=None, dedupe_key="d")
    assert spec == {"kind": "k", "payload": {}, "queue": "q2", "max_attempts": 3, "backoff_base": "2.5 seconds",
                    "priority": 4, "dedupe_key": "d"}  # fmt: skip
    # an unknown kind: only what is given; the database fills in the rest
    assert app.task_spec("other") == {"kind": "other", "payload": {}}


def test_unknown_options_are_refused() -> None:
    app = Conductor("postgresql://unused.invalid/none")
    with pytest.raises(TypeError, match="colour"):
        app.register("k", one, colour="blue")
    with pytest.raises(TypeError, match="colour"):
        app.task_spec("k", colour="blue")


def test_a_kind_registers_once() -> None:
    app = Conductor("postgresql://unused.invalid/none")
    app.register("k", one)
    with pytest.raises(ValueError, match="already registered"):
        app.register("k", two)


def test_context_cancellation() -> None:
    c = ctx()
    assert not c.cancelled and c.cancel_reason is None
    c.raise_if_cancelled()
    assert c.wait_cancelled(0.001) is False
    c.cancel("lost")
    c.cancel("cancelled")
    assert c.cancelled and c.cancel_reason == "lost" and c.wait_cancelled(0)
    with pytest.raises(TaskCancelledError, match="lost"):
        c.raise_if_cancelled()
