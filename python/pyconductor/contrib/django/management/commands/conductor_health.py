"""``manage.py conductor_health``: one line, exit 0 when healthy, 1 when not."""

from __future__ import annotations

import sys
from datetime import timedelta
from typing import Any

import psycopg
from django.core.management.base import BaseCommand, CommandError, CommandParser
from psycopg.rows import dict_row

from pyconductor import queries
from pyconductor.contrib.django.commands import add_target_arguments, backend, duration, target_dsn
from pyconductor.dsn import redact_dsn
from pyconductor.durations import format_duration
from pyconductor.migrate import applied_changes, status
from pyconductor.schema import SCHEMA_VERSION, schema_version


class Command(BaseCommand):
    help = ("Check Conductor from Django's side and print one line: the conductor schema is deployed and "
            "current, a live worker serves the backend's queues, no cron schedule is overdue. Exit 0 when "
            "all hold, 1 (with the reasons) when one does not or the database cannot be reached.")  # fmt: skip
    requires_system_checks: tuple[str, ...] = ()  # a probe: one line, whatever else is misconfigured

    def add_arguments(self, parser: CommandParser) -> None:
        add_target_arguments(parser)
        parser.add_argument("--seen-within", type=duration, default=timedelta(seconds=30),
                            help="a worker is live when seen this recently "
                                 "(default: 30s, three heartbeats)")  # fmt: skip
        parser.add_argument("--schedule-grace", type=duration, default=timedelta(minutes=1),
                            help="a schedule is overdue this long after its due time (default: 1m)")  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        queues = self._queues(options)
        dsn = target_dsn(options)
        try:
            healthy, line = self._verdict(dsn, queues, options["seen_within"], options["schedule_grace"])
        except psycopg.Error as exc:
            healthy, line = False, "unhealthy: " + redact_dsn(" ".join(str(exc).split()))
        self.stdout.write(line)
        if not healthy:
            sys.exit(1)

    @staticmethod
    def _queues(options: dict[str, Any]) -> list[str] | None:
        """The backend's queues (None: any), when TASKS has the backend."""
        try:
            return sorted(backend(options["backend"]).queues) or None
        except CommandError:
            if options["backend"] != "default":
                raise
            return None

    @staticmethod
    def _verdict(dsn: str, queues: list[str] | None, seen_within: timedelta,
                 grace: timedelta) -> tuple[bool, str]:  # fmt: skip
        with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
            found = schema_version(conn)
            if found is None:
                return (
                    False,
                    f"unhealthy: no conductor schema in database {conn.info.dbname!r} (manage.py conductor_migrate)",
                )
            if found != SCHEMA_VERSION:
                return (
                    False,
                    (
                        f"unhealthy: conductor schema {found}, this pyconductor needs {SCHEMA_VERSION} "
                        "(manage.py conductor_migrate)"
                    ),
                )
            problems: list[str] = []
            good: list[str] = []
            if applied_changes(conn):  # deployed by pyconductor migrate: its changes are known one by one
                pending = status(dsn).pending
                if pending:
                    problems.append(f"{len(pending)} schema change(s) pending (manage.py conductor_migrate)")
            if not problems:
                good.append(f"schema {found} current")
            cur = conn.cursor(row_factory=dict_row)
            workers = cur.execute(queries.LIVE_WORKERS, {"seen_within": seen_within}).fetchall()
            serving = [w for w in workers if "worker" in (w["roles"] or [])
                       and (queues is None or w["queues"] is None or set(w["queues"]) & set(queues))]  # fmt: skip
            where = f" for queues {','.join(queues)}" if queues else ""
            if serving:
                good.append(f"{len(serving)} live worker(s){where}")
            else:
                problems.append(f"no live worker{where} (none seen within {format_duration(seen_within)})")
            overdue = cur.execute(queries.OVERDUE_SCHEDULES, {"grace": grace}).fetchall()
            if overdue:
                names = ", ".join(f"{s['name']} ({format_duration(s['overdue'])} late)" for s in overdue[:5])
                problems.append(f"{len(overdue)} schedule(s) overdue: {names}")
            else:
                good.append("no overdue schedule")
        if problems:
            return False, "unhealthy: " + "; ".join(problems)
        return True, "ok: " + "; ".join(good)
