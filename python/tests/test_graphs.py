"""Graphs through the Python clients (sync and asyncio) against a real
PostgreSQL: enqueue_graph resolves each member's registered options and
answers the ids by name, the errors map to their classes, graph() and
dependency_results() read what the database decided, cancel_graph cancels;
a Worker in this process runs a graph whose member reads ctx.dependencies()."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from helpers import wait_until

from pyconductor import (
    Conductor,
    DependencyCycle,
    Graph,
    GraphNotFound,
    InvalidGraph,
    TaskContext,
    UnknownDependency,
    Worker,
)
from pyconductor.aio import AsyncConductor


@pytest.fixture
def app(db_dsn: str) -> Iterator[Conductor]:
    with Conductor(db_dsn, pool_max=4) as app:

        @app.task("g.fetch", queue="graph-py", priority=2)
        def fetch(payload: dict[str, Any]) -> dict[str, Any]:
            return {"rows": payload["rows"]}

        @app.task("g.merge", queue="graph-py")
        def merge(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
            deps = ctx.dependencies()
            return {"rows": sum(d["result"]["rows"] for d in deps.values()), "from": sorted(deps)}

        @app.task("g.done", queue="graph-py")
        def done(payload: dict[str, Any]) -> dict[str, Any]:
            return dict(payload["graph"]["statuses"])

        yield app


MEMBERS = [
    {"name": "eu", "kind": "g.fetch", "payload": {"rows": 2}},
    {"name": "us", "kind": "g.fetch", "payload": {"rows": 3}, "priority": 5},
    {"name": "all", "kind": "g.merge", "after": ["eu", "us"]},
]


def test_enqueue_graph_resolves_registered_options_and_answers_ids_by_name(app: Conductor, db_dsn: str) -> None:
    graph = app.enqueue_graph(MEMBERS, on_complete={"kind": "g.done"})
    assert isinstance(graph, Graph) and set(graph.task_ids) == {"eu", "us", "all"}
    assert graph.on_complete is not None and graph.on_failure is None
    with psycopg.connect(db_dsn) as conn:
        found = conn.execute("select id, queue, priority, status::text, graph_id from conductor.tasks"
                             " where id = any(%s)", (list(graph.task_ids.values()),)).fetchall()  # fmt: skip
    rows = {r[0]: r[1:] for r in found}
    assert rows[graph.task_ids["eu"]] == ("graph-py", 2, "queued", graph.graph_id)
    assert rows[graph.task_ids["us"]] == ("graph-py", 5, "queued", graph.graph_id)
    assert rows[graph.task_ids["all"]] == ("graph-py", 0, "waiting", graph.graph_id)
    nodes = app.graph(graph.graph_id)
    assert [(n.name, n.role, n.layer) for n in nodes][-2:] == [("all", "member", 1), (None, "on_complete", 2)]
    assert nodes[-2].after == sorted([graph.task_ids["eu"], graph.task_ids["us"]])


def test_a_worker_runs_the_graph_and_its_callback(app: Conductor) -> None:
    graph = app.enqueue_graph(MEMBERS, on_complete=("g.done", {}))
    worker = Worker(app, queues=["graph-py"], heartbeat_interval=0.2, poll_interval=0.2, reap_interval=30,
                    shutdown_grace=5, run_scheduler=False, concurrency=2, code_version="g1")  # fmt: skip
    worker.start()
    try:
        assert graph.on_complete is not None
        assert app.result(graph.on_complete, timeout=30).result == {"succeeded": 3}
    finally:
        worker.stop()
    last = app.get(graph.task_ids["all"])
    assert last.result == {"rows": 5, "from": ["eu", "us"]}
    assert (last.graph_id, last.code_version) == (graph.graph_id, "g1")  # get_task shows both (issue 31)
    deps = app.dependency_results(graph.task_ids["all"])
    assert {name: d["status"] for name, d in deps.items()} == {"eu": "succeeded", "us": "succeeded"}


@pytest.mark.parametrize(("members", "error", "text"), [
    ([{"name": "a", "kind": "g.fetch"}, {"name": "a", "kind": "g.fetch"}], InvalidGraph, "more than one member"),
    ([{"name": "a", "kind": "g.fetch", "after": ["z"]}], UnknownDependency, "'z'"),
    ([{"name": "a", "kind": "g.fetch", "after": ["b"]}, {"name": "b", "kind": "g.fetch", "after": ["a"]}],
     DependencyCycle, "'a, b'"),
])  # fmt: skip
def test_bad_declarations_raise_their_classes(app: Conductor, members: list[dict[str, Any]],
                                              error: type[Exception], text: str) -> None:  # fmt: skip
    with pytest.raises(error, match=text):
        app.enqueue_graph(members)


def test_cancel_graph_and_an_unknown_graph(app: Conductor) -> None:
    graph = app.enqueue_graph(MEMBERS, on_failure={"kind": "g.done"})
    assert app.cancel_graph(graph.graph_id) == 4
    assert {n.status for n in app.graph(graph.graph_id)} == {"cancelled"}
    with pytest.raises(GraphNotFound):
        app.cancel_graph(-1)
    with pytest.raises(GraphNotFound):
        app.graph(-1)


def test_the_async_client_runs_the_same_calls(app: Conductor, db_dsn: str) -> None:
    async def main() -> tuple[Graph, int]:
        async with AsyncConductor(db_dsn, app=app) as aapp:
            graph = await aapp.enqueue_graph(MEMBERS, on_complete={"kind": "g.done"})
            nodes = await aapp.graph(graph.graph_id)
            assert [n.name for n in nodes if n.role == "member"][-1] == "all"
            assert await aapp.dependency_results(graph.task_ids["all"]) != {}
            return graph, await aapp.cancel_graph(graph.graph_id)

    graph, cancelled = asyncio.run(main())
    assert cancelled == 4
    assert app.get(graph.task_ids["us"]).queue == "graph-py"  # the registry's options, as the sync client's
    wait_until(lambda: app.get(graph.task_ids["all"]).status == "cancelled", timeout=5, message="cancelled")
