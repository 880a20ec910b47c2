"""The Python worker of the trace test's second hop (python/tests/test_tracing.py):
``otel.b`` runs a durable step and spawns ``otel.c`` onto the queue only the Node
worker serves; ``otel.fails`` fails; ``otel.waits`` sleeps durably once (its first attempt
parks it). Spans are collected by
python/tests/otel_site/sitecustomize.py."""

from __future__ import annotations

import os
from typing import Any

from pyconductor import Conductor, TaskContext

app = Conductor(os.environ["CONDUCTOR_DSN"])


@app.task("otel.b", queue="otel-b")
def second_hop(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    n = ctx.step("count", lambda: len(payload["label"]))
    child = ctx.spawn("otel.c", {"n": n}, queue="otel-node")
    return {"n": n, "child": child}


@app.task("otel.fails", queue="otel-b")
def fails(payload: dict[str, Any], ctx: TaskContext) -> None:
    raise ValueError(f"python handler fails: {payload.get('why')}")


@app.task("otel.waits", queue="otel-b")
def waits(payload: dict[str, Any], ctx: TaskContext) -> str:
    ctx.sleep(0.2)
    return "woke"
