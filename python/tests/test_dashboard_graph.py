"""The dashboard's graph page (``/graphs/{id}``) against a real PostgreSQL: a
graph's tasks drawn by layer from ``conductor.graph``, names escaped, each box
linked to its run page; a member's run page links to its graph; an unknown or
malformed graph id is 404."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from pyconductor import Conductor
from pyconductor.dashboard import DashboardServer


@pytest.fixture
def app(db_dsn: str) -> Iterator[Conductor]:
    with Conductor(db_dsn, pool_max=2) as app:
        yield app


@pytest.fixture
def client(db_dsn: str) -> Iterator[httpx.Client]:
    with DashboardServer(db_dsn, "127.0.0.1", 0) as server, httpx.Client(base_url=server.url, timeout=10) as client:
        yield client


def layers_of(page: str) -> list[list[tuple[int, str]]]:
    """[(task id, status) of each box] of each layer, in the page's order."""
    layers = re.findall(r'<li class=layer data-layer="\d+">(.*?)</ol></li>', page)
    return [[(int(t), s) for t, s in re.findall(r'data-task="(\d+)" data-role="[^"]+" data-status="([^"]+)"', part)]
            for part in layers]  # fmt: skip


def test_the_graph_page_draws_the_layers(app: Conductor, client: httpx.Client) -> None:
    graph = app.enqueue_graph([
        {"name": "fetch <eu>", "kind": "dash.fetch"},
        {"name": "fetch us", "kind": "dash.fetch"},
        {"name": "merge", "kind": "dash.merge", "after": ["fetch <eu>", "fetch us"]},
        {"name": "publish", "kind": "dash.publish", "after": ["merge"]},
    ], on_complete={"kind": "dash.done"})  # fmt: skip
    ids = graph.task_ids
    response = client.get(f"/graphs/{graph.graph_id}")
    assert response.status_code == 200
    page = response.text
    assert layers_of(page) == [
        sorted([(ids["fetch <eu>"], "queued"), (ids["fetch us"], "queued")], reverse=True),
        [(ids["merge"], "waiting")],
        [(ids["publish"], "waiting")],
        [(graph.on_complete, "waiting")],
    ]
    assert "fetch &lt;eu&gt;" in page and "fetch <eu>" not in page  # a name is text, never markup
    assert "after fetch &lt;eu&gt;, fetch us" in page or "after fetch us, fetch &lt;eu&gt;" in page
    assert f'href="/runs/{ids["merge"]}"' in page
    assert "5 tasks: queued 2, waiting 3" in page
    # a member's run page links to its graph
    run = client.get(f"/runs/{ids['merge']}").text
    assert f"<a id=graph-link href='/graphs/{graph.graph_id}'>graph {graph.graph_id}</a> (member merge)" in run


def test_an_unknown_or_malformed_graph_is_not_found(app: Conductor, client: httpx.Client) -> None:
    for bad in ("99999", "abc", "-1", str(2**63)):
        assert client.get(f"/graphs/{bad}").status_code == 404, bad
    task = app.enqueue("dash.plain", {})
    assert "graph-link" not in client.get(f"/runs/{task}").text  # a task in no graph links to none
