"""A worker process and a database it cannot use: a hopeless DSN fails at start,
a server that is away is waited for, and SIGTERM ends the process in bounded
time whether the database answers or not (review issue 14, M8)."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import wait_until
from processes import spawner
from psycopg.conninfo import make_conninfo
from tcpproxy import TcpProxy

from pyconductor import Conductor

PASSWORD = "s3cret-pw-1234"
GRACE = 2.0
# SIGTERM with the database gone: Worker.stop() promises grace + SHUTDOWN_DB_TIMEOUT
# (5 s) + 3 s at most; 2 s more for the process to exit on a loaded machine.
STOP_BOUND = GRACE + 5.0 + 3.0 + 2.0


def run_worker(dsn: str, logs: Path, *args: str) -> tuple[int, str, float]:
    """Start a worker on ``dsn`` and wait for it to exit: (code, output, seconds)."""
    with spawner(dsn, logs, "apps.proc_app:app", named=False) as spawn:
        started = time.monotonic()
        worker = spawn(*args)
        code = worker.wait(60)
        return code, worker.output(), time.monotonic() - started


@pytest.mark.parametrize(
    ("make_dsn", "says"),
    [
        (lambda c: make_conninfo(c.url("no_such_database_m8"), password=PASSWORD),
         'database "no_such_database_m8" does not exist'),
        (lambda c: f"postgresql://app:{PASSWORD}@no-such-host.invalid:5432/prod", "unknown host name"),
        (lambda c: f"postgresql://app:{PASSWORD}@[::1/prod", "invalid DSN"),
    ],
    ids=["missing-database", "unknown-host", "invalid-dsn"],
)
def test_a_hopeless_dsn_fails_at_start(cluster: Any, tmp_path: Path, make_dsn: Any, says: str) -> None:
    code, out, took = run_worker(make_dsn(cluster), tmp_path)
    assert code == 1, out
    assert says in out and "Not retrying" in out, out
    assert PASSWORD not in out, out
    assert "Traceback" not in out, out
    assert took < 20, f"took {took:.1f}s"


@pytest.fixture
def password_role(cluster: Any, db_dsn: str) -> Iterator[str]:
    """A role that must give its password over TCP (a pg_hba.conf line put first,
    then removed); yields a DSN with the wrong password."""
    if cluster.datadir is None:
        pytest.skip("needs the throwaway cluster's pg_hba.conf, not $CONDUCTOR_TEST_DSN")
    hba = cluster.datadir / "pg_hba.conf"
    original = hba.read_text()
    with cluster.admin() as conn:
        conn.execute("drop role if exists conductor_m8_pw")
        conn.execute("create role conductor_m8_pw login password 'the-right-one'")
        hba.write_text("host all conductor_m8_pw 127.0.0.1/32 scram-sha-256\n" + original)
        conn.execute("select pg_reload_conf()")
    wrong = make_conninfo(db_dsn, user="conductor_m8_pw", password=PASSWORD)

    def refused() -> bool:
        try:
            psycopg.connect(wrong, connect_timeout=2).close()
        except psycopg.OperationalError as exc:
            return "password authentication failed" in str(exc)
        return False

    try:
        wait_until(refused, timeout=10, message="the pg_hba.conf line did not take effect")
        yield wrong
    finally:
        hba.write_text(original)
        with cluster.admin() as conn:
            conn.execute("select pg_reload_conf()")
            conn.execute("drop role if exists conductor_m8_pw")


def test_a_wrong_password_fails_at_start(password_role: str, tmp_path: Path) -> None:
    code, out, took = run_worker(password_role, tmp_path)
    assert code == 1, out
    assert "password authentication failed" in out and "Not retrying" in out, out
    assert PASSWORD not in out, out
    assert took < 20, f"took {took:.1f}s"


@pytest.fixture
def proxy(cluster: Any) -> Iterator[TcpProxy]:
    p = TcpProxy(cluster.host, cluster.port)
    yield p
    p.close()


def registered(dsn: str) -> bool:
    with psycopg.connect(dsn, autocommit=True) as c:
        return c.execute("select count(*) from conductor.workers").fetchone() == (1,)


def test_a_server_that_is_not_up_yet_is_waited_for(db_dsn: str, proxy: TcpProxy, tmp_path: Path) -> None:
    """Connection refused at start is what a restarting server says: keep trying."""
    with spawner(proxy.dsn(db_dsn), tmp_path, "apps.proc_app:app", "--poll", "1", named=False) as spawn:
        worker = spawn()
        wait_until(lambda: "retrying" in worker.output(), timeout=30, message=worker.output)
        assert worker.alive(), worker.output()
        proxy.start()
        wait_until(lambda: registered(db_dsn), timeout=30, message=worker.output)
        worker.signal(signal.SIGTERM)
        assert worker.wait(30) == 0, worker.output()
    assert PASSWORD not in worker.output()


@pytest.fixture
def executions(db_dsn: str) -> str:
    with psycopg.connect(db_dsn, autocommit=True) as c:
        c.execute("create table executions (task_id bigint, attempt_id bigint, pid integer)")
    return db_dsn


@pytest.mark.parametrize("how", ["cut", "freeze"])
@pytest.mark.parametrize("holding", [False, True], ids=["idle", "holding"])
def test_sigterm_with_the_database_gone_exits_in_bounded_time(
    executions: str, proxy: TcpProxy, tmp_path: Path, how: str, holding: bool
) -> None:
    """A worker, idle or holding a long task, loses its database (cut: refused;
    freeze: packets dropped, every query hangs); SIGTERM still ends it within
    the grace plus the shutdown budget, leaving the task to its lease and the
    reaper."""
    db_dsn = executions
    proxy.start()
    args = ("--concurrency", "2", "--shutdown-grace", str(GRACE), "--heartbeat", "1", "--poll", "1", "--reap", "2")
    with spawner(proxy.dsn(db_dsn), tmp_path, "apps.proc_app:app", *args, named=False) as spawn:
        worker = spawn()
        wait_until(lambda: registered(db_dsn), timeout=30, message=worker.output)
        task = None
        if holding:
            with Conductor(db_dsn) as app:
                task = app.enqueue("sleep", {"seconds": 600})
                wait_until(lambda: app.get(task).status == "running", timeout=30, message=worker.output)
            with psycopg.connect(db_dsn, autocommit=True) as c:
                wait_until(lambda: c.execute("select count(*) from executions").fetchone() == (1,), timeout=30)
        getattr(proxy, how)()
        started = time.monotonic()
        worker.signal(signal.SIGTERM)
        code = worker.wait(STOP_BOUND + 30)
        took = time.monotonic() - started
        out = worker.output()
    assert took < STOP_BOUND, f"SIGTERM took {took:.1f}s (bound {STOP_BOUND}s):\n{out[-3000:]}"
    assert code == 0, out
    assert "stopped" in out, out
    if task is not None:
        with Conductor(db_dsn) as app:
            assert app.get(task).status == "running"  # not released: the reaper takes it when its lease ends
