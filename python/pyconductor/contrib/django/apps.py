"""The Django app that carries the ``manage.py conductor_*`` commands."""

from __future__ import annotations

from django.apps import AppConfig


class ConductorConfig(AppConfig):
    name = "pyconductor.contrib.django"
    label = "pyconductor"
    verbose_name = "Conductor"
