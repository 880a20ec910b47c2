"""The README's app, runnable from the repository:

    export CONDUCTOR_DSN=$(.venv/bin/pyconductor devdb url)     # or your own database
    .venv/bin/pyconductor worker --app examples.myapp:app --queues emails,default
    .venv/bin/pyconductor enqueue send_email --payload '{"to": "a@b.c"}'   # in another shell

At start the worker writes each kind's options (``conductor.configure_kind``),
so ``send_email`` enqueued from the command line, psql or any client lands on
the queue ``emails``, with 3 attempts and a 30 s limit, where this worker claims it.
"""

import os

from pyconductor import Conductor

app = Conductor(os.environ.get("CONDUCTOR_DSN", "postgresql://app@localhost/app"))


@app.task("send_email", queue="emails", max_attempts=3, backoff_base=10, timeout=30)
def send_email(payload):
    return {"sent_to": payload["to"]}  # the return value (JSON) is stored as the task's result


@app.schedule("*/5 * * * *", tz="Europe/Berlin")
def cleanup(payload):
    ...
