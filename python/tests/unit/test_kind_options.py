"""A kind's options in the registry: which there are, what is refused at
registration, and how they are sent (no database: nothing here connects)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from pyconductor import Conductor, InvalidArgument
from pyconductor.registry import INTERVAL_OPTIONS, KIND_OPTIONS, RETENTION_OPTIONS
from pyconductor.wire import interval_text, timestamp_text


def handler(payload: Any) -> None:
    return None


def app() -> Conductor:
    return Conductor("postgresql://unused.invalid/none")


def test_kind_options_are_the_options_a_kind_has() -> None:
    assert KIND_OPTIONS == (
        "queue", "priority", "concurrency_key", "max_attempts", "max_recoveries",
        "backoff_base", "backoff_factor", "backoff_max", "timeout", "concurrency_limit", "expires_in",
    )  # fmt: skip
    assert RETENTION_OPTIONS == ("retain_succeeded", "retain_failed")
    assert INTERVAL_OPTIONS <= {*KIND_OPTIONS, *RETENTION_OPTIONS}


@pytest.mark.parametrize("timeout", [2, 2.5, timedelta(seconds=2), timedelta(days=40)])
def test_a_timeout_is_seconds_or_a_timedelta(timeout: Any) -> None:
    # the upper bound (30 days) is the database's, checked when a worker writes the kind
    task = app().register("k", handler, timeout=timeout)
    assert task.defaults["timeout"] == timeout


@pytest.mark.parametrize(
    ("timeout", "error", "match"),
    [
        (0, ValueError, "more than 0 seconds, got 0"),
        (-1.5, ValueError, "more than 0"),
        (float("nan"), ValueError, "more than 0"),
        (timedelta(0), ValueError, "more than 0"),
        (timedelta(seconds=-1), ValueError, "more than 0"),
        (True, TypeError, "seconds .* or a timedelta, not bool"),
        ("5 minutes", TypeError, "not str"),
    ],
)
def test_a_timeout_not_over_zero_is_refused_at_registration(timeout: Any, error: type, match: str) -> None:
    a = app()
    with pytest.raises(error, match=match):
        a.register("k", handler, timeout=timeout)
    with pytest.raises(error, match="'k2'"):
        a.task("k2", timeout=timeout)(handler)
    assert len(a.registry) == 0


@pytest.mark.parametrize("key", [lambda payload: payload["user"], 42, b"bytes"])
def test_a_concurrency_key_default_must_be_text(key: Any) -> None:
    """It is written to SQL as the kind's default; a key per task is enqueue's argument."""
    with pytest.raises(TypeError, match="concurrency_key of 'k' must be a str"):
        app().register("k", handler, concurrency_key=key)


def test_configuration_names_every_kind_option_durations_as_interval_text() -> None:
    task = app().register("k", handler, queue="q", priority=5, concurrency_key="c", backoff_base=2,
                          backoff_max=timedelta(minutes=1), timeout=1.5, concurrency_limit=3,
                          expires_in=timedelta(minutes=10))  # fmt: skip
    assert task.configuration() == {
        "kind": "k", "queue": "q", "priority": 5, "concurrency_key": "c", "max_attempts": None,
        "max_recoveries": None, "backoff_base": "2.0 seconds", "backoff_factor": None,
        "backoff_max": "60.0 seconds", "timeout": "1.5 seconds", "concurrency_limit": 3, "expires_in": "600.0 seconds",
        "retain_succeeded": None, "retain_failed": None,
    }  # fmt: skip
    # nothing registered: every option None, so the engine's defaults apply
    bare = app().register("bare", handler).configuration()
    assert bare == {"kind": "bare", **dict.fromkeys(KIND_OPTIONS), **dict.fromkeys(RETENTION_OPTIONS)}


def test_a_worker_writes_only_the_kinds_that_register_an_option() -> None:
    a = app()
    a.register("b.bare", handler)
    a.register("d.none", handler, queue=None)
    a.register("a.queue_only", handler, queue="q")
    a.register("c.timed", handler, timeout=5)
    assert [c["kind"] for c in a.registry.configurations()] == ["a.queue_only", "c.timed"]
    assert a.registry.configurations()[0] == {
        "kind": "a.queue_only", **dict.fromkeys(KIND_OPTIONS), **dict.fromkeys(RETENTION_OPTIONS), "queue": "q"}


def test_retention_is_the_kinds_and_never_an_enqueue_option() -> None:
    a = app()
    a.register("k", handler, retain_succeeded=timedelta(days=1), retain_failed=3600)
    configuration = a.registry.get("k").configuration()
    assert configuration["retain_succeeded"] == "86400.0 seconds"
    assert configuration["retain_failed"] == "3600.0 seconds"
    assert a.task_spec("k") == {"kind": "k", "payload": {}}  # a task does not choose how long its run is kept
    with pytest.raises(TypeError, match="unknown enqueue option"):
        a.task_spec("k", retain_succeeded=1)


def test_task_spec_sends_a_timeout_as_an_interval_and_leaves_out_what_nobody_gave() -> None:
    a = app()
    a.register("k", handler, timeout=timedelta(seconds=3))
    assert a.task_spec("k") == {"kind": "k", "payload": {}, "timeout": "3.0 seconds"}
    assert a.task_spec("k", timeout=10)["timeout"] == "10.0 seconds"
    # no registration: no queue, no priority, so the kind's configuration in SQL applies
    assert a.task_spec("other", {"x": 1}) == {"kind": "other", "payload": {"x": 1}}


def test_interval_and_timestamp_text() -> None:
    assert interval_text(None) is None
    assert interval_text(2) == interval_text(2.0) == interval_text(timedelta(seconds=2)) == "2.0 seconds"
    assert interval_text("5 minutes") == "5 minutes"
    when = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    assert timestamp_text(when) == "2030-01-02T03:04:05+00:00"
    assert timestamp_text("2030-01-02 03:04:05Z") == "2030-01-02 03:04:05Z"
    assert timestamp_text(None) is None
    with pytest.raises(InvalidArgument, match="no time zone"):
        timestamp_text(datetime(2030, 1, 2))
