"""A Django task's arguments as a Conductor payload, and back.

The payload of a task enqueued by :class:`~pyconductor.contrib.django.ConductorBackend`
is the JSON object ``{"args": [...], "kwargs": {...}}``: what any worker, in any
language, reads. Only JSON goes in: str, int, float (finite), bool, None, lists
(tuples become lists, as the framework's own ``normalize_json`` makes them) and
dicts with str keys. Anything else (a datetime, a model instance, a set, a dict
with int keys, which JSON would silently turn into strings) is refused at
``enqueue`` with a TypeError naming where it is, never stored changed, as the
framework's own ``normalize_json`` refuses it.

What is JSON to Python but not to PostgreSQL is refused with the framework's
``InvalidTaskError`` (``django.tasks``' ``InvalidTask``), naming where, before
anything is enqueued: a NUL character (jsonb cannot store ``\\u0000``) or a
lone surrogate (not Unicode text) in a string or a key, and nesting deeper
than ``MAX_DEPTH`` lists and dicts (the check walks without recursion, so a
thousand levels raise this, not a RecursionError).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pyconductor.contrib.django.compat import InvalidTaskError

__all__ = ["MAX_DEPTH", "check_json", "from_payload", "to_payload"]

_HINT = "task arguments must be JSON: str, int, float, bool, None, lists and dicts with str keys"

MAX_DEPTH = 100
"""How deep lists and dicts may nest in a task's args (or kwargs), the outer one counting one."""

_NOT_TEXT = re.compile("[\x00\ud800-\udfff]")


def _check_text(text: str, where: str) -> None:
    bad = _NOT_TEXT.search(text)
    if bad is None:
        return
    if bad.group() == "\x00":
        raise InvalidTaskError(f"{where} holds a NUL character (at index {bad.start()}), which PostgreSQL cannot "
                               f"store in JSON; {_HINT}, without NUL characters")  # fmt: skip
    raise InvalidTaskError(f"{where} holds a lone surrogate ({bad.group()!r} at index {bad.start()}), which is not "
                           f"Unicode text; {_HINT}, of valid Unicode")  # fmt: skip


def check_json(value: Any, where: str) -> None:
    """TypeError (ValueError for NaN and infinities) naming ``where`` the first
    value is that JSON cannot carry unchanged; InvalidTaskError for a string or
    key PostgreSQL cannot store (NUL, a lone surrogate) or nesting deeper than
    MAX_DEPTH. Depth first, in order: the first problem is the one named."""
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, str):
            _check_text(value, where)
            continue
        if value is None or isinstance(value, (bool, int)):
            continue
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(f"{where} is {value!r}, which JSON cannot carry; {_HINT}")
            continue
        if isinstance(value, (list, tuple, dict)) and depth >= MAX_DEPTH:
            raise InvalidTaskError(f"{where} is nested more than {MAX_DEPTH} lists and dicts deep; "
                                   f"{_HINT}, at most {MAX_DEPTH} deep")  # fmt: skip
        if isinstance(value, (list, tuple)):
            stack.extend((item, f"{where}[{i}]", depth + 1) for i, item in reversed(list(enumerate(value))))
            continue
        if isinstance(value, dict):
            items = []
            for key, item in value.items():
                if not isinstance(key, str):
                    raise TypeError(f"{where} has the key {key!r} ({type(key).__name__}); {_HINT}")
                _check_text(key, f"{where} (the key {key!r})")
                items.append((item, f"{where}[{key!r}]", depth + 1))
            stack.extend(reversed(items))
            continue
        raise TypeError(f"{where} is a {type(value).__module__}.{type(value).__qualname__}; {_HINT}")


def to_payload(task_path: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``{"args": [...], "kwargs": {...}}`` for a call of ``task_path``, checked by check_json."""
    args, kwargs = list(args), dict(kwargs)
    check_json(args, f"{task_path}: args")
    check_json(kwargs, f"{task_path}: kwargs")
    return {"args": args, "kwargs": kwargs}


def from_payload(payload: Any) -> tuple[list[Any], dict[str, Any]]:
    """(args, kwargs) of a payload; ValueError when it is not of that shape (a task
    of a Django task's kind enqueued by hand, say)."""
    if isinstance(payload, Mapping) and set(payload) <= {"args", "kwargs"}:
        args, kwargs = payload.get("args", []), payload.get("kwargs", {})
        if isinstance(args, list) and isinstance(kwargs, Mapping):
            return list(args), dict(kwargs)
    raise ValueError(f'a Django task\'s payload is {{"args": [...], "kwargs": {{...}}}}, got {payload!r:.200}')
