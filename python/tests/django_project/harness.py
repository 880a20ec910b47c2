"""The test project, run two ways.

In the tests' own process, without DJANGO_SETTINGS_MODULE: ``use(dsn)``
configures Django once (settings.configure + django.setup), points its
database at ``dsn`` on every later call (each test has a database of its
own), then applies the shop's migrations. Nothing happens at import, so
importing a test module changes nothing for the other tests.

As real processes: ``manage(dsn, *args)`` runs ``manage.py`` to completion,
``ManagedWorker`` starts ``manage.py conductor_worker`` and keeps its output.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO

import django
from django.conf import settings
from django.core.management import call_command
from django.db import connections

from django_project.config import settings_for


def use(dsn: str) -> None:
    values = settings_for(dsn)
    if not settings.configured:
        settings.configure(**values)
        django.setup()
    else:
        connections.close_all()
        connections["default"].settings_dict.update(values["DATABASES"]["default"])
    call_command("migrate", verbosity=0)


def close() -> None:
    connections.close_all()


# -- manage.py as a real process ---------------------------------------------------------

PROJECT = Path(__file__).resolve().parent
WORKER_APPNAME = "django-worker"  # the sessions a worker's task functions open (Django's)


def manage_env(dsn: str, application_name: str = "django-manage") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    return {**env, "CONDUCTOR_DJANGO_DSN": dsn, "CONDUCTOR_DJANGO_APPNAME": application_name,
            "PYTHONUNBUFFERED": "1"}  # fmt: skip


def manage(dsn: str, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """``python manage.py <args>`` against ``dsn``; the caller checks the return code."""
    return subprocess.run([sys.executable, str(PROJECT / "manage.py"), *args], env=manage_env(dsn),
                          capture_output=True, text=True, timeout=timeout, check=False)  # fmt: skip


class ManagedWorker:
    """``manage.py conductor_worker <args>``, its output in ``log``."""

    def __init__(self, dsn: str, log: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.log = log
        self._out: IO[bytes] = log.open("wb")
        self.proc = subprocess.Popen([sys.executable, str(PROJECT / "manage.py"), "conductor_worker", *args],
                                     env={**manage_env(dsn, WORKER_APPNAME), **(env or {})}, stdout=self._out,
                                     stderr=subprocess.STDOUT)  # fmt: skip

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def signal(self, sig: int = signal.SIGTERM) -> None:
        self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"worker did not exit in {timeout}s:\n{self.output()[-3000:]}") from None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._out.close()
