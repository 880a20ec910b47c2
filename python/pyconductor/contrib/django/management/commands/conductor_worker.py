"""``manage.py conductor_worker``: run the project's Django tasks from Conductor."""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections

from pyconductor.client import Conductor
from pyconductor.contrib.django.commands import add_target_arguments, backend
from pyconductor.contrib.django.worker import build_app
from pyconductor.dsn import redact_dsn
from pyconductor.errors import ConductorError
from pyconductor.logs import TextFormatter
from pyconductor.serve import Node


def _exit_now(code: int) -> None:
    """End the process with ``code`` now, its log lines and output flushed."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _csv(text: str | None) -> list[str] | None:
    return [part.strip() for part in (text or "").split(",") if part.strip()] or None


class Command(BaseCommand):
    help = ("Run a Conductor worker for this project's Django tasks: it claims the tasks of the backend's "
            "queues (or --queues) and calls their functions, --concurrency at a time. SIGTERM or Ctrl-C "
            "stops claiming and lets running tasks finish within --shutdown-grace, then hands the rest "
            "back; a second signal exits at once (code 130).")  # fmt: skip

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--queues", default=None,
                            help="comma-separated queues (default: the backend's QUEUES; "
                                 "all when QUEUES is empty)")  # fmt: skip
        parser.add_argument("--concurrency", type=int, default=None,
                            help="tasks run at once, on threads "
                                 "(default: $CONDUCTOR_WORKER_MAX_INFLIGHT or 32)")  # fmt: skip
        add_target_arguments(parser)
        parser.add_argument("--dsn", default=None,
                            help="libpq DSN for the worker's own connections (default: the backend's "
                                 "OPTIONS['WORKER_DSN'], else its Django database)")  # fmt: skip
        parser.add_argument("--shutdown-grace", type=float, default=None,
                            help="seconds running tasks get to finish at a stop, inf to wait for every one "
                                 "(default: 30)")  # fmt: skip
        parser.add_argument("--worker-id", default=None, help="this worker's id (default: host-pid-random)")
        parser.add_argument("--no-scheduler", action="store_true",
                            help="do not fire Conductor's cron schedules from this process")  # fmt: skip
        parser.add_argument("--log-level", default="INFO",
                            help="level of the worker's log lines on stderr when LOGGING configures none "
                                 "(default: %(default)s)")  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        self._logging(options["log_level"])
        found = backend(options["backend"])
        if options["database"]:
            found.database = options["database"]
        if options["concurrency"] is not None and options["concurrency"] < 1:
            raise CommandError(f"--concurrency must be 1 or more, got {options['concurrency']}")
        worker_options: dict[str, Any] = {"concurrency": options["concurrency"]}
        if options["shutdown_grace"] is not None:
            worker_options["shutdown_grace"] = options["shutdown_grace"]
        if options["worker_id"]:
            worker_options["worker_id"] = options["worker_id"]
        roles = ["worker"] if options["no_scheduler"] else ["worker", "scheduler"]
        app: Conductor | None = None
        try:
            app, queues = build_app(found, _csv(options["queues"]), dsn=options["dsn"])
            # the same services as `pyconductor serve --role worker,scheduler`, started and stopped the same way
            node = Node(app, roles, worker_options={**worker_options, "queues": queues})
        except (ImproperlyConfigured, ValueError) as exc:
            if app is not None:
                app.close()
            raise CommandError(str(exc)) from exc
        # the worker's connections are its own; Django's, opened by the checks, are not needed
        connections.close_all()
        try:
            code = node.run()
        except ConductorError as exc:  # DatabaseUnusable, SchemaMismatch, options the database refuses
            raise CommandError(redact_dsn(str(exc))) from exc
        finally:
            app.close()
        if node.abandoned:
            # handlers still running in threads the interpreter would wait for; their tasks are released
            _exit_now(code)
        if not any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
            # Nothing is left to wait for: every task was reported or handed back, Django's connections are
            # closed. The atexit handlers run (an error reporter's flush, say), then the process ends without
            # the interpreter's teardown of every module, which took 0.1-0.8 s on a loaded machine, so an
            # idle worker exits within 0.5 s of SIGTERM (issue 27). A thread a task left running is waited
            # for, as Python does, by the ordinary exit below.
            atexit._run_exitfuncs()
            _exit_now(code)
        if code:
            sys.exit(code)

    @staticmethod
    def _logging(level: str) -> None:
        """Log lines on stderr unless Django's LOGGING already sends them somewhere."""
        if logging.getLogger().handlers:
            return
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(TextFormatter())
        for name in ("pyconductor", "django_tasks", "django.tasks"):
            logger = logging.getLogger(name)
            logger.addHandler(handler)
            logger.setLevel(level.upper())
            logger.propagate = False
