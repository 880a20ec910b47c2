"""Log output for the ``pyconductor`` processes: plain text or one JSON object per line.

The library logs under ``logging.getLogger("pyconductor")`` and configures
nothing; the command line calls :func:`setup_logging`. Records about a task
carry stable ``extra`` keys, which :class:`JsonFormatter` lifts to top-level
fields for log shippers:

    task_id, kind, queue, attempt, worker_id, duration_ms

Every JSON line has ``time`` (ISO 8601, UTC, milliseconds), ``level``,
``logger`` and ``message``, then those keys when the record has them, then
``exc_info`` (the formatted traceback) when it carries an exception.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime, timezone
from typing import Any, TextIO

__all__ = ["EXTRA_KEYS", "LOG_FORMATS", "JsonFormatter", "TEXT_FORMAT", "setup_logging"]

EXTRA_KEYS = ("task_id", "kind", "queue", "attempt", "worker_id", "duration_ms")
"""The ``extra`` keys a record may carry, in the order JSON lines show them."""

LOG_FORMATS = ("text", "json")

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(process)d %(threadName)s] %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in EXTRA_KEYS:
            value = record.__dict__.get(key)
            if value is not None:
                out[key] = value
        if record.exc_info:
            out["exc_info"] = self.formatException(record.exc_info)
        elif record.exc_text:
            out["exc_info"] = record.exc_text
        if record.stack_info:
            out["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(out, default=str, ensure_ascii=False)


def setup_logging(level: str = "INFO", log_format: str = "text", stream: TextIO | None = None) -> logging.Handler:
    """Send every log record at ``level`` and above to ``stream`` (stderr), as
    ``text`` or ``json``. Replaces the root logger's handlers; returns the new one."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"unknown log format {log_format!r}: one of {', '.join(LOG_FORMATS)}")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    return handler
