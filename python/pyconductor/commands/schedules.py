"""``scheduler`` (the scheduler alone) and ``schedules`` (list them; ``schedules
run NAME`` fires one now)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pyconductor import queries
from pyconductor.cliutil import fail, resolve_dsn
from pyconductor.commands.connect import command
from pyconductor.logs import setup_logging

__all__ = ["SCHEDULE_COLUMNS", "run_scheduler", "run_schedules"]


def run_scheduler(args: argparse.Namespace) -> int:
    import signal
    import threading

    from pyconductor.scheduler import Scheduler

    setup_logging(args.log_level, args.log_format)
    dsn = resolve_dsn(args)
    if not dsn:
        return fail("no database given: pass --dsn (or set CONDUCTOR_DSN / DATABASE_URL)")
    if args.tick_interval <= 0:
        return fail("--tick-interval must be positive")
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    from pyconductor.link import DirectConnectionNeeded

    try:
        scheduler = Scheduler(dsn, tick_interval=args.tick_interval,
                              use_leader_lock=False if args.no_leader_lock else None, pooler=args.pooler)  # fmt: skip
    except (ValueError, DirectConnectionNeeded) as exc:
        return fail(str(exc))
    scheduler.start()
    while not done.wait(0.5):
        pass
    scheduler.stop()
    return 0


SCHEDULE_COLUMNS = ("name", "cron", "timezone", "kind", "queue", "enabled", "next_due_at", "last_due_at",
                    "declared_by", "last_error")  # fmt: skip


def _cell(value: object, width: int = 60) -> str:
    text = "-" if value is None else " ".join(str(value).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def run_schedules(args: argparse.Namespace) -> int:
    import json

    import psycopg
    from psycopg.rows import dict_row

    from pyconductor.dsn import redact_dsn

    if args.action:
        return _run_schedules_action(args)
    dsn = resolve_dsn(args)
    if not dsn:
        return fail("no database given: pass --dsn (or set CONDUCTOR_DSN / DATABASE_URL)")
    try:
        with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
            rows = conn.execute(queries.LIST_SCHEDULES).fetchall()
    except psycopg.Error as exc:
        return fail(f"cannot list schedules: {redact_dsn(str(exc))}")
    if args.json:
        print(json.dumps(rows, default=str, indent=2))
        return 0
    table = [[_cell(r[c]) for c in SCHEDULE_COLUMNS] for r in rows]
    header = [c.upper() for c in SCHEDULE_COLUMNS]
    widths = [max(len(x) for x in col) for col in zip(header, *table, strict=True)]
    for line in [header, *table]:
        print("  ".join(x.ljust(w) for x, w in zip(line, widths, strict=True)).rstrip())
    return 0


def _run_schedules_action(args: argparse.Namespace) -> int:
    """``schedules run NAME``: one task now (conductor.fire_schedule; admin)."""
    if len(args.action) != 2 or args.action[0] != "run":
        return fail(f"expected `schedules` or `schedules run NAME`, got `schedules {' '.join(args.action)}`")
    args.name = args.action[1]
    return command(_fire_schedule)(args)


def _fire_schedule(args: argparse.Namespace, conn: Any) -> int:
    task_id = conn.execute(queries.FIRE_SCHEDULE, {"name": args.name}).fetchone()["task_id"]
    print(f"schedule {args.name} fired now as task {task_id} (its next due time is unchanged)", file=sys.stderr)
    print(task_id)
    return 0
