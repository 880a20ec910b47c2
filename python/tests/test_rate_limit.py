"""A rate limit holds across the fleet (issue 17): conductor.set_rate_limit(queue,
10/s) and three real worker processes on that queue start the queue's tasks at
10 a second together, within 10 %, after the bucket's first burst. The limit is
claim's (SQL), so no worker knows about the others; an idle worker wakes when
the next token comes (next_due), not at its poll, or the rate would fall short.

A limit is its setter's (issue 25): ``pyconductor rate-limit`` run with a worker
login cannot change or remove an operator's limit (QC208), nor stop a queue with a
rate under ``conductor.settings.min_rate_limit`` (QC106), and the fleet keeps the
operator's rate."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
from helpers import REPO, wait_until
from logins import worker_logins
from processes import spawner

Conn = psycopg.Connection[Any]
RATE = 10.0
TASKS = 80


def test_ten_starts_a_second_across_three_workers(db_dsn: str, db_conn: Conn, tmp_path: Path) -> None:
    db_conn.execute("select conductor.set_rate_limit(queue => 'fleet', per_second => %s)", (RATE,))
    with spawner(db_dsn, tmp_path, "apps.fleet_v1:app", "--queues", "fleet", "--poll", "5",
                 "--concurrency", "8") as spawn:  # fmt: skip
        workers = [spawn() for _ in range(3)]
        wait_until(lambda: db_conn.execute("select count(*) from conductor.sleepers").fetchone()[0] == 3,
                   timeout=30, message=lambda: "\n".join(w.output() for w in workers))  # fmt: skip
        db_conn.execute(
            "select count(*) from conductor.enqueue_many("
            " (select jsonb_agg(jsonb_build_object('kind', 'fleet.a', 'queue', 'fleet')) from generate_series(1, %s)))",
            (TASKS,))  # fmt: skip
        wait_until(lambda: db_conn.execute(
            "select count(*) from conductor.tasks where queue = 'fleet' and status = 'succeeded'").fetchone()[0] == TASKS,
            timeout=60, message=lambda: "\n".join(w.output() for w in workers))  # fmt: skip
    starts = [row[0] for row in db_conn.execute(
        "select extract(epoch from a.claimed_at)::float8 from conductor.attempts a"
        "  join conductor.tasks t on t.id = a.task_id where t.queue = 'fleet' order by a.claimed_at").fetchall()]  # fmt: skip
    by = db_conn.execute(
        "select count(distinct a.worker_id) from conductor.attempts a"
        "  join conductor.tasks t on t.id = a.task_id where t.queue = 'fleet'").fetchone()[0]  # fmt: skip
    assert len(starts) == TASKS
    burst = int(RATE)  # a new limit starts with a full bucket of `burst` (default: per_second) tokens
    t0 = starts[0]
    # never more than the bucket allows: burst + RATE * elapsed (a hair of slack for the clock's resolution)
    for n, at in enumerate(starts, start=1):
        assert n <= burst + RATE * (at - t0) + 1, f"start {n} at +{at - t0:.3f} s is ahead of the limit"
    # and not slower: after the burst the rest start at RATE a second, within 10 %
    steady = starts[burst:]
    rate = (len(steady) - 1) / (steady[-1] - steady[0])
    print(f"rate limit {RATE}/s across {by} workers: {len(starts)} starts, "
          f"steady rate {rate:.2f}/s over {steady[-1] - steady[0]:.2f} s")
    assert abs(rate - RATE) <= 0.1 * RATE, f"steady rate {rate:.2f}/s, expected {RATE} within 10 %"
    assert by >= 2, "the limit should be shared by several workers, not met by one alone"


def rate_limit_cli(dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CONDUCTOR_DSN", "DATABASE_URL")}
    env["PYTHONPATH"] = str(REPO / "python")
    return subprocess.run([sys.executable, "-m", "pyconductor", "rate-limit", *args, "--dsn", dsn],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=60, check=False)  # fmt: skip


def test_a_worker_login_neither_overrides_nor_removes_an_operators_limit(db_dsn: str, db_conn: Conn,
                                                                         tmp_path: Path) -> None:  # fmt: skip
    # v0.2.0: per_second 1e-300 let one claim through and then none, and 'off' deleted the operator's 50/s
    db_conn.execute("select conductor.set_rate_limit(queue => 'billing', per_second => 50)")  # this superuser: an admin
    with worker_logins(db_dsn, "other") as [(_, other_dsn)]:
        paused = rate_limit_cli(other_dsn, "--queue", "billing", "1e-300", "--burst", "1")
        removed = rate_limit_cli(other_dsn, "--queue", "billing", "off")
        stopped = rate_limit_cli(other_dsn, "--queue", "unlimited", "1e-300", "--burst", "1")
    for out in (paused, removed):
        assert out.returncode != 0 and "[QC208]" in out.stderr and "declared by login" in out.stderr, out.stderr
    assert stopped.returncode != 0 and "[QC106]" in stopped.stderr and "min_rate_limit" in stopped.stderr, stopped.stderr
    assert db_conn.execute("select name, per_second, burst from conductor.rate_limits").fetchall() == [
        ("billing", 50.0, 50.0)]  # fmt: skip

    # the fleet still starts the billing queue at the operator's rate: 50 at once, not one
    with spawner(db_dsn, tmp_path, "apps.fleet_v1:app", "--queues", "billing", "--concurrency", "8") as spawn:
        worker = spawn()
        db_conn.execute("select count(*) from conductor.enqueue_many((select jsonb_agg(jsonb_build_object("
                        "'kind', 'fleet.a', 'queue', 'billing')) from generate_series(1, 60)))")  # fmt: skip
        wait_until(lambda: db_conn.execute(
            "select count(*) from conductor.tasks where queue = 'billing' and status = 'succeeded'").fetchone()[0] >= 50,
            timeout=30, message=worker.output)  # fmt: skip
