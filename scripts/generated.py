"""What the generators of checked-in files share (``make docs-reference``).

scripts/sql_reference.py (docs/reference/sql.md), scripts/config_reference.py
(docs/reference/configuration.md) and scripts/schema_dump.py
(sql/schema.dump.sql) each read a database migrated to the working tree's
sqitch.plan and write one file, or with ``--check`` only say whether it is
stale. The command line, the throwaway database and the write-or-check are
written here once.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REGENERATE = "make docs-reference"

__all__ = ["REGENERATE", "REPO", "arguments", "migrated_database", "python_path", "write_or_check"]


def python_path() -> None:
    """Make the working tree's pyconductor importable (the scripts run outside the package)."""
    if str(REPO / "python") not in sys.path:
        sys.path.insert(0, str(REPO / "python"))


def arguments(doc: str | None, output: Path, argv: Sequence[str] | None) -> argparse.Namespace:
    """``--dsn`` (a migrated database; default: a throwaway one), ``--check`` and ``--output``."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--dsn", help="a database migrated to the working tree's plan (default: a throwaway cluster)")
    parser.add_argument("--check", action="store_true", help=f"only compare with {output.relative_to(REPO)}")
    parser.add_argument("--output", type=Path, default=output)
    return parser.parse_args(argv)


@contextmanager
def migrated_database(dbname: str) -> Iterator[tuple[str, Path]]:
    """A throwaway cluster (pyconductor.dev.devdb) with database ``dbname`` migrated to the
    working tree's sqitch.plan: its URL and the cluster's bin directory; removed on exit."""
    python_path()
    from pyconductor.dev.devdb import throwaway_cluster
    from pyconductor.migrate import migrate

    with throwaway_cluster(dbname=dbname) as db:
        url = db.url(dbname)
        migrate(url, plan_path=REPO / "sqitch.plan", sql_dir=REPO / "sql", progress=lambda line: None)
        yield url, db.bindir


def write_or_check(output: Path, page: str, check: bool) -> int:
    """Write a generated page to output (when it differs), or with check only compare:
    1 (a diff on stderr) when the checked-in page is stale."""
    current = output.read_text() if output.exists() else ""
    if current == page:
        return 0
    if check:
        diff = difflib.unified_diff(current.splitlines(), page.splitlines(), "checked in", "generated",
                                    lineterm="", n=1)  # fmt: skip
        print("\n".join(list(diff)[:60]), file=sys.stderr)
        print(f"{output} is out of date: run {REGENERATE}", file=sys.stderr)
        return 1
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(page)
    print(f"wrote {output}", file=sys.stderr)
    return 0
