"""Log records: the JSON formatter's fields, and the levels and extra keys a real worker's
records carry (lifecycle INFO, retries WARNING, terminal failures ERROR)."""

from __future__ import annotations

import io
import json
import logging
import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from helpers import wait_until
from pyconductor import Conductor, Worker
from pyconductor.logs import EXTRA_KEYS, JsonFormatter, TextFormatter, escape_text, setup_logging

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


FORGED = "\n2026-01-01 00:00:00,000 INFO pyconductor forged\x00"
RECORD_START = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ ")


def test_a_text_record_is_one_line_whatever_its_fields_hold() -> None:
    record = make_record("task %d (%s) failed: %s", (7, "k\u202ed", f"ValueError({FORGED!s})\r\x1b[2J\u2028end"))
    record.threadName = "thread\nname"
    line = TextFormatter().format(record)
    assert "\n" not in line and "\r" not in line and "\x00" not in line and "\x1b" not in line
    assert "\u202e" not in line and "\u2028" not in line
    assert line.endswith("task 7 (k\\u202ed) failed: ValueError(\\n2026-01-01 00:00:00,000 INFO pyconductor forged"
                         "\\x00)\\r\\x1b[2J\\u2028end")
    assert "[%d thread\\nname]" % record.process in line
    assert escape_text("plain text, tabs\tno, é, 日本, 🎉, C:\\path") == "plain text, tabs\\tno, é, 日本, 🎉, C:\\path"
    assert escape_text("lone \ud800 surrogate") == "lone \\ud800 surrogate"


def test_a_traceback_is_indented_and_escaped_under_its_record() -> None:
    try:
        raise ValueError("boom" + FORGED)
    except ValueError:
        record = logging.getLogger("x").makeRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    lines = TextFormatter().format(record).split("\n")
    assert RECORD_START.match(lines[0]) and lines[0].endswith(" failed")
    assert lines[1] == "  | Traceback (most recent call last):"
    assert all(line.startswith("  | ") for line in lines[1:])
    assert lines[-2:] == ["  | ValueError: boom", "  | 2026-01-01 00:00:00,000 INFO pyconductor forged\\x00"]
    assert not any(RECORD_START.match(line) for line in lines[1:])


def test_a_json_line_stays_one_line_of_json() -> None:
    message = "a\u2028b\u2029c" + FORGED + " \ud800"
    line = JsonFormatter().format(make_record("%s", (message,)))
    assert "\n" not in line and "\u2028" not in line and "\u2029" not in line
    line.encode("utf-8")  # a lone surrogate would not encode
    assert json.loads(line)["message"] == message


def test_a_real_workers_text_log_escapes_a_handlers_error(db_dsn: str) -> None:
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    stream = io.StringIO()
    try:
        setup_logging("INFO", "text", stream=stream)
        with Conductor(db_dsn, pool_max=2) as app:

            @app.task("log.forge", queue="forgeq")
            def forge(payload: dict[str, Any]) -> None:
                raise ValueError(FORGED)

            task = forge.enqueue({})
            worker = Worker(app, ["forgeq"], 1, heartbeat_interval=0.2, poll_interval=0.3, reap_interval=1,
                            shutdown_grace=5, run_scheduler=False, worker_id="w-forge")  # fmt: skip
            with worker:
                wait_until(lambda: app.get(task).finished)
                wait_until(lambda: f"task {task} (log.forge) failed" in stream.getvalue())
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
    text = stream.getvalue()
    assert "\x00" not in text
    lines = text.splitlines()
    (failed,) = [line for line in lines if f"task {task} (log.forge) failed" in line]
    assert RECORD_START.match(failed) and " ERROR pyconductor" in failed
    assert failed.endswith("\\n2026-01-01 00:00:00,000 INFO pyconductor forged\\x00"), failed
    assert not any(line.startswith("2026-01-01 00:00:00,000") for line in lines), "a forged line"
    assert all(RECORD_START.match(line) or line.startswith("  | ") for line in lines), lines
