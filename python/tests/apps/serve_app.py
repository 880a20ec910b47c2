"""The app the ``pyconductor serve`` tests run: ``--app apps.serve_app:app``.

- ``echo``: returns its payload;
- the schedule ``every-second`` (declared with the scheduler role) enqueues
  ``echo`` every second;
- the singleton ``beacon`` records each start of it (its process's pid) in
  the side table ``beacon_runs``, then runs until told to stop.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import psycopg

from pyconductor import Conductor, TaskContext

app = Conductor(os.environ["CONDUCTOR_DSN"])


@app.task("echo")
def echo(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    return payload


app.schedule("* * * * * *", "echo", name="every-second", payload={"from": "schedule"})


@app.singleton("beacon")
def beacon(stop: threading.Event) -> None:
    with psycopg.connect(app.dsn, autocommit=True) as conn:
        conn.execute("create table if not exists beacon_runs (pid integer, at timestamptz default now())")
        conn.execute("insert into beacon_runs (pid) values (%s)", (os.getpid(),))
    stop.wait()
