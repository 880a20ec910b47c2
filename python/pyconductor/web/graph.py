"""The graph page (``/graphs/{id}``, docs/graphs.md): a graph's tasks drawn by
layer, from ``conductor.graph``, the database's reading (each member's layer is
the longest chain of dependencies before it; the callbacks come one layer past
the members). Each layer is a row of boxes, first to last; a box names the
member, its kind and status, links to its run page, and lists the members it
runs after, so an edge reads as a name in a box of an earlier layer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import groupby
from typing import Any

from pyconductor.web.markup import h, safe_name, status_badge

__all__ = ["graph_page"]


def _box(node: Mapping[str, Any], names: Mapping[int, str]) -> str:
    label = node["name"] if node["role"] == "member" else node["role"]
    after = ", ".join(names.get(i, str(i)) for i in node["after"] or [])
    return (
        f'<li class="node s-{h(node["status"])}" data-task="{node["task_id"]}" data-role="{h(node["role"])}"'
        f' data-status="{h(node["status"])}"><a href="/runs/{node["task_id"]}">{h(label)}</a>'
        f" <small>{safe_name(node['kind'])}</small> {status_badge(node['status'])}"
        + (f'<br><small class=after>after {h(after)}</small>' if after else "")
        + (f'<br><small class=err>{h(node["error"])}</small>' if node["error"] else "")
        + "</li>"
    )  # fmt: skip


def graph_page(graph_id: int, nodes: Sequence[Mapping[str, Any]]) -> str:
    """The graph's layers, in order, each an ordered list of its tasks' boxes, and the
    statuses counted."""
    names = {int(n["task_id"]): n["name"] for n in nodes if n["name"] is not None}
    counts: dict[str, int] = {}
    for n in nodes:
        counts[str(n["status"])] = counts.get(str(n["status"]), 0) + 1
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    out = [f"<h1>Graph {graph_id}</h1>", f"<p id=graph-summary>{len(nodes)} tasks: {h(summary)}</p>",
           "<ol id=graph class=layers>"]  # fmt: skip
    for layer, group in groupby(nodes, key=lambda n: n["layer"]):
        boxes = "".join(_box(n, names) for n in group)
        out.append(f'<li class=layer data-layer="{layer}"><h2>layer {layer}</h2><ol class=nodes>{boxes}</ol></li>')
    out.append("</ol>")
    return "".join(out)
