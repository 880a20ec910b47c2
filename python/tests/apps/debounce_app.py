"""The app of test_debounce_processes: ``pyconductor worker --app apps.debounce_app:app``.

Side table (created by the test):
  debounce_runs (task_id, payload, pid, started_at)   one row per run of ``reindex``

Kinds:
  reindex {"n": i}   records its run (with the payload it was given) and returns n
"""

from __future__ import annotations

import os
from typing import Any

import psycopg

from pyconductor import Conductor, TaskContext

app = Conductor(os.environ["CONDUCTOR_DSN"])


@app.task("reindex")
def reindex(payload: dict[str, Any], ctx: TaskContext) -> int:
    with psycopg.connect(app.dsn, autocommit=True, connect_timeout=5) as conn:
        conn.execute("insert into debounce_runs (task_id, payload, pid) values (%s, %s::jsonb, %s)",
                     (ctx.task_id, psycopg.types.json.Jsonb(payload), os.getpid()))  # fmt: skip
    return int(payload["n"])
