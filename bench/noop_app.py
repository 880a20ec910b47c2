"""A no-op app for bench/workers.py: ``python -m pyconductor worker --app noop_app:app``
(with bench/ on PYTHONPATH); the DSN comes from $CONDUCTOR_DSN."""

import os

from pyconductor import Conductor

app = Conductor(os.environ.get("CONDUCTOR_DSN", ""))


@app.task("noop")
def noop(payload: dict) -> None:
    return None
