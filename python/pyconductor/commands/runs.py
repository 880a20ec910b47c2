"""`pyconductor run-state`, `send-update`, `graph`, `cancel-graph`: asking a running
workflow and reading or cancelling a graph from a shell (docs/workflows.md, docs/graphs.md).

Each runs the client's own call (:mod:`pyconductor.calls`, :mod:`pyconductor.graphs`)
on the command's connection, so the CLI answers what ``Conductor`` answers.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, TypeVar

from pyconductor.calls import Call
from pyconductor.cliutil import fail
from pyconductor.commands.connect import command

T = TypeVar("T")


def _run(conn: Any, call: Call[T]) -> T:
    return call.decode(conn.execute(call.query, call.params).fetchall())


def _dumps(value: Any) -> str:
    return json.dumps(value, default=str)


def _run_state(args: argparse.Namespace, conn: Any) -> int:
    from pyconductor import calls

    state = _run(conn, calls.run_state(args.task_id))
    if args.json:
        print(_dumps({"task_id": args.task_id, "state": state.state, "set_at": state.set_at}))
    elif state.set_at is None:
        print(f"task {args.task_id} has published no state")
    else:
        print(f"task {args.task_id} state (published {state.set_at.isoformat()}): {_dumps(state.state)}")
    return 0


def _send_update(args: argparse.Namespace, conn: Any) -> int:
    from pyconductor import calls

    try:
        payload = json.loads(args.payload)
    except json.JSONDecodeError as exc:
        return fail(f"--payload is not JSON: {exc}")
    update_id = _run(conn, calls.send_update(args.task_id, args.name, payload))
    if args.wait is None:
        print(f"update {update_id} sent to task {args.task_id}")
        return 0
    try:
        answer = calls.await_reply(lambda: _run(conn, calls.update_reply(update_id)), args.wait)
    except TimeoutError as exc:
        return fail(str(exc))
    print(_dumps(answer.reply) if args.json else f"update {update_id} answered: {_dumps(answer.reply)}")
    return 0


def _graph(args: argparse.Namespace, conn: Any) -> int:
    from pyconductor import graphs

    nodes = _run(conn, graphs.graph(args.graph_id))
    if args.json:
        print(_dumps([node.__dict__ for node in nodes]))
        return 0
    print(f"graph {args.graph_id}: {len(nodes)} task(s)")
    for node in nodes:
        after = f"  after {', '.join(map(str, node.after))}" if node.after else ""
        error = f"  error: {node.error}" if node.error else ""
        print(f"  layer {node.layer}  task {node.task_id}  {node.name or node.role}  {node.kind}  "
              f"{node.status}{after}{error}")  # fmt: skip
    return 0


def _cancel_graph(args: argparse.Namespace, conn: Any) -> int:
    from pyconductor import graphs

    n = _run(conn, graphs.cancel_graph(args.graph_id))
    print(f"graph {args.graph_id}: cancelled {n} unfinished task(s); no callback runs after it")
    return 0


run_run_state = command(_run_state)
run_send_update = command(_send_update)
run_graph = command(_graph)
run_cancel_graph = command(_cancel_graph)
