"""``manage.py conductor_prune --older-than 7d``: delete old finished tasks (conductor.prune)."""

from __future__ import annotations

from typing import Any

import psycopg
from django.core.management.base import BaseCommand, CommandError, CommandParser

from pyconductor import queries
from pyconductor.contrib.django.commands import add_target_arguments, duration, target_dsn
from pyconductor.dsn import redact_dsn
from pyconductor.durations import format_duration
from pyconductor.errors import ConductorError, mapped_errors


class Command(BaseCommand):
    help = ("Call conductor.prune() until it deletes less than a batch: succeeded and cancelled tasks (with "
            "--include-failed also failed, dead and timed out ones) finished more than --older-than ago, with "
            "their attempts and steps; runs with an unfinished task are kept. Each call is its own short "
            "transaction. Needs conductor_admin.")  # fmt: skip

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--older-than", type=duration, required=True,
                            help="finished more than this long ago: 7d, 12h, 30m, 2w, 1h30m")  # fmt: skip
        parser.add_argument("--include-failed", action="store_true", help="prune failed, dead and timed out tasks too")
        parser.add_argument("--batch", type=int, default=10000, help="tasks per call (default: %(default)s)")
        add_target_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch"] < 1:
            raise CommandError(f"--batch must be 1 or more, got {options['batch']}")
        params = {"older_than": options["older_than"], "include_failed": options["include_failed"],
                  "batch": options["batch"]}  # fmt: skip
        total = 0
        try:
            with psycopg.connect(target_dsn(options), autocommit=True) as conn, mapped_errors():
                while True:
                    row = conn.execute(queries.PRUNE, params).fetchone()
                    pruned = int(row[0]) if row else 0
                    total += pruned
                    if pruned < options["batch"]:
                        break
                    self.stderr.write(f"pruned {total} so far")
        except ConductorError as exc:
            raise CommandError(f"{exc} [{exc.sqlstate}]") from exc
        except psycopg.Error as exc:
            raise CommandError(redact_dsn(" ".join(str(exc).split()))) from exc
        what = "finished" if options["include_failed"] else "succeeded or cancelled"
        self.stdout.write(f"pruned {total} {what} task(s) and unawaited event(s) older than "
                          f"{format_duration(options['older_than'])}")  # fmt: skip
