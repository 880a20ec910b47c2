"""What the command line's modules share: the error line and where the DSN
comes from. :mod:`pyconductor.cli` (the parsers) and :mod:`pyconductor.commands`
(what each command does) both import it, and it imports neither.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["default_dsn", "fail", "resolve_dsn"]


def fail(message: str) -> int:
    """Print ``pyconductor: error: message`` on stderr; returns the exit code 1."""
    print(f"pyconductor: error: {message}", file=sys.stderr)
    return 1


def default_dsn() -> str | None:
    """The URL of the running development cluster, or None."""
    from pyconductor.dev.devdb import DevDB

    db = DevDB()
    return db.url() if db.running else None


def resolve_dsn(args: argparse.Namespace) -> str | None:
    """``--dsn`` (or its environment variables), else the running devdb's URL, else None."""
    if args.dsn:
        return str(args.dsn)
    try:
        from pyconductor.dev.devdb import DevDBError

        try:
            return default_dsn()
        except DevDBError:
            return None
    except Exception:  # noqa: BLE001 - no devdb: the caller reports "no database"
        return None
