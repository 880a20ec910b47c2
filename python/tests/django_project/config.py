"""The project's settings for one database (settings.py and the harness both use it)."""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any

from psycopg.conninfo import conninfo_to_dict

QUEUES = ["default", "emails", "reports"]


def settings_for(dsn: str, application_name: str = "django_project") -> dict[str, Any]:
    info = conninfo_to_dict(dsn)
    backport = find_spec("django.tasks") is None  # Django < 6: the django-tasks backport is an app
    return {
        "SECRET_KEY": "not a secret: tests only",
        "DEBUG": False,
        "ALLOWED_HOSTS": ["testserver", "localhost"],
        "USE_TZ": True,
        "TIME_ZONE": "UTC",
        "ROOT_URLCONF": "django_project.urls",
        "MIDDLEWARE": [],
        "DEFAULT_AUTO_FIELD": "django.db.models.BigAutoField",
        "INSTALLED_APPS": [*(["django_tasks"] if backport else []), "pyconductor.contrib.django",
                           "django_project.shop"],  # fmt: skip
        "DATABASES": {
            "default": {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": info.get("dbname", ""),
                "USER": info.get("user", ""),
                "PASSWORD": info.get("password", ""),
                "HOST": info.get("host", ""),
                "PORT": info.get("port", ""),
                # names the sessions Django opens (the worker's own are "pyconductor ...")
                "OPTIONS": {"application_name": application_name},
            }
        },
        "TASKS": {
            "default": {
                "BACKEND": "pyconductor.contrib.django.ConductorBackend",
                "QUEUES": QUEUES,
                "OPTIONS": {"DATABASE": "default"},
            }
        },
    }
