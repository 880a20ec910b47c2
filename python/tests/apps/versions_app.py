"""The apps of test_versioning_processes: one handler kind 'order', deployed as three codes.

``pyconductor worker --app apps.versions_app:v1`` (or ``:v2``, ``:v2_unsafe``). Each step's
body records itself in the side table ``step_runs (task_id, step, code, pid)`` (created by
the test), on the handler thread's own autocommit connection, before the handler goes on.

  v1         charge, reserve, wait for event 'paid-<task id>', ship
  v2         the safe deploy of a step inserted and a step renamed (docs/versioning.md):
             charge, fraud_check behind ctx.patched('fraud-check'), reserve renamed
             reserve_stock behind ctx.patched('reserve-stock'), the wait, ship
  v2_unsafe  the same change without the markers: charge, fraud_check, reserve_stock,
             the wait, ship
"""

from __future__ import annotations

import os
import threading
from typing import Any

import psycopg

from pyconductor import Conductor, TaskContext

DSN = os.environ["CONDUCTOR_DSN"]
v1 = Conductor(DSN)
v2 = Conductor(DSN)
v2_unsafe = Conductor(DSN)
_local = threading.local()


def _body(ctx: TaskContext, step: str, code: str) -> str:
    conn = getattr(_local, "conn", None)
    if conn is None or conn.closed:
        conn = _local.conn = psycopg.connect(DSN, autocommit=True, connect_timeout=5)
    conn.execute("insert into step_runs (task_id, step, code, pid) values (%s, %s, %s, %s)",
                 (ctx.task_id, step, code, os.getpid()))  # fmt: skip
    return f"{step} by {code}"


def _step(ctx: TaskContext, name: str, code: str) -> Any:
    return ctx.step(name, lambda: _body(ctx, name, code))


@v1.task("order")
def order_v1(payload: dict[str, Any], ctx: TaskContext) -> str:
    _step(ctx, "charge", "v1")
    _step(ctx, "reserve", "v1")
    ctx.wait_for_event(f"paid-{ctx.task_id}")
    return str(_step(ctx, "ship", "v1"))


@v2.task("order")
def order_v2(payload: dict[str, Any], ctx: TaskContext) -> str:
    _step(ctx, "charge", "v2")
    if ctx.patched("fraud-check"):
        _step(ctx, "fraud_check", "v2")
    _step(ctx, "reserve_stock" if ctx.patched("reserve-stock") else "reserve", "v2")
    ctx.wait_for_event(f"paid-{ctx.task_id}")
    return str(_step(ctx, "ship", "v2"))


@v2_unsafe.task("order")
def order_v2_unsafe(payload: dict[str, Any], ctx: TaskContext) -> str:
    _step(ctx, "charge", "v2")
    _step(ctx, "fraud_check", "v2")
    _step(ctx, "reserve_stock", "v2")
    ctx.wait_for_event(f"paid-{ctx.task_id}")
    return str(_step(ctx, "ship", "v2"))
