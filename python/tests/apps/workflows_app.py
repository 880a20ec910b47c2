"""The app of test_workflows_processes: ``pyconductor worker --app apps.workflows_app:app``.

Side table (created by the test):
  effects (task_id, step, pid, at)   one row per execution of a step's body

Each handler thread has its own autocommit connection, so a row is committed
before the handler goes on.

Kinds:
  five_effects {}               five ctx.step calls 's1'..'s5'; each body records
                                itself in effects; returns the steps' numbers
  answers {}                    waits for update 'ask', replies {"answer": payload * 2},
                                returns what it replied
  awaits_approval {"event": e}  publishes {"stage": "awaiting approval"}, waits for
                                event e, publishes {"stage": "approved", "by": ...}
                                and returns the event's payload
"""

from __future__ import annotations

import os
import threading
from typing import Any

import psycopg

from pyconductor import Conductor, TaskContext

app = Conductor(os.environ["CONDUCTOR_DSN"])
_local = threading.local()


def _conn() -> psycopg.Connection[Any]:
    conn = getattr(_local, "conn", None)
    if conn is None or conn.closed:
        conn = _local.conn = psycopg.connect(app.dsn, autocommit=True, connect_timeout=5)
    return conn


@app.task("five_effects")
def five_effects(payload: dict[str, Any], ctx: TaskContext) -> list[int]:
    def body(n: int) -> int:
        _conn().execute("insert into effects (task_id, step, pid) values (%s, %s, %s)", (ctx.task_id, n, os.getpid()))
        return n

    return [ctx.step(f"s{n}", lambda n=n: body(n)) for n in range(1, 6)]


@app.task("awaits_approval")
def awaits_approval(payload: dict[str, Any], ctx: TaskContext) -> Any:
    ctx.publish_state({"stage": "awaiting approval"})
    approval = ctx.wait_for_event(payload["event"])
    ctx.publish_state({"stage": "approved", "by": approval.get("by")})
    return approval


@app.task("answers")
def answers(payload: dict[str, Any], ctx: TaskContext) -> Any:
    update = ctx.wait_for_update("ask")
    return ctx.reply(update, {"answer": update.payload * 2})
