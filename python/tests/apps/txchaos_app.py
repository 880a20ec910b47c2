"""The app of the transactional-completion chaos test (issue 31):
``pyconductor worker --app apps.txchaos_app:app``.

Kind ``effect``: in the handler's own transaction (``ctx.transaction()``), write
one row to the application's table ``effects`` (created by the test: task_id,
attempt_id, no unique key: the test counts rows per task), wait up to
``pause_ms`` (random) so that a kill lands between the write and the commit
as often as anywhere, then complete in the same transaction. A kill -9 at any
point must leave exactly one row per task once every task succeeded.
"""

from __future__ import annotations

import os
import random
import time
from typing import Any

from pyconductor import Conductor, TaskContext

app = Conductor(os.environ["CONDUCTOR_DSN"])


@app.task("effect")
def effect(payload: dict[str, Any], ctx: TaskContext) -> None:
    with ctx.transaction() as conn:
        conn.execute("insert into effects (task_id, attempt_id) values (%s, %s)", [ctx.task_id, ctx.attempt_id])
        time.sleep(random.uniform(0, payload.get("pause_ms", 20)) / 1000)
        ctx.complete_in(conn, {"attempt_id": ctx.attempt_id})
