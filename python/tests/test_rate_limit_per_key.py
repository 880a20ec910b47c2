"""A rate limit per key holds across the fleet (issue 30): ``pyconductor rate-limit
--per-key`` on a queue, three real worker processes, and two customers (rate_key) with a
bucket of 2 a second each. Measured from the attempts: each key's starts never run ahead
of its own bucket (burst + rate * elapsed, on the claims' clock), the small customer
enqueued behind the big one's backlog is not slowed by it (its tasks start at its own
rate while the big one's wait), and the big one keeps its rate."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
from helpers import REPO, wait_until
from processes import spawner

from pyconductor import Conductor

Conn = psycopg.Connection[Any]
RATE = 2.0
BURST = 2
BIG = 16
SMALL = 6


def rate_limit_cli(dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CONDUCTOR_DSN", "DATABASE_URL")}
    env["PYTHONPATH"] = str(REPO / "python")
    return subprocess.run([sys.executable, "-m", "pyconductor", "rate-limit", *args, "--dsn", dsn],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=60, check=False)  # fmt: skip


def starts_of(conn: Conn, key: str) -> list[float]:
    return [row[0] for row in conn.execute(
        "select extract(epoch from a.claimed_at)::float8 from conductor.attempts a"
        "  join conductor.tasks t on t.id = a.task_id where t.queue = 'fleet' and t.rate_key = %s"
        " order by a.claimed_at", (key,)).fetchall()]  # fmt: skip


def test_two_keys_each_at_their_own_rate_across_three_workers(db_dsn: str, db_conn: Conn, tmp_path: Path) -> None:
    out = rate_limit_cli(db_dsn, "--queue", "fleet", str(RATE), "--burst", str(BURST), "--per-key")
    assert out.returncode == 0, out.stderr
    said = "queue fleet: at most 2 task starts per second per rate_key across the fleet, bursts of up to 2"
    assert out.stdout.strip() == said
    assert db_conn.execute("select per_key from conductor.rate_limits where name = 'fleet'").fetchone() == (True,)
    with spawner(db_dsn, tmp_path, "apps.fleet_v1:app", "--queues", "fleet", "--poll", "5",
                 "--concurrency", "4") as spawn:  # fmt: skip
        workers = [spawn() for _ in range(3)]
        wait_until(lambda: db_conn.execute("select count(*) from conductor.sleepers").fetchone()[0] == 3,
                   timeout=30, message=lambda: "\n".join(w.output() for w in workers))  # fmt: skip
        with Conductor(db_dsn) as app:
            # the big customer's backlog first, at the head of the queue; the small one's behind it
            app.enqueue_many(
                [{"kind": "fleet.a", "queue": "fleet", "rate_key": "big"} for _ in range(BIG)]
                + [{"kind": "fleet.a", "queue": "fleet", "rate_key": "small"} for _ in range(SMALL)]
            )
        wait_until(lambda: db_conn.execute(
            "select count(*) from conductor.tasks where queue = 'fleet' and status = 'succeeded'").fetchone()[0]
            == BIG + SMALL, timeout=40, message=lambda: "\n".join(w.output() for w in workers))  # fmt: skip

    big, small = starts_of(db_conn, "big"), starts_of(db_conn, "small")
    assert (len(big), len(small)) == (BIG, SMALL)
    by = db_conn.execute("select count(distinct worker_id) from conductor.attempts").fetchone()[0]
    for name, starts in (("big", big), ("small", small)):
        t0 = starts[0]
        # never ahead of its own bucket: burst + RATE * elapsed (a hair of slack for the clock)
        for n, at in enumerate(starts, start=1):
            assert n <= BURST + RATE * (at - t0) + 0.01, f"{name}: start {n} at +{at - t0:.3f} s is ahead of its bucket"
        print(f"{name}: {len(starts)} starts over {starts[-1] - t0:.2f} s")
    # the small customer is not held back by the big one's backlog at the head of the queue: its
    # starts take its own rate ((SMALL - BURST) / RATE = 2 s after its first), while most of
    # the big one's wait behind its own bucket
    assert small[-1] - small[0] <= (SMALL - BURST) / RATE + 1.5, f"small took {small[-1] - small[0]:.2f} s"
    assert small[-1] < big[-1] - 2, "the small customer finished its starts while the big one still waited"
    # and the big one keeps its rate: (BIG - BURST) / RATE = 7 s, not much more
    assert big[-1] - big[0] <= (BIG - BURST) / RATE + 2.5, f"big took {big[-1] - big[0]:.2f} s"
    assert by >= 2, "the limit should be shared by several workers"

    out = rate_limit_cli(db_dsn, "--queue", "fleet", "off")
    assert out.returncode == 0 and out.stdout.strip() == "queue fleet: no rate limit"
    assert db_conn.execute("select count(*) from conductor.rate_key_buckets").fetchone() == (0,)


def test_rate_key_from_the_sync_and_async_clients(db_dsn: str, db_conn: Conn) -> None:
    import asyncio

    from pyconductor import InvalidArgument
    from pyconductor.aio import AsyncConductor

    with Conductor(db_dsn) as app:
        one = app.enqueue("k", {}, rate_key="acme")
        many = app.enqueue_many([{"kind": "k", "rate_key": "bolt"}, ("k", {})])
        try:
            app.enqueue("k", {}, rate_key="")
        except InvalidArgument as exc:
            assert "invalid rate_key ''" in str(exc)
        else:
            raise AssertionError("an empty rate_key should be refused")

    async def main() -> list[int]:
        async with AsyncConductor(db_dsn) as aapp:
            return [await aapp.enqueue("k", {}, rate_key="cargo"),
                    *await aapp.enqueue_many([{"kind": "k", "rate_key": "dune"}])]  # fmt: skip

    ids = [one, *many, *asyncio.run(main())]
    keys = db_conn.execute("select rate_key from conductor.tasks where id = any(%s) order by id", (ids,)).fetchall()
    assert [k for (k,) in keys] == ["acme", "bolt", None, "cargo", "dune"]


NODE_SPAWN = r"""
const { Client } = require(process.env.NODE_DIR + '/node_modules/pg');
const sql = require(process.env.NODE_DIR + '/sql.js');
const { pgOptions } = require(process.env.NODE_DIR + '/dsn.js');
(async () => {
  const c = new Client(pgOptions(process.env.DSN));
  await c.connect();
  await c.query("select conductor.enqueue('root', '{}', 'node-rk')");
  const claimed = await c.query("select attempt_id from conductor.claim('w', array['node-rk'], 1, '60 s')");
  const rows = (await c.query(sql.spawn(['rate_key']), [claimed.rows[0].attempt_id, 's1', 'child', '{}', 'acme'])).rows;
  console.log(rows[0].child);
  await c.end();
})().catch((e) => { console.error(e); process.exit(1); });
"""


def test_the_node_workers_spawn_passes_rate_key(db_dsn: str, db_conn: Conn, tmp_path: Path) -> None:
    """The statement the Node worker's ctx.spawn sends (workers/node/sql.js) with rate_key."""
    import pytest
    from lifecycle.runner import NODE_DIR, node_problem

    if problem := node_problem():
        pytest.fail(f"the Node worker cannot run: {problem}")
    script = tmp_path / "spawn_rate_key.js"
    script.write_text(NODE_SPAWN)
    done = subprocess.run(["node", str(script)], env={**os.environ, "DSN": db_dsn, "NODE_DIR": str(NODE_DIR)},
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    child = int(done.stdout.strip())
    assert db_conn.execute("select rate_key from conductor.tasks where id = %s", (child,)).fetchone() == ("acme",)
