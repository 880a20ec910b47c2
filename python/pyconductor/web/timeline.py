"""A run's timeline as server-side SVG: pure functions from the spans
``conductor.run_timeline`` answers to one ``<svg>`` (no script, every text escaped).

One lane per task of the run (tree order as the spans first name them): the
task's life as a thin bar, on it its queued time, attempts (a failed one red)
and waits coloured by what the time was; its steps on a lane of their own
under it. Every bar carries ``data-span``, ``data-what``, ``data-task`` and
``data-start`` (ISO time), and a ``<title>`` shown on hover.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pyconductor.web.markup import age, h, safe_name, ts

__all__ = ["timeline_svg"]

WIDTH = 1000  # the drawing's width in its own units; the page scales it to fit
GUTTER = 230  # the lane labels' column
LANE = 22  # a lane's height
BAR = 14  # a bar's height in its lane
TOP = 24  # room for the time axis

# what the time was, as each bar is coloured (class names styled in markup.CSS)
COLOURS = {
    "queued": "#c9c9c9", "running": "#4a90d9", "succeeded": "#4a90d9", "suspended": "#4a90d9",
    "released": "#8fb3d9", "lost": "#e39a5d", "cancelled": "#999999", "failed": "#d9534f",
    "sleep": "#9b7fd4", "event": "#f0a030", "children": "#e3cc3b", "waiting": "#bbbbbb",
    "step": "#3aa79b", "spawn": "#2f7f76",
}  # fmt: skip
LEGEND = ("queued", "running", "failed", "children", "event", "sleep", "step")


def _colour(span: Mapping[str, Any]) -> str:
    return COLOURS.get(str(span["what"]), "#bbbbbb")


def _title(span: Mapping[str, Any], end: datetime) -> str:
    """The hover text: task, label, what, times and (a failed attempt's) error, escaped."""
    finished = ts(span["finished_at"]) if span["finished_at"] else "now"
    head = (f"task {span['task_id']}: {span['label']} ({span['what']}) "
            f"{ts(span['started_at'])} → {finished}, {age(end - span['started_at'])}")  # fmt: skip
    return safe_name(head) + (f"\n{h(span['error'])}" if span.get("error") else "")


def timeline_svg(spans: Sequence[Mapping[str, Any]], now: datetime) -> str:
    """The run's waterfall; spans still going (finished_at NULL) end at ``now``."""
    if not spans:
        return "<p id=no-timeline>Nothing to draw yet.</p>"
    start = min(s["started_at"] for s in spans)
    # the axis ends at the last end, or now while anything still goes on
    ends = [s["finished_at"] or now for s in spans]
    end = max([start, *ends])
    total = max((end - start).total_seconds(), 0.001)
    scale = (WIDTH - GUTTER - 10) / total

    def x(at: datetime) -> float:
        return float(GUTTER + (at - start).total_seconds() * scale)

    tasks = [s["task_id"] for s in spans if s["span"] == "task"]
    with_steps = {s["task_id"] for s in spans if s["span"] == "step"}
    # a lane per task, and under a task with steps a lane of its steps
    lanes = [lane for t in tasks for lane in ([(t, "task"), (t, "steps")] if t in with_steps else [(t, "task")])]
    row = {lane: i for i, lane in enumerate(lanes)}
    height = TOP + LANE * len(lanes) + 26
    out = [
        (
            f'<svg id=timeline-svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="100%" '
            'role=img aria-label="timeline of the run" font-size="11" font-family="system-ui,sans-serif">'
        ),
        f'<text x="{GUTTER}" y="14">{ts(start)}</text>',
        f'<text x="{WIDTH - 10}" y="14" text-anchor="end">{ts(end)} (+{h(age(end - start))})</text>',
    ]
    kinds = {s["task_id"]: s["label"] for s in spans if s["span"] == "task"}
    for (task_id, part), i in row.items():
        y = TOP + i * LANE
        text = f"{task_id} {kinds.get(task_id, '')}"[:40] if part == "task" else "steps"  # cut before escaping
        indent = 4 if part == "task" else 18
        out.append(
            f'<text x="{indent}" y="{y + BAR - 2}" data-lane="{part}" data-task="{task_id}">{safe_name(text)}</text>'
        )
    for n, s in enumerate(spans):
        finished = s["finished_at"] or end
        lane = (s["task_id"], "steps" if s["span"] == "step" else "task")
        if lane not in row:
            continue
        y = TOP + row[lane] * LANE
        x0 = x(s["started_at"])
        w = max(x(finished) - x0, 1.5)
        if s["span"] == "task":
            shape = f'y="{y + BAR // 2 - 1}" height="2" fill="#555"'
        else:
            shape = f'y="{y}" height="{BAR}" fill="{_colour(s)}"'
        failed = " data-failed" if s["what"] == "failed" and s["span"] == "attempt" else ""
        out.append(
            f'<rect class="bar {h(s["span"])}" data-span="{h(s["span"])}" data-what="{h(s["what"])}" '
            f'data-task="{s["task_id"]}" data-order="{n}" data-start="{h(s["started_at"].isoformat())}"'
            f'{failed} x="{x0:.1f}" width="{w:.1f}" {shape}><title>{_title(s, finished)}</title></rect>'
        )
    y = height - 8
    for i, what in enumerate(LEGEND):
        lx = GUTTER + i * 100
        out.append(f'<rect x="{lx}" y="{y - 9}" width="10" height="10" fill="{COLOURS[what]}"/>'
                   f'<text x="{lx + 14}" y="{y}">{what}</text>')  # fmt: skip
    out.append("</svg>")
    return "".join(out)
