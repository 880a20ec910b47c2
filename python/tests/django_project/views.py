"""The views a shop would have: an order and its fulfilment task in one transaction."""

from __future__ import annotations

from django.db import transaction
from django.http import HttpRequest, JsonResponse

from django_project.shop.models import Order
from django_project.shop.tasks import fulfil, trace_hop


def create_order(request: HttpRequest) -> JsonResponse:
    """POST item=...: create the order and enqueue its fulfilment, together;
    fail=1 raises after both (the payment was declined): neither is kept."""
    with transaction.atomic():
        order = Order.objects.create(item=request.POST["item"])
        result = fulfil.enqueue(order.id)
        if request.POST.get("fail"):
            raise RuntimeError("payment declined")
    return JsonResponse({"order": order.id, "task": result.id, "status": str(result.status)})


async def create_order_async(request: HttpRequest) -> JsonResponse:
    """The same through the async API, in an async view: aenqueue, aget_result, arefresh."""
    order = await Order.objects.acreate(item=request.POST["item"])
    result = await fulfil.aenqueue(order.id)
    fetched = await fulfil.aget_result(result.id)
    await result.arefresh()
    return JsonResponse({"order": order.id, "task": result.id, "status": str(result.status),
                         "fetched": fetched.id})  # fmt: skip


def task_status(request: HttpRequest, result_id: str) -> JsonResponse:
    """The fulfilment task's state, through the framework's API."""
    result = fulfil.get_result(result_id)
    body = {"id": result.id, "status": str(result.status), "attempts": result.attempts}
    if result.is_finished and str(result.status) == "SUCCESSFUL":
        body["return_value"] = result.return_value
    return JsonResponse(body)


def traced_hop(request: HttpRequest) -> JsonResponse:
    """POST label=...: enqueue the trace test's first hop (python/tests/test_tracing.py)."""
    result = trace_hop.enqueue(request.POST["label"])
    return JsonResponse({"task": result.id})
