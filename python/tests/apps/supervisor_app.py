"""The app the supervisor tests run: ``pyconductor worker --app apps.supervisor_app:app --processes N``.

Every handler records its run in the side table ``executions`` (created by the
test) with the process id, so a test can tell which child ran what.
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


def _conn() -> psycopg.Connection[Any]:
    conn = getattr(_local, "conn", None)
    if conn is None or conn.closed:
        conn = _local.conn = psycopg.connect(app.dsn, autocommit=True)
    return conn


def _record(ctx: TaskContext) -> int:
    """Record this run; how many runs of the task there were before it."""
    row = _conn().execute(
        "with before as (select count(*) as n from executions where task_id = %(task)s)"
        " insert into executions (task_id, attempt_id, pid) select %(task)s, %(attempt)s, %(pid)s"
        " returning (select n from before)",
        {"task": ctx.task_id, "attempt": ctx.attempt_id, "pid": os.getpid()},
    ).fetchone()
    assert row is not None
    return int(row[0])


@app.task("record")
def record(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    _record(ctx)
    return {"pid": os.getpid()}


@app.task("sleep")
def sleep(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    """Sleeps without looking at ctx.cancelled."""
    _record(ctx)
    time.sleep(payload["seconds"])
    return {"pid": os.getpid()}


@app.task("block_once")
def block_once(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    """The first run blocks for an hour (its process is to be killed); a later one returns."""
    if _record(ctx) == 0:
        time.sleep(3600)
    return {"pid": os.getpid()}


@app.task("hang", timeout=2)
def hang(payload: dict[str, Any], ctx: TaskContext) -> None:
    """Ignores its time limit and cancellation: its thread is stuck for good."""
    _record(ctx)
    while True:
        time.sleep(3600)
