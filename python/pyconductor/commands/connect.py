"""The one short connection an operator's command runs on, and how its errors read.

:func:`command` wraps ``run(args, conn)``: it connects to the DSN the flags name
(or the running devdb), maps Conductor's SQLSTATEs to its errors, and turns any
failure into one line on stderr and an exit code.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from pyconductor.cliutil import fail

__all__ = ["Unreachable", "command"]


def _one_line(exc: BaseException) -> str:
    """The error on one line, without a password it may quote."""
    from pyconductor.dsn import redact_dsn

    return redact_dsn(" ".join(str(exc).split()))


class Unreachable(Exception):
    """The database could not be reached (or no DSN was given)."""


@contextmanager
def _connect(args: argparse.Namespace) -> Iterator[Any]:
    import psycopg
    from psycopg.rows import dict_row

    from pyconductor.cliutil import resolve_dsn
    from pyconductor.wire import load_infinite_times

    dsn = resolve_dsn(args)
    if not dsn:
        raise Unreachable("no database given: pass --dsn (or set CONDUCTOR_DSN / DATABASE_URL), "
                          "or start the development cluster with `pyconductor devdb start`")  # fmt: skip
    try:
        conn = psycopg.connect(dsn, autocommit=True, row_factory=dict_row, connect_timeout=10,
                               application_name=f"pyconductor {args.command}")  # fmt: skip
    except psycopg.OperationalError as exc:
        raise Unreachable(f"cannot connect to the database: {_one_line(exc)}") from exc
    load_infinite_times(conn)
    with conn:
        yield conn


def command(
    run: Callable[[argparse.Namespace, Any], int], unreachable_code: int = 1
) -> Callable[[argparse.Namespace], int]:
    """Wrap ``run(args, conn)``: connect, map Conductor's errors, one clear line on failure."""

    def handler(args: argparse.Namespace) -> int:
        import psycopg

        from pyconductor.errors import ConductorError, mapped_errors

        try:
            with _connect(args) as conn, mapped_errors():
                return run(args, conn)
        except Unreachable as exc:
            fail(str(exc))
            return unreachable_code
        except ConductorError as exc:
            return fail(f"{exc} [{exc.sqlstate}]" if exc.sqlstate else str(exc))
        except psycopg.OperationalError as exc:
            fail(f"lost the database: {_one_line(exc)}")
            return unreachable_code
        except psycopg.Error as exc:
            hint = (
                " (is the database migrated? `pyconductor migrate`)"
                if exc.sqlstate in ("42883", "3F000", "42P01")
                else ""
            )
            return fail(f"{_one_line(exc)}{hint}")

    return handler
