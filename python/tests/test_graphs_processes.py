"""Graphs with real worker processes (``python -m pyconductor worker --app
apps.graphs_app:app``) and a real PostgreSQL:

- a graph of 1,000 tasks in 10 layers, each after 1-3 tasks of the layer
  before, drains under 3 worker processes in dependency order (every task
  starts after each of its dependencies ended, and reads them all succeeded),
  and its on_complete callback runs once, on_failure never;
- a failing member: its dependents are cancelled, a run_on_failure member runs,
  on_failure runs once, on_complete once at the end with the statuses counted;
- a worker killed -9 while it runs a member: the member is recovered and the
  graph still drains, its callback once;
- the Node worker runs a graph the same way (``ctx.dependencies()`` in
  workers/node/graph_scenario.js); it fails, never skips, without node.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import REPO, wait_until
from processes import ChildProcess, Spawn, spawner

from pyconductor import Conductor

APP = "apps.graphs_app:app"
# lease 2 s, heartbeat 0.5 s, reap 0.5 s, poll 0.5 s
SHORT = ("--lease", "2", "--heartbeat", "0.5", "--reap", "0.5", "--poll", "0.5", "--no-scheduler")


def q(dsn: str, query: str, params: Any = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


@pytest.fixture
def side(db_dsn: str) -> str:
    q(db_dsn, "create table node_runs (task_id bigint not null, started timestamptz not null, ended timestamptz,"
              " pid integer not null, deps_succeeded text[] not null)")  # fmt: skip
    q(db_dsn, "create table callback_runs (task_id bigint not null, kind text not null, payload jsonb not null,"
              " pid integer not null)")  # fmt: skip
    q(db_dsn, "grant all on node_runs, callback_runs to public")
    return db_dsn


@pytest.fixture
def spawn(side: str, tmp_path: Path) -> Iterator[Spawn]:
    with spawner(side, tmp_path, APP, *SHORT) as start:
        yield start


def layered_graph(layers: int, width: int, seed: int = 31) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    members: list[dict[str, Any]] = []
    for layer in range(layers):
        for i in range(width):
            after = [] if layer == 0 else sorted({f"n{layer - 1}_{rng.randrange(width)}" for _ in range(rng.randint(1, 3))})
            members.append({"name": f"n{layer}_{i}", "kind": "node", "payload": {"n": layer * width + i},
                            "after": after})  # fmt: skip
    rng.shuffle(members)  # the declaration's order is not the run's
    return members


def test_a_graph_of_1000_drains_in_dependency_order_under_3_workers(side: str, spawn: Spawn) -> None:
    dsn = side
    members = layered_graph(10, 100)
    with Conductor(dsn) as app:
        graph = app.enqueue_graph(members, on_complete={"kind": "graph_done"}, on_failure={"kind": "graph_failed"})
    assert len(graph.task_ids) == 1000
    # a lease no report of a loaded machine outlasts: each member runs once (a lost lease would run it again,
    # which at-least-once allows; the kill test below is about that)
    workers = [spawn("--concurrency", "8", "--lease", "30", "--heartbeat", "2") for _ in range(3)]
    wait_until(lambda: q(dsn, "select count(*) from callback_runs")[0][0] >= 1, timeout=180,
               message="the graph's on_complete ran")  # fmt: skip

    assert q(dsn, "select count(*), count(distinct task_id) from node_runs") == [(1000, 1000)]
    # every task started after each of its dependencies had ended, and read them all succeeded
    early = q(dsn, """select e.task_id, e.dependency_id from conductor.graph_edges e
                        join node_runs r on r.task_id = e.task_id join node_runs d on d.task_id = e.dependency_id
                       where r.started <= d.ended""")
    assert early == []
    names = {task_id: name for name, task_id in graph.task_ids.items()}
    after = {graph.task_ids[m["name"]]: sorted(m["after"]) for m in members}
    runs = q(dsn, "select task_id, deps_succeeded from node_runs")
    assert all(sorted(deps) == after[task_id] for task_id, deps in runs), "a task read the wrong dependencies"
    assert len({pid for (pid,) in q(dsn, "select distinct pid from node_runs")}) == 3, "all three workers took part"
    # on_complete once, every member counted; on_failure never ran
    callbacks = q(dsn, "select task_id, kind, payload from callback_runs")
    assert callbacks == [(graph.on_complete, "graph_done", {"graph": {"graph_id": graph.graph_id,
                                                                      "statuses": {"succeeded": 1000}}})]  # fmt: skip
    assert q(dsn, "select status::text from conductor.tasks where id = %s", (graph.on_failure,)) == [("cancelled",)]
    assert q(dsn, "select count(*) from conductor.tasks where graph_id = %s and status <> 'succeeded'",
             (graph.graph_id,)) == [(0,)]  # fmt: skip
    assert all(w.alive() for w in workers), names and workers[0].output()[-2000:]


def test_a_failing_member_cancels_its_dependents_and_calls_on_failure_once(side: str, spawn: Spawn) -> None:
    dsn = side
    with Conductor(dsn) as app:
        graph = app.enqueue_graph([
            {"name": "a", "kind": "node", "payload": {"n": 1}},
            {"name": "b", "kind": "fail_node", "payload": {"n": 2}},
            {"name": "c", "kind": "fail_node", "payload": {"n": 3}},
            {"name": "d", "kind": "node", "payload": {"n": 4}, "after": ["a", "b"]},
            {"name": "e", "kind": "node", "payload": {"n": 5}, "after": ["d"]},
            {"name": "f", "kind": "node", "payload": {"n": 6}, "after": ["b", "c"], "run_on_failure": True},
        ], on_complete=("graph_done", {}), on_failure=("graph_failed", {}))  # fmt: skip
    spawn("--concurrency", "4")
    spawn("--concurrency", "4")
    wait_until(lambda: q(dsn, "select count(*) from callback_runs where kind = 'graph_done'")[0][0] == 1, timeout=60,
               message="on_complete ran")  # fmt: skip
    statuses = dict(q(dsn, "select n.name, t.status::text from conductor.graph_nodes n join conductor.tasks t"
                           " on t.id = n.task_id where n.graph_id = %s", (graph.graph_id,)))  # fmt: skip
    assert statuses == {"a": "succeeded", "b": "failed", "c": "failed", "d": "cancelled", "e": "cancelled",
                        "f": "succeeded"}  # fmt: skip
    failed = q(dsn, "select payload from callback_runs where kind = 'graph_failed'")
    assert len(failed) == 1
    assert failed[0][0]["graph"]["failed"]["name"] in ("b", "c")
    (done,), = q(dsn, "select payload from callback_runs where kind = 'graph_done'")
    assert done["graph"]["statuses"] == {"succeeded": 2, "failed": 2, "cancelled": 2}
    # f ran after both failures, and read no succeeded dependency
    assert q(dsn, "select deps_succeeded from node_runs where task_id = %s", (graph.task_ids["f"],)) == [([],)]


def test_a_graph_drains_after_a_worker_is_killed_mid_member(side: str, spawn: Spawn) -> None:
    dsn = side
    members = layered_graph(4, 25, seed=7)
    with Conductor(dsn) as app:
        graph = app.enqueue_graph(members, on_complete={"kind": "graph_done"})
    first = spawn("--concurrency", "4")
    wait_until(lambda: q(dsn, "select count(*) from node_runs")[0][0] >= 10, timeout=60, message="members ran")
    first.kill9()
    spawn("--concurrency", "4")
    wait_until(lambda: q(dsn, "select count(*) from callback_runs")[0][0] >= 1, timeout=90,
               message="on_complete ran after the kill")  # fmt: skip
    assert q(dsn, "select count(*) from conductor.tasks where graph_id = %s and status = 'succeeded'",
             (graph.graph_id,)) == [(100,)]  # fmt: skip
    assert q(dsn, "select count(*) from callback_runs") == [(1,)]
    early = q(dsn, """select e.task_id from conductor.graph_edges e
                        join node_runs r on r.task_id = e.task_id join node_runs d on d.task_id = e.dependency_id
                       where r.started <= d.started""")
    assert early == []


def test_the_node_worker_runs_a_graph(side: str, tmp_path: Path) -> None:
    dsn = side
    node_dir = REPO / "workers" / "node"
    assert shutil.which("node") is not None, "node is not installed: scripts/install-deps.sh installs Node.js"
    assert (node_dir / "node_modules" / "pg").is_dir(), "run `npm ci` in workers/node (scripts/install-deps.sh does)"
    with Conductor(dsn) as app:
        graph = app.enqueue_graph([
            {"name": "one", "kind": "graph.value", "payload": {"value": 1}, "queue": "graph-node"},
            {"name": "two", "kind": "graph.value", "payload": {"value": 2}, "queue": "graph-node"},
            {"name": "sum", "kind": "graph.sum", "after": ["one", "two"], "queue": "graph-node"},
        ], on_complete={"kind": "graph.report", "queue": "graph-node"})  # fmt: skip
    worker = ChildProcess(["node", str(node_dir / "main.js"), "--handlers", str(node_dir / "graph_scenario.js"),
                           "--queues", "graph-node", "--poll", "0.5", "--worker-id", "node-graph"],
                          env={**os.environ, "CONDUCTOR_DSN": dsn}, cwd=REPO, log=tmp_path / "node.log")  # fmt: skip
    try:
        assert graph.on_complete is not None
        done = app_result(dsn, graph.on_complete)
        assert done == {"succeeded": 3}, worker.output()[-2000:]
        assert app_result(dsn, graph.task_ids["sum"]) == {"sum": 3, "from": ["one", "two"]}
    finally:
        worker.close()


def app_result(dsn: str, task_id: int) -> Any:
    with Conductor(dsn) as app:
        return app.result(task_id, timeout=60).result
