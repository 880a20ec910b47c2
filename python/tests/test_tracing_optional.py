"""OpenTelemetry is optional (issue 27): the producer side in this process, and
both workers without the package.

- With opentelemetry-api, every enqueue path stores the current span's W3C
  traceparent, unless the caller gives one; outside a span, none.
- Without it (a child process that cannot import it), nothing imports it,
  enqueue works and stores none, and a worker runs a task with a step and a
  child.
- The Node worker without @opentelemetry/api (a preload that makes it
  unresolvable) runs a task with a step and a child too.

This process's spans come from a provider of its own, made current with
``use_span``: the global provider stays unset, so no other test is traced.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import wait_until
from lifecycle.runner import NODE_DIR, node_problem
from opentelemetry.sdk.trace import TracerProvider
from processes import TESTS, ChildProcess

from pyconductor import Conductor, InvalidArgument, Worker
from pyconductor.aio import AsyncConductor

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture
def app(db_dsn: str) -> Iterator[Conductor]:
    with Conductor(db_dsn, pool_max=2) as app:
        yield app


def _stored(conn: psycopg.Connection[Any], ids: list[int]) -> list[str | None]:
    rows = conn.execute("select traceparent from conductor.tasks where id = any(%s) order by id", (ids,)).fetchall()
    return [row[0] for row in rows]


def test_every_enqueue_path_stores_the_current_span_unless_given_one(
    app: Conductor, db_dsn: str, db_conn: psycopg.Connection[Any]
) -> None:
    tracer = TracerProvider().get_tracer("test")
    outside = app.enqueue("k")
    with tracer.start_as_current_span("request") as span:
        ctx = span.get_span_context()
        current = f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"
        one = app.enqueue("k")
        given = app.enqueue("k", traceparent=TRACEPARENT)
        batch = app.enqueue_many([("k", {}), {"kind": "k", "traceparent": TRACEPARENT}])

        async def aenqueue() -> int:
            async with AsyncConductor(db_dsn, app=app) as aapp:
                return await aapp.enqueue("k")

        from_async = asyncio.run(aenqueue())
        with pytest.raises(InvalidArgument, match="invalid traceparent 'nonsense'"):
            app.enqueue("k", traceparent="nonsense")
    ids = [outside, one, given, *batch, from_async]
    assert _stored(db_conn, ids) == [None, current, TRACEPARENT, current, TRACEPARENT, current]


def test_without_an_sdk_a_worker_carries_a_stored_traceparent_on_and_adds_none(
    app: Conductor, db_conn: psycopg.Connection[Any]
) -> None:
    # The API without an SDK (this process sets no global provider): a handler's spawn stores
    # the traceparent its task was enqueued with (the API propagates a context it does not
    # record), and nothing where its task had none.
    from opentelemetry import trace

    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)

    @app.task("otel.parent", queue="otel-nosdk")
    def parent(payload: dict[str, Any], ctx: Any) -> int:
        return int(ctx.spawn("otel.child", {}, queue="otel-nosdk"))

    @app.task("otel.child", queue="otel-nosdk")
    def child(payload: dict[str, Any]) -> None:
        return None

    traced = app.enqueue("otel.parent", traceparent=TRACEPARENT)
    untraced = app.enqueue("otel.parent")
    with Worker(app, queues=["otel-nosdk"], poll_interval=0.2, run_scheduler=False):
        children = [int(app.result(task_id, timeout=30).result) for task_id in (traced, untraced)]
        for child_id in children:
            assert app.result(child_id, timeout=30).status == "succeeded"
    assert [_stored(db_conn, [child_id])[0] for child_id in children] == [TRACEPARENT, None]


BLOCKED = textwrap.dedent("""
    import importlib.abc, sys

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "opentelemetry" or name.startswith("opentelemetry."):
                raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
            return None

    sys.meta_path.insert(0, Blocker())

    import pyconductor, pyconductor.worker, pyconductor.tracing, pyconductor.executor, pyconductor.context
    from pyconductor import Conductor, Worker

    assert not pyconductor.tracing.available()
    assert pyconductor.tracing.current_traceparent() is None
    app = Conductor(sys.argv[1], pool_max=2)

    @app.task("plain.parent", queue="plain")
    def parent(payload, ctx):
        n = ctx.step("one", lambda: 1)
        ctx.spawn("plain.child", {"n": n}, queue="plain")
        return n

    @app.task("plain.child", queue="plain")
    def child(payload, ctx):
        return payload["n"]

    task_id = app.enqueue("plain.parent")
    with Worker(app, queues=["plain"], poll_interval=0.2, heartbeat_interval=0.5, run_scheduler=False):
        assert app.result(task_id, timeout=30).status == "succeeded"
        with app.connection() as conn:
            child_id = conn.execute("select id from conductor.tasks where parent_id = %s", (task_id,)).fetchone()[0]
        assert app.result(child_id, timeout=30).status == "succeeded"
    app.close()
    loaded = sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")
    assert not loaded, loaded
    print("untraced", task_id, child_id)
""")


def test_without_opentelemetry_nothing_imports_it_and_tasks_still_run(
    db_dsn: str, db_conn: psycopg.Connection[Any]
) -> None:
    done = subprocess.run([sys.executable, "-c", BLOCKED, db_dsn], cwd=TESTS, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    word, *ids = done.stdout.split()
    assert word == "untraced"
    assert _stored(db_conn, [int(i) for i in ids]) == [None, None]


# the Node worker without @opentelemetry/api: a preload makes it unresolvable
NODE_BLOCK = """
const Module = require('node:module');
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request.startsWith('@opentelemetry/')) {
    const err = new Error(`Cannot find module '${request}' (blocked by the test)`);
    err.code = 'MODULE_NOT_FOUND';
    throw err;
  }
  return resolve.call(this, request, ...rest);
};
"""
NODE_HANDLERS = """
module.exports = {
  'plain.parent': async (payload, ctx) => {
    const n = await ctx.step('one', async () => 1);
    await ctx.spawn('plain.child', { n }, { queue: 'plain-node' });
    return n;
  },
  'plain.child': async (payload) => payload.n,
};
"""


def test_the_node_worker_runs_without_opentelemetry(app: Conductor, db_dsn: str, db_conn: psycopg.Connection[Any],
                                                    tmp_path: Path) -> None:  # fmt: skip
    if problem := node_problem():
        pytest.fail(f"the Node worker cannot run: {problem}")
    (tmp_path / "block.js").write_text(NODE_BLOCK)
    (tmp_path / "handlers.js").write_text(NODE_HANDLERS)
    task_id = app.enqueue("plain.parent", queue="plain-node")
    proc = ChildProcess(["node", "--require", str(tmp_path / "block.js"), str(NODE_DIR / "main.js"),
                         "--handlers", str(tmp_path / "handlers.js"), "--queues", "plain-node", "--poll", "1"],
                        env={**os.environ, "CONDUCTOR_DSN": db_dsn}, cwd=NODE_DIR,
                        log=tmp_path / "node.log")  # fmt: skip
    try:
        rows = wait_until(
            lambda: (r := db_conn.execute("select status::text from conductor.tasks where root_id = %s order by id",
                                          (task_id,)).fetchall()) == [("succeeded",), ("succeeded",)] and r,
            timeout=60, interval=0.1, message=proc.output,
        )  # fmt: skip
    finally:
        proc.close()
    assert rows  # tracing.js took the missing package for "no tracing": the worker started and ran both
    assert _stored(db_conn, [task_id]) == [None]
