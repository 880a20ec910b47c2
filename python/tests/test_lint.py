"""The package passes its linter, its formatter's check and strict mypy.

``ruff check``, ``ruff format --check`` and ``mypy`` (strict) run on
python/pyconductor with their configuration from pyproject.toml ([tool.ruff],
[tool.mypy]) and the versions pinned in its ``test`` extra; a test fails with
the tool's own output. The package ships ``py.typed``: the mypy test is what
keeps that promise. No database is needed.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import REPO

PACKAGE = "python/pyconductor"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m <tool> ...`` from the repository root, where pyproject.toml is."""
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=240, check=False
    )


def _check(*args: str) -> None:
    proc = _run(*args)
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}", pytrace=False)


def test_ruff_check() -> None:
    _check("ruff", "check", "--no-cache", PACKAGE)


def test_ruff_format() -> None:
    _check("ruff", "format", "--check", "--no-cache", PACKAGE)


def test_mypy_strict() -> None:
    # the files, strict mode and the cache (build/mypy-cache) are in [tool.mypy]
    _check("mypy")
