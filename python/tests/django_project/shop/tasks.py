"""The shop's tasks, written as any Django project writes them."""

from __future__ import annotations

import datetime
import os
import time
from typing import Any

try:  # Django 6
    from django.tasks import task  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # Django 5.2: the backport
    from django_tasks import task  # type: ignore[no-redef, unused-ignore]

from django_project.shop.models import Order


class OutOfStock(Exception):
    """A failure of the shop's own."""


@task()
def fulfil(order_id: int) -> dict[str, Any]:
    """Marks the order fulfilled: it reads the row its view created in the same transaction."""
    order = Order.objects.get(id=order_id)
    order.status = "fulfilled"
    order.save(update_fields=["status"])
    return {"order": order.id, "item": order.item}


@task(queue_name="emails", priority=10)
def send_receipt(to: str, *, lines: list[str] | None = None) -> str:
    return f"receipt to {to} ({len(lines or [])} lines)"


@task(queue_name="reports")
def record(label: str) -> int:
    """Writes an order named ``label``: its id says in which order the tasks ran."""
    return Order.objects.create(item=label, status="recorded").id


@task()
def out_of_stock(item: str) -> None:
    raise OutOfStock(f"no {item} left")


@task(takes_context=True)
def with_context(context: Any, tag: str) -> dict[str, Any]:
    """Fails its first attempt when tag is 'flaky' (a kind configured for retries runs it again)."""
    if tag == "flaky" and context.attempt == 1:
        raise RuntimeError("first attempt fails")
    return {"attempt": context.attempt, "id": context.task_result.id, "tag": tag,
            "status": str(context.task_result.status)}  # fmt: skip


@task()
async def ping(value: int) -> dict[str, int]:
    return {"pong": value}


@task()
def returns_a_date() -> Any:
    return datetime.date(2026, 12, 1)


@task(queue_name="reports")
def nap(seconds: float) -> str:
    """Runs for ``seconds``: a task a stopping worker has to hand back."""
    time.sleep(seconds)
    return "rested"


@task()
def trace_hop(label: str) -> int:
    """The trace test's first hop (python/tests/test_tracing.py): enqueues the
    pyconductor task otel.b (python/tests/apps/otel_app.py) on the queue only its
    worker serves, from inside this handler's span."""
    from pyconductor import Conductor

    with Conductor(os.environ["CONDUCTOR_DJANGO_DSN"]) as app:
        return app.enqueue("otel.b", {"label": label}, queue="otel-b")
