"""``manage.py conductor_migrate``: deploy or upgrade the conductor schema in Django's database."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from pyconductor.contrib.django.commands import add_target_arguments, target_dsn
from pyconductor.dsn import redact_dsn
from pyconductor.migrate import DriftError, MigrateError, migrate, status


class Command(BaseCommand):
    help = ("Apply the conductor schema's pending changes (pyconductor migrate) to the backend's Django "
            "database, or with --check only say what is pending. Needs a role that may create schemas "
            "and roles (the database owner or a superuser).")  # fmt: skip
    requires_system_checks: tuple[str, ...] = ()  # the schema it deploys is what the checks would miss

    def add_arguments(self, parser: CommandParser) -> None:
        add_target_arguments(parser)
        parser.add_argument("--check", action="store_true",
                            help="change nothing; exit 1 when changes are pending or drifted")  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        dsn = target_dsn(options)
        try:
            if options["check"]:
                state = status(dsn)
                for change in state.drifted:
                    self.stdout.write(f"  ! {change.key}: deployed script differs from the plan's")
                for change in state.pending:
                    self.stdout.write(f"  + {change.key}: pending")
                if state.drifted or state.pending:
                    raise CommandError(f"{len(state.pending)} pending, {len(state.drifted)} drifted: "
                                       "run manage.py conductor_migrate")  # fmt: skip
                self.stdout.write("up to date")
                return
            migrate(dsn, progress=self.stdout.write)
        except DriftError as exc:
            raise CommandError(str(exc)) from exc
        except MigrateError as exc:
            raise CommandError(redact_dsn(str(exc))) from exc
        except CommandError:
            raise
        except Exception as exc:  # a connection refused and the like: one clear line, no password
            if type(exc).__module__.startswith("psycopg"):
                raise CommandError(redact_dsn(f"cannot migrate: {' '.join(str(exc).split())}")) from exc
            raise
