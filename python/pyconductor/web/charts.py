"""The queues page's charts over time as server-side SVG: pure functions from the
points ``conductor.queue_series`` answers to ``<svg>`` bar charts (no script, every
text escaped), one per queue and measure.

Measures (:data:`MEASURES`): tasks finished and failed per step (sums over the
step's sampled minutes), the backlog depth (ready tasks) and the backlog age (the
largest read in the step). A step nobody sampled draws no bar; a bar of 0 is
drawn flat. Every bar carries ``data-at`` (ISO time), ``data-value`` (the number
the database holds) and a ``<title>`` naming the queue, the time and the value; an
axis says the largest value (``data-max``) and the times of the first and last step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from pyconductor.web.markup import h
from pyconductor.web.reads import RANGES

__all__ = ["MEASURES", "chart_svg", "charts_section", "number"]

# (column of queue_series' row, title, colour, whether it is a count per step)
MEASURES: tuple[tuple[str, str, str, bool], ...] = (
    ("finished", "finished", "#4a90d9", True),
    ("failed", "failed", "#d9534f", True),
    ("depth", "backlog depth", "#e3a43b", False),
    ("oldest_age_s", "backlog age (s)", "#9b7fd4", False),
)  # fmt: skip
CHART_QUEUES = 20  # queues charted at most (each has four charts)

WIDTH, HEIGHT = 320, 130  # the drawing's units; the page scales it to its column
LEFT, RIGHT, TOP, BOTTOM = 40, 6, 20, 18  # room for the axis labels and the title


def number(value: float) -> str:
    """A value as a chart writes it: integers plainly, others to 0.1."""
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def _time(at: datetime, day: bool) -> str:
    return at.strftime("%m-%d %H:%M") if day else at.strftime("%H:%M")


def chart_svg(queue: str, measure: str, title: str, colour: str, points: Sequence[Mapping[str, Any]],
              step: timedelta) -> str:  # fmt: skip
    """One bar chart of ``measure`` over ``points`` (queue_series rows of one queue, in time order)."""
    day = step >= timedelta(minutes=10)
    values = [p[measure] for p in points]
    known = [float(v) for v in values if v is not None]
    top = max([1.0, *known])
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    bar_w = plot_w / max(len(points), 1)
    per = f" / {int(step.total_seconds() // 60)} min" if measure in ("finished", "failed") else ""
    latest = next((number(float(v)) for v in reversed(values) if v is not None), "-")
    out = [
        (
            f'<svg class=chart xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" role=img '
            f'data-measure="{h(measure)}" data-queue="{h(queue)}" data-max="{number(top)}" '
            f'aria-label="{h(queue)}: {h(title)}" font-size="10" font-family="system-ui,sans-serif">'
        ),
        f'<text class=title x="{LEFT}" y="12">{h(title + per)}</text>',
        f'<text class=latest x="{WIDTH - RIGHT}" y="12" text-anchor="end">last {h(latest)}</text>',
        f'<text class=y-max x="{LEFT - 4}" y="{TOP + 8}" text-anchor="end">{number(top)}</text>',
        f'<text class=y-min x="{LEFT - 4}" y="{TOP + plot_h}" text-anchor="end">0</text>',
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - RIGHT}" y2="{TOP + plot_h}" stroke="#999"/>',
    ]
    if points:
        first, last = points[0]["at"], points[-1]["at"] + step
        out.append(f'<text class=x-start x="{LEFT}" y="{HEIGHT - 4}">{h(_time(first, day))}</text>')
        out.append(f'<text class=x-end x="{WIDTH - RIGHT}" y="{HEIGHT - 4}" text-anchor="end">'
                   f"{h(_time(last, day))} UTC</text>")  # fmt: skip
    for i, (p, v) in enumerate(zip(points, values, strict=True)):
        if v is None:
            continue  # nobody sampled this step: no bar
        height = float(v) / top * plot_h
        x = LEFT + i * bar_w
        label = f"{queue} {title} {_time(p['at'], day)}: {number(float(v))}"
        out.append(
            f'<rect class=bar data-at="{h(p["at"].isoformat())}" data-value="{number(float(v))}" '
            f'x="{x:.2f}" y="{TOP + plot_h - height:.2f}" width="{max(bar_w * 0.8, 0.8):.2f}" height="{height:.2f}" '
            f'fill="{colour}"><title>{h(label)}</title></rect>'
        )
    out.append("</svg>")
    return "".join(out)


def charts_section(series: Sequence[Mapping[str, Any]], range_name: str, links: Mapping[str, str]) -> str:
    """The "Over time" section: the range links (``links``: range -> href) and, per queue with
    samples in the range (at most :data:`CHART_QUEUES`), its four charts."""
    step = RANGES[range_name][1]
    choose = " · ".join(
        f"<b id=range-{name}>last {name}</b>" if name == range_name
        else f'<a id=range-{name} href="{h(href)}">last {name}</a>'
        for name, href in links.items()
    )  # fmt: skip
    out = [f"<h2>Over time</h2><p class=ranges>{choose}</p>"]
    by_queue: dict[str, list[Mapping[str, Any]]] = {}
    for row in series:
        by_queue.setdefault(row["queue"], []).append(row)
    if not by_queue:
        out.append(
            "<p id=no-charts>No samples in this range: the maintenance role "
            "(<code>pyconductor serve --role maintenance</code>) samples the queues once a minute.</p>"
        )
        return "".join(out)
    out.append(f'<div id=charts data-range="{h(range_name)}" data-step="{int(step.total_seconds())}">')
    for queue, points in list(by_queue.items())[:CHART_QUEUES]:
        charts = "".join(chart_svg(queue, m, title, colour, points, step) for m, title, colour, _ in MEASURES)
        out.append(f'<section class=chart-queue data-chart-queue="{h(queue)}"><h3>{h(queue)}</h3>'
                   f"<div class=chart-row>{charts}</div></section>")  # fmt: skip
    out.append("</div>")
    if len(by_queue) > CHART_QUEUES:
        out.append(f"<p class=notice>Only the first {CHART_QUEUES} queues are charted "
                   f"(of {len(by_queue)}); <code>/series?queue=…</code> answers any.</p>")  # fmt: skip
    return "".join(out)
