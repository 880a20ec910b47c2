"""Search, in a real Chromium (issue 29): on a scripted set of tasks, the /search page
finds exactly the matching ids, newest first, by each filter (kind, queue, status,
dedupe key, a payload field, enqueued and finished time); "older" pages through
the matches without a gap or a repeat; a page whose scan was cut short says so and
"search further" goes on; a payload holding markup is shown as text. It takes the
screenshots docs/operations.md shows, checking that nothing is drawn over
anything else. The browser fixtures are test_browser.py's."""

from __future__ import annotations

import json
import os
from typing import Any

from test_browser import SCREENSHOTS, browser, dashboard, db_conn, expect, page  # noqa: F401 - fixtures

from pyconductor.dashboard import DashboardServer


def _at(conn: Any, when: str) -> None:
    conn.execute("select set_config('conductor.fake_now', %s, false)", (f"2031-01-01 {when}+00",))


def _enqueue(conn: Any, kind: str, payload: dict[str, Any], queue: str, dedupe_key: str | None = None) -> int:
    row = conn.execute("select conductor.enqueue(kind => %s, payload => %s::jsonb, queue => %s, dedupe_key => %s)",
                       (kind, json.dumps(payload), queue, dedupe_key)).fetchone()  # fmt: skip
    return int(row[0])


def _claim(conn: Any, queue: str) -> int:
    row = conn.execute("select attempt_id from conductor.claim(worker_id => 'bs-worker', queues => %s, max_tasks => 1)",
                       ([queue],)).fetchone()  # fmt: skip
    return int(row[0])


def _tasks(conn: Any) -> dict[str, int]:
    """The scripted tasks, one an hour on the fake clock (e1 oldest)."""
    conn.execute("update conductor.settings set fake_clock = true")
    conn.execute("select conductor.register_worker(worker_id => 'bs-worker', queues => array['bs-a', 'bs-b'])")
    t: dict[str, int] = {}
    _at(conn, "00:00")
    t["e1"] = _enqueue(conn, "bs.mail", {"order": 1, "customer": "ann"}, "bs-a")
    _at(conn, "00:10")
    conn.execute("select conductor.complete(%s, '{}')", (_claim(conn, "bs-a"),))
    _at(conn, "01:00")
    t["e2"] = _enqueue(conn, "bs.bill", {"order": 2, "customer": "bob"}, "bs-a", "inv-2")
    _at(conn, "01:10")
    conn.execute("select conductor.fail(%s, 'card declined')", (_claim(conn, "bs-a"),))
    _at(conn, "02:00")
    t["e3"] = _enqueue(conn, "bs.mail", {"order": 3, "customer": "bob"}, "bs-b")
    _at(conn, "03:00")
    t["e4"] = _enqueue(conn, "bs.mail", {"order": 4, "note": "<script>window.pwned=1</script>"}, "bs-a", "inv-4")
    _at(conn, "04:00")
    for name in ("e5", "e6", "e7"):
        t[name] = _enqueue(conn, "bs.mail", {"order": int(name[1])}, "bs-b")
    conn.execute("select set_config('conductor.fake_now', '', false)")
    return t


def _ids(tab: Any) -> list[int]:
    return [int(i) for i in tab.locator("#results tr[data-id]").evaluate_all("rs => rs.map(r => r.dataset.id)")]


def _search(tab: Any, url: str, **fields: str) -> list[int]:
    """Fill the form with ``fields`` (the others left empty) and search; the ids found."""
    tab.goto(f"{url}/search")
    for name, value in fields.items():
        if name == "status":
            tab.locator("#f-status").select_option(value)
        else:
            tab.locator(f"#f-{name}").fill(value)
    with tab.expect_navigation():
        tab.locator("#search-go").click()
    expect(tab.locator("#results, #empty, #search-error").first).to_be_visible()
    return _ids(tab)


def test_search_by_each_filter(page: Any, dashboard: DashboardServer, db_conn: Any) -> None:  # noqa: F811
    t = _tasks(db_conn)
    url = dashboard.url
    e = [t[f"e{n}"] for n in range(8) if f"e{n}" in t]
    e1, e2, e3, e4, e5, e6, e7 = e
    assert _search(page, url, kind="bs.mail") == [e7, e6, e5, e4, e3, e1]
    assert _search(page, url, queue="bs-a") == [e4, e2, e1]
    assert _search(page, url, status="failed") == [e2]
    assert _search(page, url, status="queued", queue="bs-b") == [e7, e6, e5, e3]
    assert _search(page, url, dedupe_key="inv-4") == [e4]
    assert _search(page, url, dedupe_key="inv-2") == [e2]  # finished: found by the walk, not the index
    assert _search(page, url, payload='{"customer": "bob"}') == [e3, e2]
    assert _search(page, url, payload='{"customer": "bob"}', kind="bs.mail") == [e3]
    assert _search(page, url, enqueued_after="2031-01-01 01:00", enqueued_before="2031-01-01 03:00") == [e3, e2]
    assert _search(page, url, finished_after="2031-01-01 00:30") == [e2]
    assert _search(page, url, kind="nobody.has.this") == []
    expect(page.locator("#empty")).to_have_text("No tasks match.")
    # what was typed stays in the form
    _search(page, url, kind="bs.mail", payload='{"order": 3}')
    expect(page.locator("#f-kind")).to_have_value("bs.mail")
    expect(page.locator("#f-payload")).to_have_value('{"order": 3}')
    assert _ids(page) == [e3]

    # a payload that is not an object, a time that is not one: said on the page, nothing searched
    _search(page, url, payload="[1, 2]")
    expect(page.locator("#search-error")).to_contain_text("payload contains must be a JSON object")
    page.goto(f"{url}/search?enqueued_after=yesterday")
    expect(page.locator("#search-error")).to_contain_text("is a time like 2026-12-06 04:00 (UTC unless it names an offset), not 'yesterday'")
    page.goto(f"{url}/search?enqueued_after=2031-01-02&enqueued_before=2031-01-01")
    expect(page.locator("#search-error")).to_contain_text("empty enqueued range")

    # markup in a payload is text: no script ran, no element was made of it
    page.goto(f"{url}/search?dedupe_key=inv-4")
    expect(page.locator(f'#results tr[data-id="{e4}"] td.payload')).to_contain_text("<script>window.pwned=1</script>")
    expect(page.locator("#results script")).to_have_count(0)
    assert page.evaluate("() => window.pwned") is None


def test_search_pages_and_goes_further(page: Any, dashboard: DashboardServer, db_conn: Any) -> None:  # noqa: F811
    t = _tasks(db_conn)
    url = dashboard.url
    # pages of two: every bs.mail task once, newest first, then no "older"
    page.goto(f"{url}/search?kind=bs.mail&limit=2")
    seen = _ids(page)
    while page.locator("#older").count():
        with page.expect_navigation():
            page.locator("#older").click()
        seen += _ids(page)
    assert seen == [t["e7"], t["e6"], t["e5"], t["e4"], t["e3"], t["e1"]]
    expect(page.locator("#newest")).to_be_visible()

    # two tasks examined a page: a page cut short says so, and "search further" goes on to the match
    page.goto(f"{url}/search?kind=bs.bill&scan=2")
    expect(page.locator("#cut-short")).to_contain_text(f"examined 2 tasks, down to task {t['e6']}")
    expect(page.locator("#empty")).to_have_text("No tasks match in the tasks examined.")
    found: list[int] = []
    for _ in range(10):
        if not page.locator("#search-further").count():
            break
        with page.expect_navigation():
            page.locator("#search-further").click()
        found += _ids(page)
    assert found == [t["e2"]]
    expect(page.locator("#f-kind")).to_have_value("bs.bill")


def _overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return (a["x"] < b["x"] + b["width"] - 0.5 and b["x"] < a["x"] + a["width"] - 0.5
            and a["y"] < b["y"] + b["height"] - 0.5 and b["y"] < a["y"] + a["height"] - 0.5)  # fmt: skip


def test_search_page_layout(page: Any, dashboard: DashboardServer, db_conn: Any) -> None:  # noqa: F811
    _tasks(db_conn)
    for width in (1280, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{dashboard.url}/search?queue=bs-a")
        expect(page.locator("#results")).to_be_visible()
        # the form's fields, the results' header cells and the results' rows: none over another
        fields = page.locator("form#search label, #search-go").evaluate_all(
            "els => els.map(e => { const r = e.getBoundingClientRect();"
            " return {x: r.x, y: r.y, width: r.width, height: r.height}; })"
        )
        cells = page.locator("#results th").evaluate_all(
            "els => els.map(e => { const r = e.getBoundingClientRect();"
            " return {x: r.x, y: r.y, width: r.width, height: r.height}; })"
        )
        for group in (fields, cells):
            for i, a in enumerate(group):
                for b in group[i + 1 :]:
                    assert not _overlaps(a, b), (width, a, b)
        # no text runs out of its cell (over the next one)
        spilled = page.locator("#results th, #results td").evaluate_all(
            "els => els.filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.outerHTML)")
        assert spilled == [], (width, spilled)
        form = page.locator("form#search").bounding_box()
        table = page.locator("#results").bounding_box()
        assert form is not None and table is not None
        assert form["y"] + form["height"] <= table["y"], (width, form, table)
        # nothing wider than the window: no cell pushed out of sight
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width
        os.makedirs(SCREENSHOTS, exist_ok=True)
        page.screenshot(path=os.path.join(SCREENSHOTS, f"search-{width}.png"), full_page=True)
