"""An order pipeline as a durable run: charge, reserve (children fanned out and
joined), wait for a human approval event, ship.

    .venv/bin/pyconductor devdb start          # once: the local PostgreSQL
    .venv/bin/python examples/order_pipeline.py

It migrates the database (a no-op when up to date), starts a worker in this
process, enqueues one order, waits until the order waits for its approval (no
worker slot is held meanwhile), emits the approval event as a person would
(``Conductor.emit_event``, or ``select conductor.emit_event(...)`` from psql),
and prints the result. ``--dsn`` (or $CONDUCTOR_DSN) picks another database.

What to notice in the output: the handler runs three times (it is re-run from
the top each time the task is woken: after the reservations, after the
approval), but "charging" is printed once: finished steps are checkpointed in
SQL and skipped on every replay, including after a crash of the worker.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from typing import Any

from pyconductor import Conductor, EventTimeout, TaskContext, TaskInfo, Worker


def build_app(dsn: str) -> Conductor:
    app = Conductor(dsn)

    @app.task("order.reserve_item", queue="orders")
    def reserve_item(payload: dict[str, Any]) -> dict[str, Any]:
        # a real one would call the warehouse; idempotent by (order, sku)
        if payload["qty"] <= 0:
            raise ValueError(f"cannot reserve {payload['qty']} of {payload['sku']}")
        return {"sku": payload["sku"], "reserved": payload["qty"], "bin": f"B-{payload['sku'][-2:]}"}

    @app.task("order.process", queue="orders")
    def process(order: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
        order_id = order["order_id"]
        print(f"  [order {order_id}] handler runs (attempt {ctx.attempt_id})")

        def charge() -> dict[str, Any]:
            print(f"  [order {order_id}] charging {order['amount']:.2f}")
            # the payment provider's idempotency key is the order id: a charge retried
            # after a crash between the charge and its checkpoint is not taken twice
            return {"charge_id": "ch_" + hashlib.sha1(order_id.encode()).hexdigest()[:12], "amount": order["amount"]}

        payment = ctx.step("charge", charge)

        for item in order["items"]:
            ctx.spawn("order.reserve_item", {"order_id": order_id, **item})
        reservations = ctx.wait_for_children(timeout=600)
        failed = [r for r in reservations if r["status"] != "succeeded"]
        if failed:
            ctx.step("refund", lambda: {"refunded": payment["charge_id"]})
            return {"order_id": order_id, "status": "cancelled", "failed": [r["error"] for r in failed]}

        try:
            approval = ctx.wait_for_event(f"order:{order_id}:approved", timeout=order.get("approval_timeout", 3600))
        except EventTimeout:
            ctx.step("refund", lambda: {"refunded": payment["charge_id"]})
            return {"order_id": order_id, "status": "not approved in time"}

        def ship() -> dict[str, Any]:
            print(f"  [order {order_id}] shipping, approved by {approval['by']}")
            return {"tracking": "TRK" + hashlib.sha1(payment["charge_id"].encode()).hexdigest()[:10].upper()}

        shipment = ctx.step("ship", ship)
        return {
            "order_id": order_id, "status": "shipped", "charge": payment,
            "reserved": [r["result"] for r in reservations], "approved_by": approval["by"], **shipment,
        }  # fmt: skip

    return app


def main(dsn: str, *, approver: str = "alice", timeout: float = 30.0) -> TaskInfo:
    """Run one order through the pipeline against ``dsn`` (migrated) and return
    the finished task."""
    app = build_app(dsn)
    order_id = f"A{int(time.time() * 1000) % 10**9}-{os.getpid()}"
    order = {
        "order_id": order_id, "amount": 59.90,
        "items": [{"sku": "SKU-1001", "qty": 1}, {"sku": "SKU-2002", "qty": 2}, {"sku": "SKU-3003", "qty": 1}],
    }  # fmt: skip
    worker = Worker(app, queues=["orders"], concurrency=4, run_scheduler=False, heartbeat_interval=2,
                    poll_interval=1, reap_interval=5, shutdown_grace=5)  # fmt: skip
    with app, worker:
        task_id = app.enqueue("order.process", order)
        print(f"order {order_id}: task {task_id} enqueued")

        # until the order waits for its approval (it holds no worker slot meanwhile)
        deadline = time.monotonic() + timeout
        while True:
            with app.connection() as conn:
                row = conn.execute("select status::text, wait_event from conductor.tasks where id = %s",
                                   (task_id,)).fetchone()  # fmt: skip
            status, event = row if row else (None, None)
            if status == "waiting" and event:
                break
            if status not in ("queued", "running", "waiting") or time.monotonic() > deadline:
                return app.result(task_id, timeout=0.1)  # it ended early (a failed reservation)
            time.sleep(0.05)
        print(f"order {order_id}: waiting for event {event!r}; the worker runs {worker.running} handler(s)")

        woken = app.emit_event(event, {"by": approver})
        print(f"order {order_id}: approved by {approver} (woke {woken} task)")
        info = app.result(task_id, timeout=timeout)
    print(f"order {order_id}: {info.status}: {info.result if info.status == 'succeeded' else info.error}")
    return info


def _default_dsn() -> str | None:
    dsn = os.environ.get("CONDUCTOR_DSN") or os.environ.get("DATABASE_URL")
    if dsn:
        return dsn
    from pyconductor.cli import default_dsn

    return default_dsn()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", default=None, help="database URL (default: $CONDUCTOR_DSN, else the dev database)")
    parser.add_argument("--approver", default="alice")
    args = parser.parse_args()
    url = args.dsn or _default_dsn()
    if not url:
        sys.exit("no database: start the dev database (.venv/bin/pyconductor devdb start) or pass --dsn")
    from pyconductor.migrate import migrate

    migrate(url, progress=lambda line: None)  # a no-op when up to date
    sys.exit(0 if main(url, approver=args.approver).status == "succeeded" else 1)
