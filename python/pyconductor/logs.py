"""Log output for the ``pyconductor`` processes: plain text or one JSON object per line.

The library logs under ``logging.getLogger("pyconductor")`` and configures
nothing; the command line calls :func:`setup_logging`. Records about a task
carry stable ``extra`` keys, which :class:`JsonFormatter` lifts to top-level
fields for log shippers:

    task_id, kind, queue, attempt, worker_id, duration_ms

Every JSON line has ``time`` (ISO 8601, UTC, milliseconds), ``level``,
``logger`` and ``message``, then those keys when the record has them, then
``exc_info`` (the formatted traceback) when it carries an exception. A JSON
line is one line of valid JSON whatever the record holds: JSON escapes the
control characters, and U+2028, U+2029 and lone surrogates are written as
``\\uXXXX`` escapes too.

A text record (:class:`TextFormatter`, ``TEXT_FORMAT``) is one line, so a
handler's error cannot forge another: every control character (C0 such
as NUL, newline, carriage return and escape; DEL; C1), Unicode format
character (bidi controls such as U+202E, zero widths, U+FEFF) and line or
paragraph separator in any field is written as an escape (``\\n``,
``\\x00``, ``\\u202e``). A traceback follows on lines of its own, each one
escaped the same way and indented by ``"  | "``, so no line after a record's
first can start like a record.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

__all__ = ["EXTRA_KEYS", "LOG_FORMATS", "TEXT_FORMAT", "JsonFormatter", "TextFormatter", "escape_text", "setup_logging"]

EXTRA_KEYS = ("task_id", "kind", "queue", "attempt", "worker_id", "duration_ms")
"""The ``extra`` keys a record may carry, in the order JSON lines show them."""

LOG_FORMATS = ("text", "json")

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(process)d %(threadName)s] %(message)s"

CONTINUATION = "  | "
"""What each line of a text record's traceback starts with."""

# Unicode's control (Cc), format (Cf), line and paragraph separator (Zl, Zp) characters
# (as of Unicode 15; the kind rule of conductor._hidden_char_class refuses the same set),
# and lone surrogates (Cs: a str may hold them, a UTF-8 stream cannot write them)
_HIDDEN = re.compile(
    "[\x00-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
    "\ud800-\udfff]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# what json.dumps(ensure_ascii=False) leaves raw that a line reader or a UTF-8 stream trips on
_JSON_RAW = re.compile("[\u2028\u2029\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escape_text(text: str) -> str:
    """``text`` with each control, format, separator and lone surrogate character
    written as a visible escape (``\\n``, ``\\x00``, ``\\u202e``); other text as it is."""
    return _HIDDEN.sub(_escape, text)


class TextFormatter(logging.Formatter):
    """``TEXT_FORMAT`` lines (by default) whose every field is escaped
    (:func:`escape_text`): one line per record, plus the traceback's lines, each
    escaped and indented by ``CONTINUATION``."""

    def __init__(self, fmt: str | None = TEXT_FORMAT, datefmt: str | None = None) -> None:
        super().__init__(fmt, datefmt)

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        # the fields are str-formatted into the line, then the line is escaped as a whole:
        # TEXT_FORMAT holds no character that escaping changes
        return escape_text(super().formatMessage(record))

    def _continued(self, text: str) -> str:
        return "".join("\n" + CONTINUATION + escape_text(line) for line in text.split("\n"))

    def format(self, record: logging.LogRecord) -> str:
        record.message = record.getMessage()
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        out = self.formatMessage(record)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            out += self._continued(record.exc_text.rstrip("\n"))
        if record.stack_info:
            out += self._continued(self.formatStack(record.stack_info).rstrip("\n"))
        return out


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
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
        line = json.dumps(out, default=str, ensure_ascii=False)
        return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", line)


def setup_logging(level: str = "INFO", log_format: str = "text", stream: TextIO | None = None) -> logging.Handler:
    """Send every log record at ``level`` and above to ``stream`` (stderr), as
    ``text`` or ``json``. Replaces the root logger's handlers; returns the new one."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"unknown log format {log_format!r}: one of {', '.join(LOG_FORMATS)}")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    return handler
