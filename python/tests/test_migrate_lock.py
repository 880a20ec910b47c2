"""pyconductor migrate and the migration lock (issue 25).

migrate serialises concurrent runs on a session advisory lock. Any login may
take any advisory lock: v0.2.0 waited for it with pg_advisory_lock, with no
limit, so a login with no grant at all holding the key made every migration
hang. migrate tries it now for ``lock_wait`` seconds, then fails naming the
holder, having applied nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import psycopg
import pytest

from helpers import REPO
from squatter import Squatter

from pyconductor.migrate import LOCK_KEY, LockBusy, migrate


def test_a_held_migration_lock_fails_naming_its_holder_instead_of_hanging(db_dsn: str) -> None:
    with Squatter(db_dsn, application_name="lock-squatter") as squatter:
        assert squatter.grants() == []
        assert squatter.conn.execute("select pg_try_advisory_lock(%s)", [LOCK_KEY]).fetchone() == (True,)
        started = time.monotonic()
        with pytest.raises(LockBusy) as caught:
            migrate(db_dsn, lock_wait=1.0, progress=lambda line: None)
        waited = time.monotonic() - started
        assert 1.0 <= waited < 10, f"it tried for the bound, then gave up ({waited:.1f}s)"
        message = str(caught.value)
        for word in (f"pid {squatter.pid}", f"login {squatter.role}", "'lock-squatter'", "nothing was applied",
                     "--lock-wait"):
            assert word in message, message
        assert [h["pid"] for h in caught.value.holders] == [squatter.pid]

        env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
        out = subprocess.run([sys.executable, "-m", "pyconductor", "migrate", "--dsn", db_dsn, "--lock-wait", "0.5"],
                             capture_output=True, text=True, env=env, timeout=60, check=False)  # fmt: skip
        assert out.returncode == 1, out
        assert f"pid {squatter.pid}" in out.stderr and "the migration lock is held by" in out.stderr, out.stderr


def test_a_migration_waits_for_one_that_ends_within_the_bound(db_dsn: str) -> None:
    """Another session that lets go of the lock within lock_wait is waited for (two
    migrations at once still serialise), and the migration then has nothing to apply."""
    with psycopg.connect(db_dsn, autocommit=True) as other:
        other.execute("select pg_advisory_lock(%s)", [LOCK_KEY])
        lines: list[str] = []

        def release_soon() -> None:
            time.sleep(0.5)
            other.execute("select pg_advisory_unlock(%s)", [LOCK_KEY])

        threading.Thread(target=release_soon, daemon=True).start()
        assert migrate(db_dsn, lock_wait=30.0, progress=lines.append) == []
        assert any("waiting for the migration lock" in line for line in lines), lines
