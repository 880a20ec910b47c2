"""The app the failure-recovery tests run: ``pyconductor worker --app apps.recovery_app:app``.

Every handler records its execution in the side table ``executions`` (created
by the test: task_id, attempt_id, pid, run_id unique) and commits it before
doing anything else, on a connection of its own thread. The recording survives
what the tests do to the database (backend kills, a restart): a lost connection
is reopened and the insert retried, and the retry cannot count one execution
twice because each handler run carries its own ``run_id`` (``on conflict do
nothing``). So ``count(*)`` per task is the number of times its handler really
started.

Kinds:
  record  {"sleep_ms": n}  record, sleep n ms, return pid and attempt_id
  gate    {"hold": h}      record; a claim with recoveries < h (default 1: the
                           first claim only) blocks until the test inserts
                           (task id, recoveries) into ``gates``; the others return
                           at once. Never looks at ctx.cancelled: a zombie
                           finishes and tries to report.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg

from pyconductor import Conductor, TaskContext

app = Conductor(os.environ["CONDUCTOR_DSN"])

T = TypeVar("T")
_local = threading.local()
RETRY_FOR = 60.0  # seconds a handler keeps retrying its side-table statements


def _with_conn(fn: Callable[[psycopg.Connection[Any]], T]) -> T:
    """``fn(conn)`` on this thread's connection; reconnect and retry on a lost connection."""
    deadline = time.monotonic() + RETRY_FOR
    delay = 0.05
    while True:
        conn = getattr(_local, "conn", None)
        try:
            if conn is None or conn.closed:
                conn = _local.conn = psycopg.connect(app.dsn, autocommit=True, connect_timeout=5)
            return fn(conn)
        except (psycopg.OperationalError, psycopg.InterfaceError):
            if conn is not None:
                try:
                    conn.close()
                except Exception:  # noqa: BLE001 - closing a broken connection
                    pass
            _local.conn = None
            if time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 1.0)


def _record(ctx: TaskContext) -> None:
    run_id = uuid.uuid4().hex  # one per handler run: a retried insert counts once
    _with_conn(lambda c: c.execute(
        "insert into executions (task_id, attempt_id, pid, run_id) values (%s, %s, %s, %s)"
        " on conflict (run_id) do nothing",
        (ctx.task_id, ctx.attempt_id, os.getpid(), run_id),
    ))  # fmt: skip


@app.task("record")
def record(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    _record(ctx)
    time.sleep(payload.get("sleep_ms", 0) / 1000)
    return {"pid": os.getpid(), "attempt_id": ctx.attempt_id}


def _gate_open(ctx: TaskContext) -> bool:
    return _with_conn(lambda c: c.execute("select 1 from gates where task_id = %s and recoveries = %s",
                                          (ctx.task_id, ctx.recoveries)).fetchone()) is not None  # fmt: skip


@app.task("gate")
def gate(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    _record(ctx)
    if ctx.recoveries < payload.get("hold", 1):
        while not _gate_open(ctx):
            time.sleep(0.05)
    return {"pid": os.getpid(), "attempt_id": ctx.attempt_id}
