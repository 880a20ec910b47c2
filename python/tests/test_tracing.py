"""OpenTelemetry traces end to end (issue 27), as real processes on a real PostgreSQL.

A Django view, called through the test client inside a SERVER span of this
process (its own SDK provider, an InMemorySpanExporter; not the global one, so
no other test is traced), enqueues the Django task ``trace_hop``; a
``manage.py conductor_worker`` process runs it, and it enqueues ``otel.b`` on a
queue only a ``pyconductor worker`` process serves; ``otel.b`` runs a durable
step and spawns ``otel.c`` on a queue only the Node worker serves, which runs a
step of its own. Each worker process writes its finished spans to a file
(python/tests/otel_site/sitecustomize.py, workers/node/tracing_scenario.js).

The assertions: one trace throughout; each task's stored traceparent is the
span that enqueued it; each attempt's CONSUMER span has that span as parent
and as link, the messaging conventions' attributes and Conductor's; each step
is a child span of its attempt's; a failing handler's span has ERROR status
and the exception, in Python and in Node; a wait that parks a task ends its
attempt's span without error.

The Node part fails (never skips) when node or workers/node/node_modules is
missing: scripts/install-deps.sh installs both.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import NO_DJANGO, wait_until
from lifecycle.runner import NODE_DIR, node_problem
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from processes import TESTS, ChildProcess

from pyconductor import Conductor

pytest.importorskip("django", reason=NO_DJANGO)

from django.test import Client
from django_project import harness

SITE = TESTS / "otel_site"
Span = dict[str, Any]


def _env(base: dict[str, str], spans: Path) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(SITE), base.get("PYTHONPATH", "")) if p)
    return {**base, "PYTHONPATH": path, "CONDUCTOR_TEST_SPANS": str(spans), "PYTHONUNBUFFERED": "1"}


@pytest.fixture
def workers(db_dsn: str, tmp_path: Path) -> Iterator[dict[str, Path]]:
    """The three worker processes, each on its own queues; the files their spans go to."""
    if problem := node_problem():
        pytest.fail(f"the Node worker cannot run: {problem}")
    if not (NODE_DIR / "node_modules" / "@opentelemetry" / "sdk-trace-base").is_dir():
        pytest.fail(f"{NODE_DIR}/node_modules has no @opentelemetry/sdk-trace-base: run `npm ci` in workers/node")
    files = {name: tmp_path / f"{name}.jsonl" for name in ("django", "python", "node")}
    for path in files.values():
        path.touch()
    procs = [
        ChildProcess([sys.executable, str(harness.PROJECT / "manage.py"), "conductor_worker", "--queues", "default",
                      "--no-scheduler", "--worker-id", "otel-django"],
                     env=_env(harness.manage_env(db_dsn, harness.WORKER_APPNAME), files["django"]),
                     cwd=harness.PROJECT, log=tmp_path / "django.log"),
        ChildProcess([sys.executable, "-m", "pyconductor", "worker", "--app", "apps.otel_app:app", "--queues", "otel-b",
                      "--worker-id", "otel-python", "--no-scheduler"],
                     env=_env({**os.environ, "CONDUCTOR_DSN": db_dsn}, files["python"]),
                     cwd=TESTS, log=tmp_path / "python.log"),
        ChildProcess(["node", str(NODE_DIR / "main.js"), "--handlers", str(NODE_DIR / "tracing_scenario.js"),
                      "--queues", "otel-node", "--worker-id", "otel-node", "--poll", "1"],
                     env={**os.environ, "CONDUCTOR_DSN": db_dsn, "CONDUCTOR_TEST_SPANS": str(files["node"])},
                     cwd=NODE_DIR, log=tmp_path / "node.log"),
    ]  # fmt: skip
    try:
        yield files
    finally:
        for proc in procs:
            proc.close()


def _spans(files: dict[str, Path]) -> list[Span]:
    return [json.loads(line) for path in files.values() for line in path.read_text().splitlines() if line]


def _logs(tmp_path: Path) -> str:
    return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-2000:]}" for p in sorted(tmp_path.glob("*.log")))


def _task(conn: psycopg.Connection[Any], kind: str) -> dict[str, Any]:
    row = conn.execute("select id, status::text as status, queue, root_id, parent_id, traceparent "
                       "from conductor.tasks where kind = %s order by id", (kind,)).fetchall()  # fmt: skip
    assert len(row) == 1, f"{kind}: {row}"
    return dict(zip(("id", "status", "queue", "root_id", "parent_id", "traceparent"), row[0], strict=True))


def _consumer(spans: list[Span], task_id: int) -> list[Span]:
    return [s for s in spans if s["kind"] == "CONSUMER" and s["attributes"].get("messaging.message.id") == str(task_id)]


def test_one_trace_from_a_django_view_through_python_and_node_workers(
    db_dsn: str, tmp_path: Path, workers: dict[str, Path]
) -> None:
    harness.use(db_dsn)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    try:
        with tracer.start_as_current_span("POST /traced/", kind=trace.SpanKind.SERVER):
            response = Client().post("/traced/", {"label": "abcd"})
        assert response.status_code == 200, response.content
        with Conductor(db_dsn) as app, tracer.start_as_current_span("enqueue failures"):
            app.enqueue("otel.fails", {"why": "test"}, queue="otel-b")
            app.enqueue("otel.node_fails", queue="otel-node")
            app.enqueue("otel.waits", queue="otel-b")
    finally:
        harness.close()
    web, failures = sorted(exporter.get_finished_spans(), key=lambda s: s.name == "enqueue failures")
    assert web.context is not None and failures.context is not None
    trace_id, web_id = f"{web.context.trace_id:032x}", f"{web.context.span_id:016x}"

    kinds = ("django_project.shop.tasks.trace_hop", "otel.b", "otel.c", "otel.fails", "otel.node_fails", "otel.waits")
    with psycopg.connect(db_dsn, autocommit=True) as conn:

        def finished() -> bool:
            rows = conn.execute("select count(*) from conductor.tasks where kind = any(%s) "
                                "and status in ('succeeded', 'failed')", (list(kinds),)).fetchone()  # fmt: skip
            return rows is not None and rows[0] == len(kinds)

        wait_until(finished, timeout=90, interval=0.1, message=lambda: _logs(tmp_path))
        a, b, c = (_task(conn, kind) for kind in kinds[:3])
        fails, node_fails, waits = (_task(conn, kind) for kind in kinds[3:])
    assert [a["status"], b["status"], c["status"], waits["status"]] == ["succeeded"] * 4
    assert [fails["status"], node_fails["status"]] == ["failed", "failed"]

    # every attempt's span is written when it ends, before its report: all there once the tasks finished
    wait_until(lambda: len(_spans(workers)) >= 9, timeout=10, message=lambda: f"{_spans(workers)}\n{_logs(tmp_path)}")
    spans = _spans(workers)
    [span_a], [span_b], [span_c] = (_consumer(spans, t["id"]) for t in (a, b, c))
    [step_b] = [s for s in spans if s["name"] == "step count"]
    [step_c] = [s for s in spans if s["name"] == "step double"]

    # one trace, across three worker processes of two languages
    flow = [span_a, span_b, step_b, span_c, step_c]
    assert {s["trace_id"] for s in flow} == {trace_id}
    assert len({span_a["process"], span_b["process"], span_c["process"]}) == 3
    assert span_c["process"] == "node"

    # each task stores the span that enqueued it, and its attempt's span continues it (parent and link)
    for task, consumer, enqueuer in (
        (a, span_a, web_id),
        (b, span_b, span_a["span_id"]),
        (c, span_c, span_b["span_id"]),
    ):
        version_ids, flags = task["traceparent"].rsplit("-", 1)
        assert version_ids == f"00-{trace_id}-{enqueuer}" and int(flags, 16) & 1, task  # sampled
        assert consumer["parent_span_id"] == enqueuer, consumer
        assert consumer["links"] == [{"trace_id": trace_id, "span_id": enqueuer}], consumer
        assert consumer["kind"] == "CONSUMER" and consumer["status"] == "UNSET", consumer
    assert span_a["name"] == "process django_project.shop.tasks.trace_hop"
    assert [span_b["name"], span_c["name"]] == ["process otel.b", "process otel.c"]

    # the steps are children of their attempt's span
    assert (step_b["parent_span_id"], step_b["kind"]) == (span_b["span_id"], "INTERNAL")
    assert (step_c["parent_span_id"], step_c["kind"]) == (span_c["span_id"], "INTERNAL")
    assert step_b["attributes"]["conductor.step.name"] == "count"
    assert step_c["attributes"]["conductor.step.name"] == "double"

    # the messaging conventions, and Conductor's attributes
    for task, consumer in ((a, span_a), (b, span_b), (c, span_c)):
        attributes = consumer["attributes"]
        assert {k: attributes[k] for k in ("messaging.system", "messaging.operation.type", "messaging.operation.name",
                                           "messaging.destination.name", "messaging.message.id")} == {
            "messaging.system": "conductor", "messaging.operation.type": "process",
            "messaging.operation.name": "process", "messaging.destination.name": task["queue"],
            "messaging.message.id": str(task["id"]),
        }, consumer  # fmt: skip
        assert attributes["conductor.run.id"] == task["root_id"]
        assert attributes.get("conductor.task.parent_id") == task["parent_id"]
        assert attributes["conductor.attempt.number"] == 1
        assert isinstance(attributes["conductor.attempt.id"], int)
    assert span_a["attributes"]["conductor.task.kind"] == kinds[0]
    assert span_a["attributes"]["conductor.worker.id"] == "otel-django"
    assert (c["parent_id"], c["root_id"]) == (b["id"], b["id"])  # spawned: a child of b's run
    assert span_c["attributes"]["conductor.worker.id"] == "otel-node"

    # a failing handler: ERROR status and the exception, in Python and in Node
    failures_id = f"{failures.context.span_id:016x}"
    [span_fails], [span_node_fails] = _consumer(spans, fails["id"]), _consumer(spans, node_fails["id"])
    for span, message in ((span_fails, "python handler fails: test"), (span_node_fails, "node handler fails")):
        assert span["status"] == "ERROR" and message in span["status_message"] and "exception" in span["events"], span
        assert span["parent_span_id"] == failures_id
    assert span_fails["process"] == span_b["process"] and span_node_fails["process"] == "node"

    # a wait that parks the task ends its attempt's span without error; the next attempt finishes the task
    parked, resumed = sorted(_consumer(spans, waits["id"]), key=lambda s: s["attributes"]["conductor.attempt.id"])
    assert (parked["status"], parked["attributes"]["conductor.outcome"]) == ("UNSET", "waiting"), parked
    assert resumed["status"] == "UNSET" and "conductor.outcome" not in resumed["attributes"], resumed
    assert parked["parent_span_id"] == resumed["parent_span_id"] == failures_id
