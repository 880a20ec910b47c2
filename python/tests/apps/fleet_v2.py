"""Release 2 of the fleet test's app (``apps.fleet_v2:app``): release 1's fleet.a
and the new kind fleet.b, on the same queue."""

from __future__ import annotations

import time
from typing import Any

from apps.fleet_v1 import a, app

__all__ = ["a", "app", "b"]


@app.task("fleet.b", queue="fleet")
def b(payload: dict[str, Any]) -> str:
    time.sleep(0.002)
    return "b"
