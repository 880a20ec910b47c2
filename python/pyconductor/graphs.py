"""Graphs and batches, declared (docs/graphs.md): the calls of
``conductor.enqueue_graph``, ``graph``, ``cancel_graph`` and
``dependency_results``, shared by the sync and the asyncio client as
:mod:`pyconductor.calls` are.

A member is a task spec (``kind``, ``payload`` and any enqueue option, as
:meth:`Conductor.enqueue_many <pyconductor.client.Conductor.enqueue_many>`
takes) with a ``name``, optionally ``after`` (the names it runs after) and
``run_on_failure``. The database decides everything else: the order, who is
released when, the callbacks, the cascade of a failure.

    graph = app.enqueue_graph([
        {"name": "a", "kind": "fetch", "payload": {"url": u1}},
        {"name": "b", "kind": "fetch", "payload": {"url": u2}},
        {"name": "c", "kind": "merge", "after": ["a", "b"]},
    ], on_complete={"kind": "report"})
    graph.task_ids["c"]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyconductor import queries
from pyconductor.calls import Call, Rows, task_spec
from pyconductor.errors import InvalidArgument
from pyconductor.registry import Registry
from pyconductor.wire import dumps_json

__all__ = ["Graph", "GraphNode", "cancel_graph", "dependency_results", "enqueue_graph", "graph"]

# the keys of a member that are the graph's, not the task's
MEMBER_KEYS = ("name", "after", "run_on_failure")


@dataclass(frozen=True)
class Graph:
    """What :meth:`enqueue_graph` answers: the graph's id, each member's task id
    by name, and the callbacks' task ids (None when not declared)."""

    graph_id: int
    task_ids: dict[str, int] = field(default_factory=dict)
    on_complete: int | None = None
    on_failure: int | None = None


@dataclass(frozen=True)
class GraphNode:
    """A row of ``conductor.graph``: a member (role 'member', its name, layer and
    the ids it runs after) or a callback (role 'on_complete' / 'on_failure')."""

    task_id: int
    name: str | None
    role: str
    kind: str
    status: str
    layer: int
    after: list[int]
    error: str | None


def _spec(registry: Registry, spec: Mapping[str, Any] | Sequence[Any], what: str) -> dict[str, Any]:
    if isinstance(spec, Mapping):
        options = dict(spec)
        try:
            kind = options.pop("kind")
        except KeyError:
            raise InvalidArgument(f"{what} without a kind: {spec!r}") from None
        graph_keys = {k: options.pop(k) for k in MEMBER_KEYS if k in options}
        return {**task_spec(registry, kind, options.pop("payload", None), **options), **graph_keys}
    kind, payload = spec
    return task_spec(registry, kind, payload)


def _json(value: Any) -> str | None:
    return None if value is None else dumps_json(value)


def enqueue_graph(
    registry: Registry,
    members: Iterable[Mapping[str, Any]],
    on_complete: Mapping[str, Any] | Sequence[Any] | None = None,
    on_failure: Mapping[str, Any] | Sequence[Any] | None = None,
) -> Call[Graph]:
    """``conductor.enqueue_graph``: each member's options are resolved as
    :func:`~pyconductor.calls.task_spec` resolves them (the kind's registered
    defaults); a callback is a spec dict or a ``(kind, payload)`` pair."""
    tasks = [_spec(registry, m, "a graph member") for m in members]
    params = {
        "tasks": dumps_json(tasks),
        "on_complete": _json(None if on_complete is None else _spec(registry, on_complete, "on_complete")),
        "on_failure": _json(None if on_failure is None else _spec(registry, on_failure, "on_failure")),
    }
    return Call(queries.ENQUEUE_GRAPH, params, _graph_of)


def _graph_of(rows: Rows) -> Graph:
    by_role = {row["role"]: int(row["task_id"]) for row in rows if row["role"] != "member"}
    return Graph(
        graph_id=int(rows[0]["graph_id"]),
        task_ids={row["name"]: int(row["task_id"]) for row in rows if row["role"] == "member"},
        on_complete=by_role.get("on_complete"),
        on_failure=by_role.get("on_failure"),
    )


def graph(graph_id: int) -> Call[list[GraphNode]]:
    """``conductor.graph``: the graph's tasks by layer (the server raises
    :class:`~pyconductor.errors.GraphNotFound` for an unknown id)."""
    return Call(queries.GRAPH, {"graph_id": graph_id}, lambda rows: [
        GraphNode(task_id=int(r["task_id"]), name=r["name"], role=r["role"], kind=r["kind"], status=str(r["status"]),
                  layer=int(r["layer"]), after=[int(x) for x in r["after"] or []], error=r["error"])
        for r in rows
    ])  # fmt: skip


def cancel_graph(graph_id: int) -> Call[int]:
    """``conductor.cancel_graph``; decodes to how many tasks it cancelled."""
    return Call(queries.CANCEL_GRAPH, {"graph_id": graph_id}, lambda rows: int(rows[0]["cancelled"]))


def dependency_results(task_id: int) -> Call[dict[str, Any]]:
    """``conductor.dependency_results``: {name: {task_id, status, result, error}}."""
    return Call(queries.DEPENDENCY_RESULTS, {"task_id": task_id}, lambda rows: dict(rows[0]["results"] or {}))
