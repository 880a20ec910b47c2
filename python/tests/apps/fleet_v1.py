"""Release 1 of the fleet test's app (``apps.fleet_v1:app``): kind fleet.a only."""

from __future__ import annotations

import os
import time
from typing import Any

from pyconductor import Conductor

app = Conductor(os.environ["CONDUCTOR_DSN"])


@app.task("fleet.a", queue="fleet")
def a(payload: dict[str, Any]) -> str:
    time.sleep(0.002)
    return "a"
