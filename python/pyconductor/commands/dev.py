"""The development tools' commands: ``devdb`` (a private cluster,
:mod:`pyconductor.dev.devdb`) and ``demo`` (a mixed workload,
:mod:`pyconductor.dev.demo`)."""

from __future__ import annotations

import argparse
import os
import sys

from pyconductor.cliutil import fail, resolve_dsn

__all__ = ["parse_setting", "run_demo", "run_devdb"]


def parse_setting(text: str) -> tuple[str, str]:
    """A devdb server setting, ``name=value`` (``-c``, $CONDUCTOR_DEVDB_SETTINGS)."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected name=value, got {text!r}")
    return name.strip(), value.strip()


def run_devdb(args: argparse.Namespace) -> int:
    from pyconductor.dev.devdb import DevDB, DevDBError

    env_settings = [parse_setting(s) for s in os.environ.get("CONDUCTOR_DEVDB_SETTINGS", "").split(",") if s.strip()]
    db = DevDB(args.datadir, settings=dict(env_settings + (args.settings or [])))
    try:
        if args.action == "start":
            was_running = db.running
            url = db.start(args.dbname)
            if not was_running:
                print(f"started PostgreSQL in {db.datadir} (log {db.logfile})", file=sys.stderr)
            print(url)
        elif args.action == "stop":
            print("stopped" if db.stop() else f"not running: {db.datadir}", file=sys.stderr)
        elif args.action == "status":
            print(db.status())
            return 0 if db.running else 3
        elif args.action == "url":
            if not db.initialized:
                return fail(f"no development cluster in {db.datadir}; run `pyconductor devdb start`")
            print(db.url(args.dbname))
        elif args.action == "env":
            if not db.running:
                return fail(f"development cluster in {db.datadir} is not running")
            info = db.conninfo(args.dbname)
            for key, var in (("host", "PGHOST"), ("port", "PGPORT"), ("user", "PGUSER"), ("dbname", "PGDATABASE")):
                print(f"export {var}={info[key]}")
            print(f"export CONDUCTOR_DEVDB_URL={db.url(args.dbname)}")
    except DevDBError as exc:
        return fail(str(exc))
    return 0


def run_demo(args: argparse.Namespace) -> int:
    from pyconductor.dev import demo
    from pyconductor.dsn import redact_dsn
    from pyconductor.errors import DatabaseUnusable

    dsn = resolve_dsn(args)
    if not dsn:
        return fail(
            "no database given: pass --dsn (or set CONDUCTOR_DSN / DATABASE_URL), "
            "or start the development cluster with `make devdb`"
        )
    try:
        summary = demo.run_demo(dsn, args.tasks, concurrency=args.concurrency, rate=args.rate, seed=args.seed)
    except (RuntimeError, DatabaseUnusable) as exc:
        return fail(redact_dsn(str(exc)))
    except Exception as exc:
        if exc.__class__.__module__.startswith("psycopg"):
            return fail(f"demo failed on {redact_dsn(dsn)}: {redact_dsn(str(exc))} "
                         "(is the database migrated? `pyconductor migrate`)")  # fmt: skip
        raise
    print(summary.render())
    return 0 if summary.consistent else 1
