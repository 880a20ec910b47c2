"""Conductor for Django: a Tasks backend and ``manage.py`` commands.

    # settings.py
    INSTALLED_APPS = [..., "django_tasks",            # Django < 6 only: the backport
                      "pyconductor.contrib.django"]   # the manage.py commands
    TASKS = {"default": {"BACKEND": "pyconductor.contrib.django.ConductorBackend",
                         "QUEUES": ["default", "emails"]}}

    # shop/tasks.py
    from django.tasks import task     # Django 6; Django 5.2: from django_tasks import task

    @task(queue_name="emails", priority=10)
    def send_receipt(order_id):
        ...

    with transaction.atomic():
        order = Order.objects.create(...)
        result = send_receipt.enqueue(order.id)   # in the same transaction as the order
    send_receipt.get_result(result.id).status

Modules: :mod:`.backend` (the backend), :mod:`.worker` (what ``conductor_worker``
runs), :mod:`.options` (Conductor's options around an enqueue),
:mod:`.results` (statuses and errors), :mod:`.payload` (arguments),
:mod:`.kinds` (task paths), :mod:`.database` (Django's connections),
:mod:`.compat` (``django.tasks`` or the ``django_tasks`` backport). The
commands: ``conductor_worker``, ``conductor_migrate``, ``conductor_health``,
``conductor_prune``. See docs/django.md.
"""

from __future__ import annotations

from pyconductor.contrib.django.backend import ConductorBackend
from pyconductor.contrib.django.options import task_options

__all__ = ["ConductorBackend", "task_options"]
