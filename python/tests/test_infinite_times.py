"""Rows v0.1.0 stored with infinite times stay readable (issue 14, M1).

v0.1.0 accepted run_at => 'infinity' / '-infinity'; the engine now refuses
them, but a database upgraded from v0.1.0 may hold such rows, and psycopg
refuses to load infinite timestamps by default. Reading must not fail on
them: the client, the CLI and the dashboard.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timezone

import psycopg
from helpers import REPO

from pyconductor import Conductor

ENV = {**os.environ, "PYTHONPATH": str(REPO / "python")}


def stored_by_v0_1_0(db_dsn: str) -> tuple[int, int]:
    """Two tasks as v0.1.0 could store them: due at -infinity and at infinity."""
    with psycopg.connect(db_dsn, autocommit=True) as conn:  # the owner's session: no API check in the way
        ids = [conn.execute("select conductor.enqueue(kind => 'old', queue => 'inf')").fetchone()[0] for _ in range(2)]
        conn.execute("update conductor.tasks set run_at = '-infinity' where id = %s", [ids[0]])
        conn.execute("update conductor.tasks set run_at = 'infinity' where id = %s", [ids[1]])
    return ids[0], ids[1]


def test_the_client_reads_infinite_times(db_dsn: str) -> None:
    past, future = stored_by_v0_1_0(db_dsn)
    with Conductor(db_dsn, pool_max=1) as app:
        assert app.get(past).run_at == datetime.min.replace(tzinfo=timezone.utc)
        assert app.get(future).run_at == datetime.max.replace(tzinfo=timezone.utc)
        with app.connection() as conn:  # reading the tables directly, as DESIGN allows
            assert len(conn.execute("select run_at from conductor.tasks where queue = 'inf'").fetchall()) == 2


def test_the_cli_lists_and_shows_them(db_dsn: str) -> None:
    past, _ = stored_by_v0_1_0(db_dsn)
    for args in (["tasks", "--queue", "inf"], ["tasks", "show", str(past)], ["stats"]):
        out = subprocess.run([sys.executable, "-m", "pyconductor", *args, "--dsn", db_dsn], capture_output=True,
                             text=True, env=ENV, cwd=REPO, timeout=60, check=False)  # fmt: skip
        assert out.returncode == 0, (args, out.stderr)


def test_the_dashboard_renders_them(db_dsn: str) -> None:
    import httpx

    from pyconductor.dashboard import DashboardServer

    past, future = stored_by_v0_1_0(db_dsn)
    with DashboardServer(db_dsn, "127.0.0.1", 0) as server, httpx.Client(base_url=server.url, timeout=10) as client:
        for path in ("/", "/runs", f"/runs/{past}", f"/runs/{future}"):
            page = client.get(path)
            assert page.status_code == 200, (path, page.text[:300])
