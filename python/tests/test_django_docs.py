"""docs/django.md stays true to the code: every block it shows is covered by a
named test that exists, its Python parses, and every ``manage.py`` command line
it shows parses with that command's own parser."""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Iterator

import pytest

from helpers import REPO, django_missing

if (missing := django_missing()) is not None:
    pytest.skip(missing, allow_module_level=True)

from django_project import harness  # noqa: E402 - after the skip

PAGE = REPO / "docs" / "django.md"
FENCE = re.compile(r"^```(\w*)$")
MARK = re.compile(r"^<!--\s*(covered by|not run):\s*(.+?)\s*-->$")


def blocks() -> list[tuple[int, str, str, str | None]]:
    """(line, language, text, the mark on the line before) of each fenced block."""
    lines = PAGE.read_text().splitlines()
    found = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening and opening.group(1):
            end = next(j for j in range(i + 1, len(lines)) if lines[j] == "```")
            before = MARK.match(lines[i - 1]) if i else None
            found.append((i + 1, opening.group(1), "\n".join(lines[i + 1:end]),
                          f"{before.group(1)}: {before.group(2)}" if before else None))  # fmt: skip
            i = end
        i += 1
    return found


def test_every_runnable_block_is_covered_by_a_test_that_exists() -> None:
    missing = []
    for line, lang, _, mark in blocks():
        if lang in ("ini", "text"):
            continue
        if mark is None:
            missing.append(f"line {line}: a {lang} block without <!-- covered by: ... --> or <!-- not run: ... -->")
            continue
        what, _, target = mark.partition(": ")
        if what == "covered by":
            path, _, name = target.partition("::")
            source = (REPO / path).read_text() if (REPO / path).is_file() else ""
            if f"def {name}(" not in source:
                missing.append(f"line {line}: {target} does not exist")
    assert not missing, "\n".join(missing)


def test_python_blocks_parse() -> None:
    for line, lang, text, _ in blocks():
        if lang == "python":
            ast.parse(text, filename=f"docs/django.md:{line}")


def manage_lines() -> Iterator[list[str]]:
    for _, lang, text, _ in blocks():
        if lang == "sh":
            for raw in text.splitlines():
                command = raw.split("#", 1)[0].strip()
                if command.startswith("python manage.py "):
                    yield shlex.split(command)[2:]


@pytest.fixture
def configured(db_dsn: str) -> Iterator[None]:
    harness.use(db_dsn)
    yield
    harness.close()


def test_manage_py_lines_parse_with_their_commands_parsers(configured: None) -> None:
    from django.core.management import load_command_class

    shown = list(manage_lines())
    assert {args[0] for args in shown} == {"conductor_migrate", "conductor_worker", "conductor_health",
                                           "conductor_prune"}  # fmt: skip
    for name, *args in shown:
        command = load_command_class("pyconductor.contrib.django", name)
        command.create_parser("manage.py", name).parse_args(args)  # raises CommandError when a flag is wrong
