"""Values to and from the database at a worker's per-task rate: JSON, and
the arrays a batch report sends.

``dumps_json`` is the one encoder for everything pyconductor sends as json or
jsonb (payloads, results, steps): strict (no NaN/Infinity, which PostgreSQL
rejects) and compact. ``use_fast_loads`` makes a connection decode json and
jsonb with a shared decoder.

Why not plain ``json.dumps(value, allow_nan=False, ...)`` and psycopg's
default loader: with keyword arguments ``json.dumps`` builds a new encoder per
call, and ``json.loads`` on bytes sniffs the encoding in Python first. A
worker encodes one result and decodes a payload and a steps object per task;
py-spy on a 128-slot drain of no-op tasks put 16 % of the worker's GIL time in
encoding ``None`` results and 10 % in decoding.

``load_infinite_times`` lets a connection read the timestamps ``infinity``
and ``-infinity`` (as ``datetime.max`` / ``datetime.min``, in UTC), which
psycopg refuses by default: v0.1.0 accepted them as run_at and retry times,
and a reader must not fail on a row stored then.

``storable_text`` makes an error message or traceback storable in a text
column: PostgreSQL text holds no NUL byte and only valid UTF-8, and psycopg
refuses such a string before it is sent.

``interval_text`` and ``timestamp_text`` write a Python duration or time the
way a parameter cast to ``interval`` / ``timestamptz`` reads it: the client,
the task context and the worker send them alike (a duration as seconds, so
``2.5`` and ``timedelta(seconds=2.5)`` are the same ``2.5 seconds``).

``bigint_array`` and ``text_array`` write a PostgreSQL array literal, for a
parameter cast to ``bigint[]`` / ``jsonb[]``: psycopg's list dumper adapts
element by element in Python, and a report of 128 results spent 450 us of
its 620 us round trip there.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg.abc import AdaptContext
from psycopg.types.datetime import TimestamptzLoader
from psycopg.types.json import set_json_loads

from pyconductor.errors import InvalidArgument

__all__ = [
    "bigint_array", "dumps_json", "interval_text", "load_infinite_times", "loads_json", "storable_text", "text_array",
    "timestamp_text", "use_fast_loads",
]  # fmt: skip

_ENCODER = json.JSONEncoder(allow_nan=False, separators=(",", ":"))
_DECODER = json.JSONDecoder()


def dumps_json(value: Any) -> str:
    """Strict, compact JSON text of ``value``; TypeError/ValueError when it is not JSON."""
    if value is None:
        return "null"
    return _ENCODER.encode(value)


def loads_json(data: str | bytes) -> Any:
    """A json/jsonb value as PostgreSQL sends it (UTF-8 text: bytes from psycopg's
    loaders, though its loads type says str too)."""
    if data == b"{}":
        return {}  # a task never claimed before has no steps, and many payloads are empty
    return _DECODER.decode(data if isinstance(data, str) else data.decode())


def use_fast_loads(conn: psycopg.Connection[Any]) -> None:
    """Decode json and jsonb on ``conn`` (only) with :func:`loads_json`."""
    set_json_loads(loads_json, conn)


class _InfiniteTimestamptzLoader(TimestamptzLoader):
    def load(self, data: Any) -> datetime:
        if data == b"infinity":
            return datetime.max.replace(tzinfo=UTC)
        if data == b"-infinity":
            return datetime.min.replace(tzinfo=UTC)
        return super().load(data)


def load_infinite_times(conn: AdaptContext) -> None:
    """Read ``infinity``/``-infinity`` timestamptz on ``conn`` (only) as datetime.max/min."""
    conn.adapters.register_loader("timestamptz", _InfiniteTimestamptzLoader)


def storable_text(text: str | None) -> str | None:
    """``text`` with each NUL written ``\\x00`` and each lone surrogate as its
    escape, so a text column takes it; other text is returned as it is."""
    if text is None:
        return None
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def interval_text(value: timedelta | float | str | None) -> str | None:
    """An interval parameter: seconds (int or float) or a timedelta as ``'N seconds'``;
    text (``'5 minutes'``) is passed as it is, for PostgreSQL to read; None stays None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, timedelta):
        return f"{value.total_seconds()} seconds"
    return f"{float(value)} seconds"


def timestamp_text(value: datetime | str | None) -> str | None:
    """A timestamptz parameter: an aware datetime in ISO 8601, text as it is, None as None.
    A naive datetime raises InvalidArgument: which zone it means is the caller's to say."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise InvalidArgument(f"run_at {value!r} has no time zone; pass an aware datetime")
        return value.isoformat()
    return value


def bigint_array(values: Iterable[int]) -> str:
    """The array literal of ``values`` (ints), e.g. ``{1,2,3}``."""
    return "{" + ",".join(map(str, map(int, values))) + "}"


def text_array(values: Iterable[str]) -> str:
    """The array literal of ``values`` (strings, none NULL), each element quoted."""
    return "{" + ",".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "}"
