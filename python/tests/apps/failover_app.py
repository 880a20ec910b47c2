"""The app of test_failover: ``pyconductor worker --app apps.failover_app:app``.

What ran is written outside the databases: each handler start and each step
body appends one JSON line to the file ``$FAILOVER_RUNLOG`` (one ``write``
on a file opened with O_APPEND, so lines of several processes never mix).
A failover that loses commits cannot lose this record, so the test counts
real executions even where the database forgot them.

Lines: {"what": "start" | "step", "kind", "task", "attempt", "recoveries",
"seq" (the payload's), "step" (1..k, steps only), "pid", "at" (time.time())}.

Kinds:
  durable {"seq": n, "steps": k, "ms": m}  a durable run: k ctx.step calls
                       's1'..'sk'; each body logs itself, then works (sleeps)
                       m ms; returns the steps' results
  fired   {}          the kind of the schedule ``every_second`` (a 6-field cron
                       line: each second); logs its start and returns
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

from pyconductor import Conductor, TaskContext

app = Conductor(os.environ["CONDUCTOR_DSN"])

_lock = threading.Lock()
_fd: int | None = None


def _log(what: str, ctx: TaskContext, **more: Any) -> None:
    global _fd
    line = json.dumps({"what": what, "kind": ctx.kind, "task": ctx.task_id, "attempt": ctx.attempt_id,
                       "recoveries": ctx.recoveries, "pid": os.getpid(), "at": time.time(), **more})  # fmt: skip
    with _lock:
        if _fd is None:
            _fd = os.open(os.environ["FAILOVER_RUNLOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(_fd, (line + "\n").encode())


@app.task("durable")
def durable(payload: dict[str, Any], ctx: TaskContext) -> list[Any]:
    seq = payload.get("seq")
    _log("start", ctx, seq=seq)

    def body(n: int) -> dict[str, Any]:
        _log("step", ctx, seq=seq, step=n)
        time.sleep(payload.get("ms", 0) / 1000)
        return {"step": n, "pid": os.getpid()}

    return [ctx.step(f"s{n}", lambda n=n: body(n)) for n in range(1, payload.get("steps", 1) + 1)]


@app.schedule("* * * * * *", name="every_second")
@app.task("fired")
def fired(payload: dict[str, Any], ctx: TaskContext) -> int:
    _log("start", ctx)
    return ctx.task_id
