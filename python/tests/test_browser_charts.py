"""The queues page's charts over time in a real Chromium (issue 29): a scripted load
under the fake clock (enqueue, claim, complete, fail, and conductor.sample_queues at
chosen minutes of the last hour), then each chart shows exactly the numbers
conductor.queue_samples holds (a chart that draws nothing fails), the day range sums
them by 10 minutes, the live refresh draws a minute sampled after the page loaded,
/series answers the same numbers as JSON, and at 1280 and 1920 px nothing is drawn
over anything else; the screenshots go to docs/img. The browser fixtures are
test_browser.py's."""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from typing import Any

from test_browser import SCREENSHOTS, browser, dashboard, db_conn, expect, page  # noqa: F401 - fixtures

from pyconductor.dashboard import DashboardServer

MEASURES = ("finished", "failed", "depth", "oldest_age_s")


def _at(conn: Any, when: datetime) -> None:
    conn.execute("select set_config('conductor.fake_now', %s, false)", (when.isoformat(),))


def _bars(page: Any, queue: str, measure: str) -> dict[str, float]:  # noqa: F811
    """The bars of one chart: ISO time -> value, as drawn."""
    drawn = page.locator(f'section[data-chart-queue="{queue}"] svg[data-measure="{measure}"] rect.bar').evaluate_all(
        "els => els.map(e => [e.dataset.at, e.dataset.value, e.querySelector('title').textContent])")
    for at, value, title in drawn:
        assert title.endswith(f": {value}"), (title, value)  # the number a person reads on hover
    return {datetime.fromisoformat(at).isoformat(): float(value) for at, value, _ in drawn}


def _held(conn: Any, queue: str, first: datetime, last: datetime) -> dict[str, dict[str, float | None]]:
    """What the database holds per sampled minute in [first, last]: a measure -> value map per minute
    (a sampled minute without the queue's row counts 0; depth and age NULL when backfilled)."""
    rows = conn.execute(
        "select m.minute, m.sampled_at is not null as live, coalesce(s.finished, 0), coalesce(s.failed, 0), "
        "s.depth, extract(epoch from s.oldest_age)::float8 "
        "from conductor.sample_minutes m left join conductor.queue_samples s on s.minute = m.minute and s.queue = %s "
        "where m.minute between %s and %s order by m.minute", (queue, first, last)).fetchall()  # fmt: skip
    out: dict[str, dict[str, float | None]] = {}
    for minute, live, finished, failed, depth, age in rows:
        out[minute.isoformat()] = {
            "finished": finished, "failed": failed,
            "depth": (depth or 0) if live else None, "oldest_age_s": (age or 0.0) if live else None,
        }  # fmt: skip
    return out


def _overlaps(page: Any, selector: str) -> list[Any]:  # noqa: F811
    """Pairs of elements matching selector whose boxes intersect (by more than half a pixel)."""
    return page.evaluate(
        """sel => { const b = [...document.querySelectorAll(sel)].map(e => [e.outerHTML.slice(0, 80), e.getBoundingClientRect()]);
             const out = [];
             for (let i = 0; i < b.length; i++) for (let j = i + 1; j < b.length; j++) {
               const [p, r] = b[i], [q, s] = b[j];
               if (r.left + 0.5 < s.right && s.left + 0.5 < r.right && r.top + 0.5 < s.bottom && s.top + 0.5 < r.bottom)
                 out.push([p, q]);
             }
             return out; }""",
        selector,
    )


def test_the_charts_show_the_numbers_the_database_holds(page: Any, dashboard: DashboardServer,  # noqa: F811
                                                        db_conn: Any) -> None:  # noqa: F811  # fmt: skip
    db_conn.execute("update conductor.settings set fake_clock = true where one")
    now = db_conn.execute("select date_bin('1 minute', now(), timestamptz '2000-01-01 00:00:00+00')").fetchone()[0]

    def minute(n: int) -> datetime:
        return now - timedelta(minutes=n)

    # 41 minutes ago: the first sample (the day before it backfilled, all zeros)
    _at(db_conn, minute(40) + timedelta(seconds=5))
    db_conn.execute("select conductor.sample_queues()")
    # 30 minutes ago: 5 orders enqueued, 3 complete, 1 fails, 1 stays queued
    _at(db_conn, minute(30) + timedelta(seconds=10))
    db_conn.execute("select count(conductor.enqueue(kind => 'ch.order', queue => 'ch-orders')) from generate_series(1, 5)")
    attempts = [r[0] for r in db_conn.execute(
        "select attempt_id from conductor.claim(worker_id => 'ch-w', queues => array['ch-orders'], max_tasks => 4)")]  # fmt: skip
    for a in attempts[:3]:
        db_conn.execute("select conductor.complete(attempt_id => %s, result => '{}')", (a,))
    db_conn.execute("select conductor.fail(attempt_id => %s, error => '<b>out of stock</b>')", (attempts[3],))
    _at(db_conn, minute(29) + timedelta(seconds=5))
    db_conn.execute("select conductor.sample_queues()")  # 40..31 backfilled, 30 live
    # 10 minutes ago: 3 more orders and 2 mails wait
    _at(db_conn, minute(10) + timedelta(seconds=5))
    db_conn.execute("select count(conductor.enqueue(kind => 'ch.order', queue => 'ch-orders')) from generate_series(1, 3)")
    db_conn.execute("select count(conductor.enqueue(kind => 'ch.mail', queue => 'ch-mail')) from generate_series(1, 2)")
    db_conn.execute("select conductor.sample_queues()")  # 29..12 backfilled, 11 live

    # what the load says, independently of any chart code
    expected = {
        ("ch-orders", 30): {"finished": 4, "failed": 1, "depth": 1, "oldest_age_s": 55},
        ("ch-orders", 11): {"finished": 0, "failed": 0, "depth": 4, "oldest_age_s": 19 * 60 + 55},
        ("ch-mail", 11): {"finished": 0, "failed": 0, "depth": 2, "oldest_age_s": 0},
    }

    for width in (1280, 1920):
        page.set_viewport_size({"width": width, "height": 1000})
        page.goto(dashboard.url + "/")
        expect(page.locator("#charts")).to_have_attribute("data-range", "hour")
        for queue in ("ch-orders", "ch-mail"):
            first = datetime.fromisoformat(page.locator(f'section[data-chart-queue="{queue}"] svg rect.bar').first
                                           .get_attribute("data-at"))  # fmt: skip
            held = _held(db_conn, queue, first, now)
            assert held, "the database holds samples in the chart's hour"
            for measure in MEASURES:
                bars = _bars(page, queue, measure)
                want = {at: v[measure] for at, v in held.items() if v[measure] is not None}
                assert bars == {at: float(v) for at, v in want.items()}, (queue, measure)
            for (q, ago), values in expected.items():
                if q == queue:
                    for measure, value in values.items():
                        assert _bars(page, queue, measure)[minute(ago).isoformat()] == value, (queue, ago, measure)
        expect(page.locator('section[data-chart-queue="ch-mail"] h3')).to_have_text("ch-mail")
        # nothing drawn over anything else: the charts, their labels, the sections of the page
        assert _overlaps(page, "#charts svg.chart") == []
        for chart in page.locator("#charts svg.chart").all():
            labels = chart.evaluate("""svg => { const t = [...svg.querySelectorAll('text')].map(e => e.getBoundingClientRect());
                const out = []; for (let i = 0; i < t.length; i++) for (let j = i + 1; j < t.length; j++) {
                  const r = t[i], s = t[j];
                  if (r.left < s.right && s.left < r.right && r.top < s.bottom && s.top < r.bottom) out.push([i, j]); }
                return out; }""")  # fmt: skip
            assert labels == [], labels
        assert _overlaps(page, "#queues, #charts, #waiting-reasons, #workers") == []
        os.makedirs(SCREENSHOTS, exist_ok=True)
        page.screenshot(path=os.path.join(SCREENSHOTS, f"queues-charts-{width}.png"), full_page=True)

    # the live refresh: a minute sampled after the page loaded is drawn without a reload
    page.goto(dashboard.url + "/")
    assert minute(1).isoformat() not in _bars(page, "ch-orders", "depth")
    _at(db_conn, now + timedelta(seconds=2))
    db_conn.execute("select conductor.sample_queues()")  # 10..2 backfilled, 1 live
    db_conn.execute("select conductor.enqueue(kind => 'ch.order', queue => 'ch-other')")  # the event that refreshes
    expect(page.locator(f'section[data-chart-queue="ch-orders"] svg[data-measure="depth"] '
                        f'rect[data-at="{minute(1).isoformat()}"]')).to_have_attribute("data-value", "4")  # fmt: skip

    # the last day, by 10 minutes: the sums of the same samples
    page.locator("#range-day").click()
    expect(page.locator("#charts")).to_have_attribute("data-range", "day")
    day = _bars(page, "ch-orders", "finished")
    assert sum(day.values()) == 4 and len(day) >= 144
    assert _bars(page, "ch-orders", "failed")[max(at for at in day if at <= minute(30).isoformat())] == 1
    assert max(_bars(page, "ch-orders", "depth").values()) == 4

    # the same series as JSON, for scripts without Prometheus
    got = page.request.get(dashboard.url + "/series?range=hour&queue=ch-orders").json()
    assert got["range"] == "hour" and got["step_s"] == 60 and list(got["queues"]) == ["ch-orders"]
    points = {p["at"]: p for p in got["queues"]["ch-orders"]}
    p30 = points[minute(30).isoformat()]
    assert (p30["finished"], p30["failed"], p30["depth"], p30["oldest_age_s"]) == (4, 1, 1, 55.0)
    assert page.request.get(dashboard.url + "/series?range=week").status == 400
