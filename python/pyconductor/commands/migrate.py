"""``migrate``: deploy or upgrade the schema (:mod:`pyconductor.migrate`), or with
``--check`` say whether it is up to date."""

from __future__ import annotations

import argparse
import sys

from pyconductor.cliutil import default_dsn, fail

__all__ = ["MIGRATE_DRIFTED", "MIGRATE_PENDING", "run_migrate"]


# Exit codes of `pyconductor migrate --check`, beside 0 (up to date) and 1 (could not check).
MIGRATE_PENDING = 3
MIGRATE_DRIFTED = 4


def run_migrate(args: argparse.Namespace) -> int:
    from pyconductor.dev.devdb import DevDBError
    from pyconductor.dsn import redact_dsn
    from pyconductor.migrate import DriftError, MigrateError, migrate, status

    dsn = args.dsn
    if not dsn:
        try:
            dsn = default_dsn()
        except DevDBError:
            dsn = None
        if not dsn:
            return fail(
                "no database given: pass --dsn (or set CONDUCTOR_DSN / DATABASE_URL), "
                "or start the development cluster with `pyconductor devdb start`"
            )
    try:
        if args.check:
            state = status(dsn, plan_path=args.plan, sql_dir=args.sql_dir, to=args.to)
            for change in state.drifted:
                print(f"  ! {change.key}: deployed script differs from the plan's")
            for change in state.pending:
                print(f"  + {change.key}: pending")
            if state.drifted:
                print(f"drifted: {len(state.drifted)} change(s); `pyconductor migrate` will refuse")
                return MIGRATE_DRIFTED
            if state.pending:
                print(f"pending: {len(state.pending)} change(s); run `pyconductor migrate`")
                return MIGRATE_PENDING
            print("up to date")
            return 0
        migrate(dsn, plan_path=args.plan, sql_dir=args.sql_dir, to=args.to, lock_wait=args.lock_wait,
                progress=lambda line: print(line, flush=True))  # fmt: skip
    except DriftError as exc:
        for change in exc.drifted:
            print(f"  ! {change.key}: deployed script differs from the plan's", file=sys.stderr)
        fail(str(exc))
        return MIGRATE_DRIFTED
    except MigrateError as exc:
        return fail(redact_dsn(str(exc)))
    except Exception as exc:  # connection errors and the like: one clear line, no password
        if exc.__class__.__module__.startswith("psycopg"):
            return fail(redact_dsn(f"cannot migrate {dsn}: {' '.join(str(exc).split())}"))
        raise
    return 0
