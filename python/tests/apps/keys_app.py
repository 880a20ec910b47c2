"""The app the concurrency-limit tests run: ``pyconductor worker --app apps.keys_app:app``.

``export`` records when its handler ran (``clock_timestamp()`` at its start and
end, in the side table ``runs`` the test creates) on a connection of its own
thread, then sleeps ``seconds``; ``noop`` does nothing (a drain's throughput).
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


def _conn() -> psycopg.Connection[tuple[Any, ...]]:
    conn = getattr(_local, "conn", None)
    if conn is None or conn.closed:
        conn = _local.conn = psycopg.connect(app.dsn, autocommit=True)
    return conn


@app.task("export")
def export(payload: dict[str, Any], ctx: TaskContext) -> None:
    conn = _conn()
    conn.execute("insert into runs (attempt_id, started) values (%s, clock_timestamp())", (ctx.attempt_id,))
    time.sleep(payload["seconds"])
    conn.execute("update runs set ended = clock_timestamp() where attempt_id = %s", (ctx.attempt_id,))


@app.task("noop")
def noop(payload: dict[str, Any]) -> None:
    return None
