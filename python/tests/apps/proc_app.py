"""The app the worker-process tests run: ``pyconductor worker --app apps.proc_app:app``.

Every handler records its execution in the side table ``executions`` (created
by the test) on a connection of its own thread, so the test can count how many
times each task really ran.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import psycopg

from pyconductor import Conductor, TaskContext

app = Conductor(os.environ["CONDUCTOR_DSN"])

_local = threading.local()


def _record(ctx: TaskContext) -> None:
    conn = getattr(_local, "conn", None)
    if conn is None or conn.closed:
        conn = _local.conn = psycopg.connect(app.dsn, autocommit=True)
    conn.execute(
        "insert into executions (task_id, attempt_id, pid) values (%s, %s, %s)",
        (ctx.task_id, ctx.attempt_id, os.getpid()),
    )


@app.task("record")
def record(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    _record(ctx)
    return {"n": payload["n"], "pid": os.getpid()}


@app.task("sleep")
def sleep(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    """Sleeps without looking at ctx.cancelled: only a release ends its claim early."""
    _record(ctx)
    time.sleep(payload["seconds"])
    return {"slept": payload["seconds"]}
