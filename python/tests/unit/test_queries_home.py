"""Every SQL statement pyconductor sends is written in pyconductor/queries.py.

Issue 28: a newcomer finds every statement the driver sends in one file
(procrastinate keeps its queries in one ``queries.sql``). The package's
source is read with ``ast``: a string literal (an f-string's literal parts
read as one text, its fields as ``{}``) that is an SQL statement, anywhere
but in ``queries.py``, fails the test naming its module and line. Docstrings
and other bare string statements are prose, not statements, and are skipped.

A statement is recognised by how one begins (:data:`STATEMENT`), in either
case: a ``select`` reading something, a ``with`` query, ``insert``,
``update ... set``, ``delete from``, ``listen``/``unlisten``/``notify``,
``set``/``reset`` of a setting, and DDL (``create``/``drop``/``alter``). Help
texts and log messages that merely start with such a word ("delete old
tasks", "select a queue") do not have the statement's shape.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "pyconductor"
HOME = "queries.py"

STATEMENT = re.compile(
    r"""\s*(?:
        select\s+(?:\d+\s*$|.*(?:\bfrom\b|\(|%s|%\(|\bconductor\.))
      | with\s+(?:recursive\s+)?\w+\s*(?:\([^)]*\)\s*)?as\s*(?:(?:not\s+)?materialized\s*)?\(
      | insert\s+into\s
      | update\s+[\w."]+\s+(?:as\s+\w+\s+)?set\s
      | delete\s+from\s
      | (?:listen|unlisten)\s+[\w"*]+\s*$
      | notify\s+[\w"]+
      | set\s+(?:local\s+|session\s+)?[\w.]+\s*(?:=|to\s)
      | reset\s+[\w.]+\s*$
      | (?:create|drop|alter)\s+(?:or\s+replace\s+)?(?:unique\s+)?
        (?:schema|table|index|function|procedure|role|database|type|view|extension|trigger|sequence|domain)\b
    )""",
    re.IGNORECASE | re.VERBOSE | re.DOTALL,
)


def is_statement(text: str) -> bool:
    """Whether ``text`` reads as an SQL statement (see the module doc)."""
    return STATEMENT.match(text) is not None


def _prose(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings or other bare string statements."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }


def literals(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, text) of every string literal of ``tree`` but its prose: an
    f-string once as a whole (fields as ``{}``) and once per literal part."""
    prose = _prose(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            yield node.lineno, node.value
        elif isinstance(node, ast.JoinedStr):
            parts = (v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            yield node.lineno, "".join(str(p) for p in parts)


def statements(path: Path) -> list[tuple[int, str]]:
    """(line, first 80 characters) of each SQL statement written in the module at ``path``,
    one per line (an f-string's whole text rather than its first part)."""
    found: dict[int, str] = {}
    for line, text in literals(ast.parse(path.read_text(), str(path))):
        if is_statement(text) and len(text) > len(found.get(line, "")):
            found[line] = text
    return sorted((line, text.strip()[:80]) for line, text in found.items())


def modules() -> list[Path]:
    return sorted(PACKAGE_DIR.rglob("*.py"))


def _name(path: Path) -> str:
    return path.relative_to(PACKAGE_DIR).as_posix()


@pytest.mark.parametrize(
    "text",
    [
        "select 1",
        "select conductor.version()",
        "select * from conductor.stats()",
        "select pg_catalog.set_config('statement_timeout', %(ms)s, true)",
        "SELECT id FROM conductor.tasks",
        "\n  select count(*) filter (where status = 'queued') as n from conductor.tasks",
        "with due as (select id from conductor.tasks) select * from due",
        "insert into conductor_registry.changes (project) values (%s)",
        "update conductor.tasks set status = 'queued'",
        "delete from conductor.tasks where id = %s",
        "listen conductor_bus",
        "notify conductor, 'x'",
        "set local statement_timeout = {}",
        "reset role",
        "create database {}",
        "\ncreate schema if not exists conductor_registry;",
    ],
)
def test_recognises_a_statement(text: str) -> None:
    assert is_statement(text)


@pytest.mark.parametrize(
    "text",
    [
        "select",
        "show",
        "listen",
        "delete old finished tasks with their attempts and steps (admin)",
        "delete tasks finished more than this long ago, e.g. 7d",
        "do not run the scheduler (tick() under the leader lease) in this process",
        "Call conductor.prune() until it returns less than a batch",
        "update the declared schedules at start",
        "set the fake clock",
        "with --pooler transaction, where polling is how new tasks are found",
        "create or replace the schedules declared in code",
        "<select name=status>",
    ],
)
def test_tells_prose_from_a_statement(text: str) -> None:
    assert not is_statement(text)


def test_skips_docstrings() -> None:
    tree = ast.parse('"""select * from conductor.tasks"""\ndef f():\n    "select 1"\n    return "select 2"\n')
    assert [text for _, text in literals(tree)] == ["select 2"]


def test_every_statement_lives_in_queries() -> None:
    """Name each statement outside queries.py (module:line) so it can be moved there."""
    assert statements(PACKAGE_DIR / HOME), "the detector finds nothing in queries.py itself"
    strays = [
        f"{_name(path)}:{line}: {text!r}"
        for path in modules()
        if _name(path) != HOME
        for line, text in statements(path)
    ]
    assert not strays, "SQL statements outside pyconductor/queries.py (move them there):\n" + "\n".join(strays)
