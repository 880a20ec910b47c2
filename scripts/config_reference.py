#!/usr/bin/env python3
"""Write docs/reference/configuration.md: every flag, environment variable and setting.

Three parts, none written by hand, so the page cannot drift from the code: a
test (python/tests/test_docs.py) regenerates it and compares.

- Every ``pyconductor`` command's flags, read from the argument parser
  (``pyconductor.cli.build_parser``, built with no ``CONDUCTOR_*`` variable set
  so the defaults are the code's): the flag, the environment variable that
  sets it (the ``[env ...]`` each help ends with), the default and the help.
- The environment variables read outside the flags (OTHER_VARIABLES below);
  a check fails when the package reads a ``CONDUCTOR_*`` name that neither
  part lists.
- ``conductor.settings``, read from a deployed schema: each column, its type,
  default and comment (only an admin changes them).

    .venv/bin/python scripts/config_reference.py            # write (make docs-reference)
    .venv/bin/python scripts/config_reference.py --check    # exit 1 when the file is stale
    ... --dsn postgresql://...                               # read this migrated database
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generated import REPO, arguments, migrated_database, python_path, write_or_check

OUTPUT = REPO / "docs" / "reference" / "configuration.md"
PACKAGE = REPO / "python" / "pyconductor"

# Variables the package reads that are not a flag's (name, what it does).
OTHER_VARIABLES = [
    ("CONDUCTOR_WORKER_MAX_INFLIGHT", ("the default concurrency of a worker (`Worker(concurrency=)`, "
     "`--concurrency`): 32 when unset")),
    ("CONDUCTOR_POOLER", ("`transaction` when connections go through a transaction-mode pooler (pgbouncer): "
     "the client prepares no statement, and a worker keeps no session state and polls instead of listening "
     "(also the worker's `--pooler`)")),
    ("CONDUCTOR_ALLOWED_HOSTS", ("more names the dashboard and a worker's HTTP endpoints answer to in the "
     "Host header, comma-separated (also `--allowed-host`)")),
    ("CONDUCTOR_DEVDB_DIR", "where `pyconductor devdb` keeps its cluster (default `.devdb` in the checkout)"),
    ("CONDUCTOR_DEVDB_SETTINGS", ("server settings for the development and test clusters, "
     "`name=value,name=value`")),
    ("CONDUCTOR_DEVDB_URL", ("written, not read: `eval \"$(pyconductor devdb env)\"` exports the development "
     "database's URL with the libpq variables, for your own tools")),
    ("CONDUCTOR_PG_BINDIR", ("the directory of the server binaries (`initdb`, `pg_ctl`) the development and "
     "test clusters use (default: `pg_config --bindir`, the newest /usr/lib/postgresql/*/bin, `initdb` on "
     "PATH, else the `embedded` extra's)")),
]  # fmt: skip

ENV_IN_HELP = re.compile(r"\s*\[env ([^\]]+)\]\s*$")


@contextmanager
def _clean_environment() -> Iterator[None]:
    """No CONDUCTOR_* or DATABASE_URL while the parser is built: its defaults are the code's."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("CONDUCTOR_") or k == "DATABASE_URL"}
    for k in saved:
        del os.environ[k]
    try:
        yield
    finally:
        os.environ.update(saved)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(action: argparse.Action) -> str:
    value = action.default
    if value is None or value is argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
        return ""
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"`{value}`"


def commands() -> list[tuple[str, str, list[argparse.Action]]]:
    """(command, its help, its flags) for every command, in the order ``--help`` lists them."""
    python_path()
    from pyconductor.cli import build_parser

    with _clean_environment():
        parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help or "" for c in sub._choices_actions}
    out = [("(global)", "flags of every command", [a for a in parser._actions if a.option_strings])]
    for name, p in sub.choices.items():
        flags = [a for a in p._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]
        out.append((name, helps.get(name, ""), flags))
    return out


def settings(dsn: str) -> list[tuple[str, str, str, str]]:
    with psycopg.connect(dsn) as conn:
        return [(str(r[0]), str(r[1]), str(r[2] or ""), str(r[3] or "")) for r in conn.execute(
            "select a.attname, format_type(a.atttypid, a.atttypmod), pg_get_expr(d.adbin, d.adrelid),"
            " col_description(a.attrelid, a.attnum)"
            " from pg_attribute a left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum"
            " where a.attrelid = 'conductor.settings'::regclass and a.attnum > 0 and not a.attisdropped"
            " and a.attname <> 'one' order by a.attnum")]  # fmt: skip


def render(dsn: str) -> tuple[str, set[str]]:
    """The page, and the variables it names."""
    named: set[str] = set()
    out = [
        "# Configuration reference",
        "",
        "Generated by `scripts/config_reference.py` (`make docs-reference`); a test fails when it is stale.",
        "A flag's environment variable sets its default; the flag wins. Every command also takes `-h`/`--help`.",
        "",
        "## Commands and their flags",
        "",
    ]
    for name, summary, actions in commands():
        out += [f"### `pyconductor {name}`" if name != "(global)" else "### Every command", ""]
        if summary:
            out += [_cell(summary[:1].upper() + summary[1:]) + ".", ""]
        out += ["| flag | environment | default | what |", "|---|---|---|---|"]
        for a in actions:
            text = a.help if isinstance(a.help, str) else ""
            found = ENV_IN_HELP.search(text)
            env = found.group(1) if found else ""
            named.update(re.findall(r"CONDUCTOR_[A-Z0-9_]+|DATABASE_URL", env))
            text = ENV_IN_HELP.sub("", text).replace("%(default)s", str(a.default))
            flags = ", ".join(f"`{f}`" for f in a.option_strings)
            names, _, note = env.partition(", ")  # e.g. "CONDUCTOR_ALLOWED_HOSTS, comma-separated"
            env_cell = " or ".join(f"`{e.strip()}`" for e in names.split(" or ")) if names else ""
            env_cell += f" ({note})" if note else ""
            out.append(f"| {flags} | {env_cell} | {_default(a)} | {_cell(text)} |")
        out.append("")
    out += ["## Other environment variables", "", "| variable | what |", "|---|---|"]
    for name, what in OTHER_VARIABLES:
        named.add(name)
        out.append(f"| `{name}` | {_cell(what)} |")
    out += [
        "",
        "## `conductor.settings`",
        "",
        "One row, changed only by a member of `conductor_admin`",
        "(`update conductor.settings set ... where one`); every role may read it.",
        "",
        "| setting | type | default | what |",
        "|---|---|---|---|",
    ]
    out += [f"| `{n}` | {t} | `{d}` | {_cell(c)} |" for n, t, d, c in settings(dsn)]
    return "\n".join(out) + "\n", named


def read_by_package() -> set[str]:
    """Every CONDUCTOR_* name the package's source mentions."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        names.update(re.findall(r"\bCONDUCTOR_[A-Z0-9_]+\b", path.read_text()))
    return names


def problems(named: set[str]) -> list[str]:
    missing = sorted(read_by_package() - named)
    return [f"{name} is read by the package but neither a flag's variable nor in OTHER_VARIABLES" for name in missing]


def generate(dsn: str) -> tuple[str, list[str]]:
    page, named = render(dsn)
    return page, problems(named)


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(__doc__, OUTPUT, argv)
    if args.dsn:
        page, found = generate(args.dsn)
    else:
        with migrated_database("configuration") as (url, _):
            page, found = generate(url)
    rc = write_or_check(args.output, page, args.check)
    for problem in found:
        print(f"error: {problem}", file=sys.stderr)
        rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
