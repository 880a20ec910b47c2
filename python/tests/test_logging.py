"""Log records: the JSON formatter's fields, and the levels and extra keys a real worker's
records carry (lifecycle INFO, retries WARNING, terminal failures ERROR)."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from helpers import wait_until
from pyconductor import Conductor, Worker
from pyconductor.logs import EXTRA_KEYS, JsonFormatter, setup_logging

TASK_KEYS = {"task_id", "kind", "queue", "attempt", "worker_id", "duration_ms"}


def make_record(msg: str = "hello %s", args: tuple[Any, ...] = ("world",), **extra: Any) -> logging.LogRecord:
    logger = logging.getLogger("pyconductor.test")
    return logger.makeRecord(logger.name, logging.WARNING, __file__, 1, msg, args, None, extra=extra)


def test_json_line_has_the_fixed_fields() -> None:
    line = JsonFormatter().format(make_record())
    assert "\n" not in line
    data = json.loads(line)
    assert list(data) == ["time", "level", "logger", "message"]
    assert data["level"] == "WARNING" and data["logger"] == "pyconductor.test" and data["message"] == "hello world"
    assert data["time"].endswith("+00:00") and "T" in data["time"]


def test_json_line_lifts_the_extra_keys_in_order() -> None:
    extra = {"duration_ms": 12.5, "worker_id": "w1", "attempt": 2, "queue": "q", "kind": "k", "task_id": 7, "other": "x"}
    data = json.loads(JsonFormatter().format(make_record(**extra)))
    assert list(data)[4:] == list(EXTRA_KEYS)
    assert {k: data[k] for k in EXTRA_KEYS} == {k: extra[k] for k in EXTRA_KEYS}
    assert "other" not in data


def test_json_line_carries_the_traceback() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.getLogger("x").makeRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    data = json.loads(JsonFormatter().format(record))
    assert data["message"] == "failed" and "ValueError: boom" in data["exc_info"]


def test_setup_logging_json_and_text() -> None:
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    try:
        stream = io.StringIO()
        setup_logging("INFO", "json", stream=stream)
        logging.getLogger("pyconductor.x").info("started", extra={"worker_id": "w9"})
        logging.getLogger("pyconductor.x").debug("hidden")
        lines = stream.getvalue().splitlines()
        assert len(lines) == 1 and json.loads(lines[0])["worker_id"] == "w9"
        stream = io.StringIO()
        setup_logging("DEBUG", "text", stream=stream)
        logging.getLogger("pyconductor.x").debug("shown")
        assert " DEBUG pyconductor.x " in stream.getvalue()
        with pytest.raises(ValueError):
            setup_logging("INFO", "xml")
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def captured() -> Iterator[Capture]:
    logger = logging.getLogger("pyconductor")
    handler = Capture()
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(old_level)


def test_a_real_workers_records(db_dsn: str, captured: Capture) -> None:
    with Conductor(db_dsn, pool_max=2) as app:

        @app.task("log.ok", queue="logq")
        def ok(payload: dict[str, Any]) -> dict[str, Any]:
            return {"ok": True}

        @app.task("log.bad", queue="logq")
        def bad(payload: dict[str, Any]) -> None:
            raise ValueError("boom")

        good = ok.enqueue({})
        fatal = bad.enqueue({})
        retried = bad.enqueue({}, max_attempts=2)
        worker = Worker(app, ["logq"], 2, heartbeat_interval=0.2, poll_interval=0.3, reap_interval=1,
                        shutdown_grace=5, run_scheduler=False, worker_id="w-logs")  # fmt: skip
        with worker:
            wait_until(lambda: app.get(good).finished and app.get(fatal).finished
                       and app.get(retried).attempts and app.get(retried).status == "queued")  # fmt: skip
    records = captured.records

    lifecycle = [r for r in records if r.levelno == logging.INFO and getattr(r, "worker_id", None) == "w-logs"]
    assert any("started" in r.getMessage() for r in lifecycle), [r.getMessage() for r in records]
    assert any("stopped" in r.getMessage() for r in lifecycle)

    def about(task_id: int, level: int) -> list[logging.LogRecord]:
        return [r for r in records if getattr(r, "task_id", None) == task_id and r.levelno == level]

    (terminal,) = about(fatal, logging.ERROR)
    assert TASK_KEYS <= set(terminal.__dict__), "a terminal failure carries every task key"
    assert (terminal.task_id, terminal.kind, terminal.queue, terminal.attempt, terminal.worker_id) == (
        fatal, "log.bad", "logq", 1, "w-logs")  # fmt: skip
    assert isinstance(terminal.duration_ms, float) and terminal.duration_ms >= 0

    (retry,) = about(retried, logging.WARNING)
    assert TASK_KEYS <= set(retry.__dict__) and "retry" in retry.getMessage()

    success = [r for r in records if getattr(r, "task_id", None) == good]
    assert success and all(TASK_KEYS <= set(r.__dict__) for r in success)
    assert not about(good, logging.WARNING) and not about(good, logging.ERROR)

    line = json.loads(JsonFormatter().format(terminal))
    assert {k: line[k] for k in ("task_id", "kind", "queue", "attempt", "worker_id")} == {
        "task_id": fatal, "kind": "log.bad", "queue": "logq", "attempt": 1, "worker_id": "w-logs"}  # fmt: skip
