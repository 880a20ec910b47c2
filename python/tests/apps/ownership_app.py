"""The ownership tests' app (``apps.ownership_app:app``, issue 25): own.busy holds
its slot for ``payload["s"]`` seconds, own.work returns at once, both on queue own."""

from __future__ import annotations

import os
import time
from typing import Any

from pyconductor import Conductor

app = Conductor(os.environ["CONDUCTOR_DSN"])


@app.task("own.busy", queue="own")
def busy(payload: dict[str, Any]) -> str:
    time.sleep(float(payload["s"]))
    return "busy"


@app.task("own.work", queue="own")
def work(payload: dict[str, Any]) -> str:
    return "work"
