"""A Django task's arguments as a Conductor payload, and back.

The payload of a task enqueued by :class:`~pyconductor.contrib.django.ConductorBackend`
is the JSON object ``{"args": [...], "kwargs": {...}}``: what any worker, in any
language, reads. Only JSON goes in: str, int, float (finite), bool, None, lists
(tuples become lists, as the framework's own ``normalize_json`` makes them) and
dicts with str keys. Anything else (a datetime, a model instance, a set, a dict
with int keys, which JSON would silently turn into strings) is refused at
``enqueue`` with a TypeError naming where it is, never stored changed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["check_json", "from_payload", "to_payload"]

_HINT = "task arguments must be JSON: str, int, float, bool, None, lists and dicts with str keys"


def check_json(value: Any, where: str) -> None:
    """TypeError (ValueError for NaN and infinities) naming ``where`` the first
    value is that JSON cannot carry unchanged."""
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where} is {value!r}, which JSON cannot carry; {_HINT}")
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_json(item, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where} has the key {key!r} ({type(key).__name__}); {_HINT}")
            check_json(item, f"{where}[{key!r}]")
        return
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
