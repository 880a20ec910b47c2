"""The app of test_runs_processes: ``pyconductor worker --app apps.runs_app:app``.

Side tables (created by the test):
  step_runs (task_id, step, pid, recoveries, at)   one row per execution of a step's body
  key_runs (key, task_id, pid, started_at, finished_at)   one row per keyed handler run
  running_keys (key primary key, task_id)          a row while a handler of the key runs

Each handler thread has its own autocommit connection, so a row is committed
before the handler goes on.

Kinds:
  five_steps {"block": k}  five ctx.step calls 's1'..'s5'; each body records
                           itself in step_runs; the body of step k blocks while the
                           task has never been recovered (the test kill -9s the
                           worker meanwhile); returns the steps' results
  keyed      {"ms": n}     inserts its concurrency key into running_keys (a second
                           runner of the key would hit the primary key and fail the
                           task), sleeps n ms, records its interval in key_runs,
                           deletes the row
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
        conn = _local.conn = psycopg.connect(app.dsn, autocommit=True, connect_timeout=5)
    return conn


@app.task("five_steps")
def five_steps(payload: dict[str, Any], ctx: TaskContext) -> list[Any]:
    def body(n: int) -> dict[str, Any]:
        _conn().execute("insert into step_runs (task_id, step, pid, recoveries) values (%s, %s, %s, %s)",
                        (ctx.task_id, n, os.getpid(), ctx.recoveries))  # fmt: skip
        if n == payload.get("block") and ctx.recoveries == 0:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # until the test kills this process
                time.sleep(0.05)
        return {"step": n, "pid": os.getpid()}

    return [ctx.step(f"s{n}", lambda n=n: body(n)) for n in range(1, 6)]


@app.task("keyed")
def keyed(payload: dict[str, Any], ctx: TaskContext) -> str:
    key = payload["key"]
    conn = _conn()
    started = conn.execute("insert into running_keys (key, task_id) values (%s, %s) returning clock_timestamp()",
                           (key, ctx.task_id)).fetchone()[0]  # fmt: skip
    time.sleep(payload.get("ms", 0) / 1000)
    with conn.transaction():
        conn.execute("delete from running_keys where key = %s and task_id = %s", (key, ctx.task_id))
        conn.execute("insert into key_runs (key, task_id, pid, started_at, finished_at)"
                     " values (%s, %s, %s, %s, clock_timestamp())", (key, ctx.task_id, os.getpid(), started))  # fmt: skip
    return key
