"""The app of test_partition: ``pyconductor worker --app apps.partition_app:app``.

Its handlers record what they do in a journal file on this machine's disk
($CONDUCTOR_JOURNAL), never through the database: a worker cut off from the
network still records every handler start and every step body it runs, at
the moment it runs it. One line a record, appended under a lock (O_APPEND):

  start <task_id> <attempt_id> <worker_id> <kind>
  end   <task_id> <attempt_id> <worker_id> <kind>
  step  <task_id> <attempt_id> <worker_id> <step name>
  refused <task_id> <attempt_id> <worker_id> <SQLSTATE>   a step's checkpoint refused

Kinds (neither looks at ctx.cancelled: a handler whose lease was lost runs to
its end and tries to report, so fencing is what stops its result):
  slow    {"ms": n}              sleep n ms; returns {"worker", "attempt_id"}
  durable {"steps": k, "ms": n}  k ctx.step calls 's1'..'sk', each body n ms;
                                 returns the steps' results, each
                                 {"step", "worker", "attempt_id"} of the run of
                                 the body that was checkpointed
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from pyconductor import Conductor, ConductorError, TaskContext

app = Conductor(os.environ["CONDUCTOR_DSN"])

_lock = threading.Lock()


def _journal(*fields: object) -> None:
    line = " ".join(str(f) for f in fields) + "\n"
    with _lock:
        fd = os.open(os.environ["CONDUCTOR_JOURNAL"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)


@app.task("slow")
def slow(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    _journal("start", ctx.task_id, ctx.attempt_id, ctx.worker_id, ctx.kind)
    time.sleep(payload["ms"] / 1000)
    _journal("end", ctx.task_id, ctx.attempt_id, ctx.worker_id, ctx.kind)
    return {"worker": ctx.worker_id, "attempt_id": ctx.attempt_id}


@app.task("durable")
def durable(payload: dict[str, Any], ctx: TaskContext) -> list[Any]:
    _journal("start", ctx.task_id, ctx.attempt_id, ctx.worker_id, ctx.kind)

    def body(n: int) -> dict[str, Any]:
        _journal("step", ctx.task_id, ctx.attempt_id, ctx.worker_id, f"s{n}")
        time.sleep(payload["ms"] / 1000)
        return {"step": n, "worker": ctx.worker_id, "attempt_id": ctx.attempt_id}

    try:
        results = [ctx.step(f"s{n}", lambda n=n: body(n)) for n in range(1, payload["steps"] + 1)]
    except ConductorError as exc:  # LeaseLost (QC201) once the lease was lost: fencing
        _journal("refused", ctx.task_id, ctx.attempt_id, ctx.worker_id, exc.sqlstate)
        raise
    _journal("end", ctx.task_id, ctx.attempt_id, ctx.worker_id, ctx.kind)
    return results
