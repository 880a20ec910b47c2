"""The app the graph tests run: ``pyconductor worker --app apps.graphs_app:app``.

``node`` records its run in the side table ``node_runs`` the test creates (its
start and end by ``clock_timestamp()``, its process, and the names of its
dependencies that ``ctx.dependencies()`` reported succeeded) and returns its
payload's ``n``; ``fail_node`` raises. ``graph_done`` and ``graph_failed`` (the
callbacks) record their payload in ``callback_runs``.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from pyconductor import Conductor, TaskContext

app = Conductor(os.environ["CONDUCTOR_DSN"])

_local = threading.local()


def _conn() -> psycopg.Connection[tuple[Any, ...]]:
    conn = getattr(_local, "conn", None)
    if conn is None or conn.closed:
        conn = _local.conn = psycopg.connect(app.dsn, autocommit=True)
    return conn


@app.task("node")
def node(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    conn = _conn()
    started = conn.execute("select clock_timestamp()").fetchone()
    deps = ctx.dependencies()
    succeeded = sorted(name for name, d in deps.items() if d["status"] == "succeeded")
    conn.execute(
        "insert into node_runs (task_id, started, pid, deps_succeeded) values (%s, %s, %s, %s)",
        (ctx.task_id, started[0] if started else None, os.getpid(), succeeded),
    )
    conn.execute("update node_runs set ended = clock_timestamp() where task_id = %s and pid = %s",
                 (ctx.task_id, os.getpid()))  # fmt: skip
    return {"n": payload["n"]}


@app.task("fail_node")
def fail_node(payload: dict[str, Any]) -> None:
    raise RuntimeError(f"node {payload['n']} fails")


def _callback(kind: str, payload: dict[str, Any], ctx: TaskContext) -> None:
    _conn().execute("insert into callback_runs (task_id, kind, payload, pid) values (%s, %s, %s, %s)",
                    (ctx.task_id, kind, Jsonb(payload), os.getpid()))  # fmt: skip


@app.task("graph_done")
def graph_done(payload: dict[str, Any], ctx: TaskContext) -> None:
    _callback("graph_done", payload, ctx)


@app.task("graph_failed")
def graph_failed(payload: dict[str, Any], ctx: TaskContext) -> None:
    _callback("graph_failed", payload, ctx)
