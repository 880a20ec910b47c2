"""The handlers of the lifecycle scenario for the Python worker:
``pyconductor worker --app lifecycle.app:app`` (run from python/tests).

scenario.json says what each kind does; workers/node/scenario.js is the Node
twin. Side effects go to the table lifecycle_log (the runner creates it), on
an autocommit connection per handler thread, so a row is committed before the
handler goes on.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import psycopg

from pyconductor import Conductor, TaskCancelled, TaskContext

app = Conductor(os.environ["CONDUCTOR_DSN"])
_local = threading.local()


def _record(ctx: TaskContext, event: str, detail: str | None = None) -> None:
    conn = getattr(_local, "conn", None)
    if conn is None or conn.closed:
        conn = _local.conn = psycopg.connect(app.dsn, autocommit=True, connect_timeout=5, prepare_threshold=None)
    conn.execute("insert into lifecycle_log (task_id, event, detail, pid) values (%s, %s, %s, %s)",
                 (ctx.task_id, event, detail, os.getpid()))  # fmt: skip


@app.task("lifecycle.echo")
def echo(payload: dict[str, Any]) -> dict[str, Any]:
    return {"echo": payload["value"]}


@app.task("lifecycle.flaky")
def flaky(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    if ctx.attempt <= payload["fail_times"]:
        raise RuntimeError(f"flaky: attempt {ctx.attempt} fails (fail_times {payload['fail_times']})")
    return {"attempt": ctx.attempt}


@app.task("lifecycle.doomed")
def doomed(payload: dict[str, Any]) -> None:
    raise RuntimeError(payload["message"])


@app.task("lifecycle.wait")
def wait(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    _record(ctx, "started")
    if not ctx.wait_cancelled(payload["seconds"]):
        return {"cancelled": False}
    _record(ctx, "observed", ctx.cancel_reason)
    raise TaskCancelled(f"task {ctx.task_id}: {ctx.cancel_reason}")


@app.task("lifecycle.parent")
def parent(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    for value in payload["values"]:
        # an hour to start (expires_in): a spawn option both languages pass to SQL
        ctx.spawn("lifecycle.echo", {"value": value}, expires_in=3600)
    children = ctx.wait_for_children("all")
    ctx.sleep(payload["sleep"])
    return {"children": [{"status": c["status"], "result": c["result"]} for c in children]}


@app.task("lifecycle.durable")
def durable(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    def body(name: str, index: int) -> dict[str, Any]:
        _record(ctx, "step", str(index))
        if index == payload["block_at"] and ctx.recoveries == 0:
            time.sleep(60)  # the test kills this process meanwhile
        return {"name": name, "index": index}

    steps = [ctx.step(name, lambda name=name, i=i: body(name, i)) for i, name in enumerate(payload["steps"], 1)]
    return {"steps": steps}
