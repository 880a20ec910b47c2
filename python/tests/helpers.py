"""Helpers for Conductor's tests. Import with ``from helpers import wait_until``."""

from __future__ import annotations

import difflib
import importlib.util
import sys
import time
from collections.abc import Callable
from importlib.util import find_spec
from pathlib import Path
from types import ModuleType
from typing import TypeVar

import pytest

T = TypeVar("T")

__all__ = ["NO_DJANGO", "REPO", "WaitTimeout", "assert_generated", "django_missing", "load_script", "wait_until"]

REPO = Path(__file__).resolve().parents[2]


# Why a Django test module is skipped at collection (django_missing), in a venv without
# the django extra.
NO_DJANGO = "Django is not installed (pip install 'conductor-pg[django]')"
NO_TASKS = ("Django has no Tasks framework: Django before 6 needs the django-tasks backport "
            "(pip install 'conductor-pg[django]')")


def django_missing() -> str | None:
    """Why the Django tests cannot run here (NO_DJANGO, NO_TASKS), or None when Django and
    a Tasks framework (Django 6's django.tasks, or the django-tasks backport) import. A
    Django test module skips with it, at collection, before it imports anything of Django:

        if (missing := django_missing()) is not None:
            pytest.skip(missing, allow_module_level=True)
    """
    try:
        import django  # noqa: F401 - whether it imports is the question
    except ImportError:
        return NO_DJANGO
    if not (_importable("django.tasks") or _importable("django_tasks")):
        return NO_TASKS
    return None


def _importable(name: str) -> bool:
    try:
        return find_spec(name) is not None
    except ImportError:  # a parent package that does not import
        return False


class WaitTimeout(AssertionError):
    """A condition awaited with ``wait_until`` did not come true in time."""


def wait_until(
    predicate: Callable[[], T],
    timeout: float = 10.0,
    interval: float = 0.01,
    message: str | Callable[[], str] | None = None,
) -> T:
    """Call ``predicate`` until it returns something truthy, and return that.

    Use instead of sleeping whenever a condition can be awaited. Raises
    ``WaitTimeout`` (an AssertionError) after ``timeout`` seconds; the last
    exception raised by the predicate, if any, is chained. A callable
    ``message`` is called at the timeout, so it can describe the state then.
    """
    deadline = time.monotonic() + timeout
    last_exc: Exception | None = None
    while True:
        try:
            value = predicate()
            if value:
                return value
            last_exc = None
        except Exception as exc:  # noqa: BLE001 - retried until the deadline
            last_exc = exc
        if time.monotonic() >= deadline:
            what = (message() if callable(message) else message) or getattr(predicate, "__name__", repr(predicate))
            raise WaitTimeout(f"condition not met within {timeout:g}s: {what}") from last_exc
        time.sleep(interval)


def load_script(name: str) -> ModuleType:
    """scripts/<name>.py imported as the module ``name`` (the generators of checked-in files)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def assert_generated(path: Path, generated: str, source: str) -> None:
    """Fail, with a diff, when the checked-in ``path`` is not ``generated`` (made from ``source``)."""
    checked_in = path.read_text() if path.exists() else ""
    if checked_in != generated:
        diff = "\n".join(list(difflib.unified_diff(checked_in.splitlines(), generated.splitlines(), "checked in",
                                                   "generated", lineterm="", n=1))[:80])  # fmt: skip
        pytest.fail(f"{path.relative_to(REPO)} differs from {source}: run make docs-reference\n{diff}")
