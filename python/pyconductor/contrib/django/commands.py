"""What the ``manage.py conductor_*`` commands share: which backend and which
database they act on, and durations on the command line."""

from __future__ import annotations

import argparse
import re
from datetime import timedelta
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import CommandError, CommandParser

from pyconductor.contrib.django import database
from pyconductor.contrib.django.backend import ConductorBackend
from pyconductor.contrib.django.compat import task_backends
from pyconductor.durations import parse_duration

__all__ = ["add_target_arguments", "backend", "database_alias", "duration", "target_dsn"]


def add_target_arguments(parser: CommandParser) -> None:
    parser.add_argument("--backend", default="default",
                        help="the TASKS alias of a ConductorBackend (default: %(default)s)")  # fmt: skip
    parser.add_argument("--database", default=None,
                        help="the Django database alias (default: the backend's OPTIONS['DATABASE'], "
                             "else 'default')")  # fmt: skip


def backend(alias: str) -> ConductorBackend:
    """TASKS[alias], which must be a ConductorBackend (CommandError otherwise)."""
    try:
        found = task_backends[alias]
    except Exception as exc:  # InvalidTaskBackend(Error): no such alias, or its BACKEND does not import
        raise CommandError(f"no tasks backend {alias!r}: {exc}") from exc
    if not isinstance(found, ConductorBackend):
        raise CommandError(f"TASKS[{alias!r}] is a {type(found).__module__}.{type(found).__qualname__}, "
                           "not pyconductor.contrib.django.ConductorBackend")  # fmt: skip
    return found


def database_alias(options: dict[str, Any]) -> str:
    """--database, else the backend's database (``default`` when TASKS has no such backend and none is named)."""
    if options.get("database"):
        return str(options["database"])
    if options.get("backend", "default") == "default":
        try:
            return backend("default").database
        except CommandError:
            return "default"
    return backend(options["backend"]).database


def target_dsn(options: dict[str, Any]) -> str:
    """A libpq DSN for the database the command acts on."""
    try:
        return database.dsn_for(database_alias(options))
    except ImproperlyConfigured as exc:
        raise CommandError(str(exc)) from exc


def duration(text: str) -> timedelta:
    """``7d``, ``12h``, ``30m``, ``90s``, ``2w``, ``1h30m``: a duration with its
    unit (a bare number is refused: seconds or days? say which)."""
    if re.fullmatch(r"\s*\d+(?:\.\d+)?\s*", text):
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: give a unit, e.g. {text.strip()}d, "
                                         f"{text.strip()}h or {text.strip()}m")  # fmt: skip
    return parse_duration(text)
