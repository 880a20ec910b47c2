"""Durations as people type and read them: ``30s``, ``5m``, ``1h30m``, ``7d``.

The command line (:mod:`pyconductor.cli`, :mod:`pyconductor.commands`) and the
Django management commands both parse and print durations with these.
"""

from __future__ import annotations

import argparse
import re
from datetime import timedelta

__all__ = ["format_duration", "parse_duration"]

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")


def parse_duration(text: str) -> timedelta:
    """``30s``, ``5m``, ``1h``, ``7d``, ``2w``, ``1h30m``, or a bare number of seconds."""
    s = text.strip().lower().replace(" ", "")
    if re.fullmatch(r"\d+(?:\.\d+)?", s):
        return timedelta(seconds=float(s))
    pos, total = 0, 0.0
    for m in _PART.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not s or pos != len(s):
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: use e.g. 30s, 5m, 1h, 7d or 1h30m")
    return timedelta(seconds=total)


def format_duration(value: timedelta | None) -> str:
    """A short human duration: ``850ms``, ``42s``, ``5m12s``, ``3h04m``, ``2d05h``; ``-`` for None."""
    if value is None:
        return "-"
    secs = value.total_seconds()
    if secs == 0:
        return "0s"
    if secs < 1:
        return f"{secs * 1000:.0f}ms"
    secs_i = int(secs)
    d, rem = divmod(secs_i, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    if d:
        return f"{d}d{h:02d}h"
    if h:
        return f"{h}h{m:02d}m"
    if m:
        return f"{m}m{s:02d}s"
    return f"{s}s"
