"""``enqueue``: one task, written with conductor.enqueue; prints its id."""

from __future__ import annotations

import argparse

from pyconductor.cliutil import fail, resolve_dsn
from pyconductor.commands.options import load_app

__all__ = ["run_enqueue"]


def run_enqueue(args: argparse.Namespace) -> int:
    import json

    from pyconductor.client import Conductor
    from pyconductor.dsn import redact_dsn
    from pyconductor.errors import ConductorError

    app: Conductor | None = None
    if args.app:
        try:
            loaded = load_app(args.app)
        except (ImportError, AttributeError) as exc:
            return fail(f"cannot load app {args.app!r}: {exc}")
        if isinstance(loaded, Conductor):
            app = loaded
    dsn = args.dsn or (app.dsn if app else None) or resolve_dsn(args)
    if not dsn:
        return fail("no database given: pass --dsn (or set CONDUCTOR_DSN / DATABASE_URL)")
    try:
        payload = json.loads(args.payload)
    except json.JSONDecodeError as exc:
        return fail(f"--payload is not JSON: {exc}")
    client = Conductor(dsn, pool_min=1, pool_max=1)
    if app is not None:
        client.registry = app.registry  # the kind's registered defaults apply
    try:
        with client:
            task_id = client.enqueue(
                args.kind, payload, queue=args.queue, priority=args.priority, run_at=args.run_at,
                max_attempts=args.max_attempts, dedupe_key=args.dedupe_key, concurrency_key=args.concurrency_key,
                parent_id=args.parent, timeout=args.timeout, max_recoveries=args.max_recoveries,
                backoff_base=args.backoff_base, backoff_factor=args.backoff_factor, backoff_max=args.backoff_max,
                expires_in=args.expires_in,
            )  # fmt: skip
    except ConductorError as exc:
        return fail(f"{exc} [{exc.sqlstate}]")
    except Exception as exc:
        if exc.__class__.__module__.startswith("psycopg"):
            return fail(f"cannot enqueue: {redact_dsn(str(exc))}")
        raise
    print(task_id)
    return 0
