"""A graph on the dashboard, in a real Chromium (issue 31): /graphs/{id} draws the
members by layer, and when the dependencies finish the page shows, without a
reload (the live refresh), the member after them queued; its box links to its run
page, which links back to the graph. The browser fixtures are test_browser.py's."""

from __future__ import annotations

from typing import Any

from test_browser import browser, dashboard, db_conn, expect, page  # noqa: F401 - fixtures

from pyconductor.dashboard import DashboardServer


def test_the_graph_page_shows_a_member_released_live(page: Any, dashboard: DashboardServer, db_conn: Any) -> None:  # noqa: F811
    rows = db_conn.execute(
        "select name, task_id, graph_id from conductor.enqueue_graph(tasks => %s::jsonb)",
        ('[{"name": "fetch eu", "kind": "bg.fetch", "queue": "bg-graph"},'
         ' {"name": "fetch us", "kind": "bg.fetch", "queue": "bg-graph"},'
         ' {"name": "merge", "kind": "bg.merge", "queue": "bg-graph", "after": ["fetch eu", "fetch us"]}]',),
    ).fetchall()  # fmt: skip
    ids = {name: task_id for name, task_id, _ in rows}
    graph_id = rows[0][2]
    page.goto(f"{dashboard.url}/graphs/{graph_id}")
    merge = page.locator(f'li.node[data-task="{ids["merge"]}"]')
    expect(page.locator("li.layer")).to_have_count(2)
    expect(page.locator('li.layer[data-layer="0"] li.node')).to_have_count(2)
    expect(merge).to_have_attribute("data-status", "waiting")
    expect(merge).to_contain_text("after fetch")

    db_conn.execute("select conductor.complete(attempt_id, '{}') from conductor.claim(worker_id => 'bg-w',"
                    " queues => array['bg-graph'], max_tasks => 10)")  # fmt: skip
    expect(merge).to_have_attribute("data-status", "queued")  # no reload: the page refreshed itself
    expect(page.locator('li.layer[data-layer="0"] li.node[data-status="succeeded"]')).to_have_count(2)

    merge.locator("a").click()
    expect(page.locator("h1")).to_contain_text(f"Task {ids['merge']}")
    page.locator("#graph-link").click()
    expect(page.locator("h1")).to_contain_text(f"Graph {graph_id}")
