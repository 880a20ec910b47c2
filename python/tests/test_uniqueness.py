"""The dedupe options from Python (issue 30: docs/uniqueness.md): the sync and
async clients' enqueue and enqueue_many pass dedupe_window, dedupe_states,
on_duplicate, debounce and debounce_max to the database, which decides; its
SQLSTATEs come back as their classes; get and the dashboard's task page show
what a task stores; the Node worker's spawn statement passes them too."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from lifecycle.runner import NODE_DIR, node_problem

from pyconductor import Conductor
from pyconductor.aio import AsyncConductor
from pyconductor.errors import DebounceConflict, DedupeOptionsWithoutKey, InvalidDedupeStates, InvalidStatus


@pytest.fixture
def app(db_dsn: str) -> Iterator[Conductor]:
    with Conductor(db_dsn) as client:
        yield client


def row(dsn: str, task_id: int) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        # the ends as lengths from the enqueue ('infinity': None), which Python's datetime has no value for
        cur = conn.execute("select payload, dedupe_states::text[] as states,"
                           " case when isfinite(dedupe_until) then dedupe_until - enqueued_at end as held_for,"
                           " case when isfinite(debounce_until) then debounce_until - enqueued_at end as longest"
                           " from conductor.tasks where id = %s", (task_id,))  # fmt: skip
        values = cur.fetchone()
        assert values is not None and cur.description is not None
        return dict(zip([c.name for c in cur.description], values, strict=True))


def test_the_sync_client_passes_each_option(app: Conductor, db_dsn: str) -> None:
    first = app.enqueue("send_digest", {"user": 42}, dedupe_key="digest:42", dedupe_window=timedelta(hours=1))
    assert app.enqueue("send_digest", {"user": 42}, dedupe_key="digest:42", dedupe_window=3600) == first
    stored = row(db_dsn, first)
    assert stored["states"] == ["queued", "running", "waiting", "succeeded"]
    assert timedelta(0) < stored["held_for"] <= timedelta(hours=1)

    feed = app.enqueue("import_feed", {}, dedupe_key="feed:a", dedupe_states=("queued", "running", "waiting", "failed"))
    assert row(db_dsn, feed)["states"] == ["queued", "running", "waiting", "failed"]

    report = app.enqueue("render_report", {"v": 1}, dedupe_key="report:7")
    assert app.enqueue("render_report", {"v": 2}, dedupe_key="report:7", on_duplicate="replace") == report
    assert app.enqueue("render_report", {"v": 3}, dedupe_key="report:7", on_duplicate="preserve_run_at") == report
    assert row(db_dsn, report)["payload"] == {"v": 3}

    debounced = app.enqueue("reindex", {"rev": 1}, dedupe_key="ix:1", debounce=timedelta(seconds=30),
                            debounce_max="5 minutes")  # fmt: skip
    assert app.enqueue("reindex", {"rev": 2}, dedupe_key="ix:1", debounce=30) == debounced
    stored = row(db_dsn, debounced)
    assert stored["payload"] == {"rev": 2}
    assert stored["longest"] == timedelta(minutes=5)


def test_enqueue_many_takes_the_same_keys(app: Conductor, db_dsn: str) -> None:
    ids = app.enqueue_many([
        {"kind": "reindex", "payload": {"rev": 1}, "dedupe_key": "ix:2", "debounce": timedelta(seconds=10)},
        {"kind": "reindex", "payload": {"rev": 2}, "dedupe_key": "ix:2", "debounce": timedelta(seconds=10)},
        {"kind": "import_feed", "dedupe_key": "feed:b", "dedupe_states": ["queued", "running", "waiting", "dead"],
         "dedupe_window": timedelta(days=1)},
    ])  # fmt: skip
    assert ids[0] == ids[1]
    assert row(db_dsn, ids[0])["payload"] == {"rev": 2}
    assert row(db_dsn, ids[2])["states"] == ["queued", "running", "waiting", "dead"]


def test_each_rule_is_its_error_class(app: Conductor) -> None:
    with pytest.raises(DedupeOptionsWithoutKey):
        app.enqueue("k", {}, debounce=1)
    with pytest.raises(InvalidDedupeStates):
        app.enqueue("k", {}, dedupe_key="x", dedupe_states=["succeeded"])
    with pytest.raises(InvalidStatus):
        app.enqueue("k", {}, dedupe_key="x", dedupe_states=["queued", "running", "waiting", "done"])
    with pytest.raises(DebounceConflict):
        app.enqueue("k", {}, dedupe_key="x", debounce_max=60)


def test_the_async_client_passes_the_options(db_dsn: str) -> None:
    async def main() -> tuple[int, int]:
        async with AsyncConductor(db_dsn) as client:
            first = await client.enqueue("reindex", {"rev": 1}, dedupe_key="ix:3", debounce=10, debounce_max=60)
            second = await client.enqueue("reindex", {"rev": 2}, dedupe_key="ix:3", debounce=10, debounce_max=60)
            return first, second

    first, second = asyncio.run(main())
    assert first == second
    assert row(db_dsn, first)["payload"] == {"rev": 2}


def test_get_and_the_task_page_show_the_stored_options(app: Conductor, db_dsn: str) -> None:
    pytest.importorskip("starlette")
    import httpx

    from pyconductor.dashboard import DashboardServer

    digest = app.enqueue("send_digest", {}, dedupe_key="digest:7", dedupe_window=timedelta(hours=1))
    kept = app.enqueue("import_feed", {}, dedupe_key="feed:7", dedupe_states=["queued", "running", "waiting", "dead"])
    debounced = app.enqueue("reindex", {}, dedupe_key="ix:7", debounce=10, debounce_max=60)
    info = app.get(digest)
    assert info.dedupe_states == ["queued", "running", "waiting", "succeeded"]
    assert info.dedupe_until is not None and info.debounce_until is None
    assert app.get(debounced).debounce_until is not None and app.get(debounced).dedupe_states is None
    assert app.get(kept).dedupe_until is not None  # 'infinity', read as datetime.max

    with DashboardServer(db_dsn, "127.0.0.1", 0) as server, httpx.Client(base_url=server.url, timeout=10) as web:
        page = web.get(f"/runs/{digest}").text
        assert "digest:7 (held while queued, running, waiting, succeeded until " in page
        assert "feed:7 (held while queued, running, waiting, dead until pruned)" in web.get(f"/runs/{kept}").text
        assert "<tr><th>debounce<td>runs once quiet, at the latest at " in web.get(f"/runs/{debounced}").text


NODE_CHECK = r"""
const { Client } = require(process.env.NODE_DIR + '/node_modules/pg');
const sql = require(process.env.NODE_DIR + '/sql.js');
const { pgOptions } = require(process.env.NODE_DIR + '/dsn.js');
(async () => {
  const c = new Client(pgOptions(process.env.DSN));
  await c.connect();
  await c.query("select conductor.enqueue('root', '{}', 'node-dd')");
  const claimed = await c.query("select attempt_id from conductor.claim('w', array['node-dd'], 1, '60 s')");
  const a = claimed.rows[0].attempt_id;
  const names = ['dedupe_key', 'debounce', 'debounce_max', 'dedupe_states', 'on_duplicate'];
  const ids = [];
  for (const [step, rev] of [['s1', 1], ['s2', 2]]) {
    const rows = (await c.query(sql.spawn(names), [a, step, 'reindex', JSON.stringify({ rev }),
      'nd:1', '30 seconds', '5 minutes', ['queued', 'running', 'waiting'], 'replace'])).rows;
    ids.push(rows[0].child);
  }
  console.log(JSON.stringify(ids));
  await c.end();
})().catch((e) => { console.error(e); process.exit(1); });
"""


def test_the_node_workers_spawn_passes_the_options(db_dsn: str, tmp_path: Path) -> None:
    """The statement the Node worker's ctx.spawn sends (workers/node/sql.js), with
    the options as the worker passes them: interval text and a JS array."""
    if problem := node_problem():
        pytest.fail(f"the Node worker cannot run: {problem}")
    script = tmp_path / "spawn_options.js"
    script.write_text(NODE_CHECK)
    done = subprocess.run(["node", str(script)], env={**os.environ, "DSN": db_dsn, "NODE_DIR": str(NODE_DIR)},
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    first, second = json.loads(done.stdout)
    assert first == second, "the second spawn of the debounced key answered the first child"
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        stored = conn.execute("select payload, dedupe_states::text[], debounce_until - enqueued_at"
                              " from conductor.tasks where id = %s", (int(first),)).fetchone()  # fmt: skip
    assert stored == ({"rev": 2}, ["queued", "running", "waiting"], timedelta(minutes=5))
