"""Where the command line's code lives (issue 28): ``cli.py`` parses, each
subcommand's runner is in :mod:`pyconductor.commands`, the development tools are
under :mod:`pyconductor.dev` and no runtime module imports them, the dashboard's
data layer knows no HTTP, and durations read and print as the CLI and the Django
commands both expect."""

from __future__ import annotations

import argparse
import ast
from datetime import timedelta
from pathlib import Path

import pytest

from pyconductor.cli import build_parser
from pyconductor.durations import format_duration, parse_duration

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "pyconductor"
# the modules of the command line, which may start a development cluster or the demo
COMMAND_LINE = ("pyconductor.cli", "pyconductor.cliutil", "pyconductor.commands", "pyconductor.dev")


def subcommands() -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def imported(path: Path) -> set[str]:
    """The modules ``path`` imports, anywhere in it (``from X import Y`` counts as X and X.Y)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_each_subcommand_runs_a_function_of_pyconductor_commands(name: str) -> None:
    run = subcommands()[name].get_default("func")
    assert callable(run), f"`pyconductor {name}` sets no func"
    assert run.__module__.startswith("pyconductor.commands."), f"`pyconductor {name}` runs {run.__module__}"


def test_cli_sends_no_statement() -> None:
    uses = imported(PACKAGE_DIR / "cli.py")
    assert not {m for m in uses if m.startswith("psycopg") or m == "pyconductor.queries"}, uses


def test_no_runtime_module_imports_the_development_tools() -> None:
    offenders = {
        module_name(path)
        for path in PACKAGE_DIR.rglob("*.py")
        if not module_name(path).startswith(COMMAND_LINE)
        and any(m == "pyconductor.dev" or m.startswith("pyconductor.dev.") for m in imported(path))
    }
    assert not offenders, f"runtime modules importing pyconductor.dev: {sorted(offenders)}"


def test_the_dashboards_data_layer_knows_no_http() -> None:
    uses = imported(PACKAGE_DIR / "web" / "reads.py")
    assert not {m for m in uses if m.startswith(("starlette", "uvicorn", "pyconductor.web."))}, uses


@pytest.mark.parametrize(("text", "seconds"), [
    ("30s", 30), ("5m", 300), ("1h30m", 5400), ("7d", 7 * 86400), ("2w", 14 * 86400), ("250ms", 0.25),
    ("90", 90), (" 1 h ", 3600), ("1.5h", 5400),
])  # fmt: skip
def test_a_duration_reads_as_people_type_it(text: str, seconds: float) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "5x", "m5", "1h 30", "-5s"])
def test_a_duration_that_does_not_parse_says_how_to_write_one(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"use e\.g\. 30s, 5m"):
        parse_duration(text)


@pytest.mark.parametrize(("seconds", "shown"), [
    (None, "-"), (0, "0s"), (0.85, "850ms"), (42, "42s"), (312, "5m12s"), (3 * 3600 + 240, "3h04m"),
    (2 * 86400 + 5 * 3600, "2d05h"),
])  # fmt: skip
def test_a_duration_prints_short(seconds: float | None, shown: str) -> None:
    assert format_duration(None if seconds is None else timedelta(seconds=seconds)) == shown
