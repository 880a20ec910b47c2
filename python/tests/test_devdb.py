"""pyconductor.dev.devdb: a private cluster started, queried and stopped for real."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from pyconductor.dev.devdb import SOCKET_PATH_MAX, DevDB, DevDBError, find_bindir, throwaway_cluster


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A temp dir the postgres OS user can traverse (pytest's tmp_path is 0700 root)."""
    path = Path(tempfile.mkdtemp(prefix="conductor-devdb-test-"))
    path.chmod(0o755)
    yield path
    for datadir in path.rglob("PG_VERSION"):
        DevDB(datadir.parent).stop()
    shutil.rmtree(path, ignore_errors=True)


def test_find_bindir_has_server_binaries() -> None:
    bindir = find_bindir()
    assert (bindir / "initdb").is_file()
    assert (bindir / "pg_ctl").is_file()


def test_start_url_status_stop(workdir: Path) -> None:
    db = DevDB(workdir / "data")
    assert not db.running
    assert db.status().startswith("no cluster")

    url = db.start()
    assert db.running
    assert url == db.url("conductor")
    assert url.startswith(f"postgresql://{db.superuser}@127.0.0.1:{db.port}/conductor")
    with psycopg.connect(url) as conn:
        settings = dict(
            conn.execute(
                "select name, setting from pg_settings where name = any(%s)",
                [["listen_addresses", "fsync", "synchronous_commit", "port", "unix_socket_directories"]],
            ).fetchall()
        )
        assert conn.execute("select current_database(), current_user").fetchone() == ("conductor", db.superuser)
    assert settings["listen_addresses"] == "127.0.0.1"
    assert settings["fsync"] == "on"
    assert settings["synchronous_commit"] == "on"
    assert int(settings["port"]) == db.port
    assert settings["unix_socket_directories"] == str(db.datadir)
    assert db.status().startswith("running: ")

    # The socket works too, and the port is stored for other processes.
    with db.connect("conductor") as conn:
        assert conn.execute("select 1").fetchone() == (1,)
    assert DevDB(workdir / "data").url("x") == db.url("x")

    assert db.stop() is True
    assert not db.running
    assert db.stop() is False
    assert db.status().startswith("stopped")


def test_start_is_idempotent_and_keeps_the_port(workdir: Path) -> None:
    db = DevDB(workdir / "data")
    url = db.start()
    with psycopg.connect(url) as conn:
        started = conn.execute("select pg_postmaster_start_time()").fetchone()
    assert db.start() == url  # already running: same server, nothing restarted
    with psycopg.connect(url) as conn:
        assert conn.execute("select pg_postmaster_start_time()").fetchone() == started
    db.stop()
    assert db.start() == url  # restarted on the stored port
    db.stop()


def test_hba_trusts_only_local_and_loopback(workdir: Path) -> None:
    db = DevDB(workdir / "data")
    db.start()
    hba = (db.datadir / "pg_hba.conf").read_text()
    rules = [line.split() for line in hba.splitlines() if line.strip() and not line.startswith("#")]
    assert {r[3] for r in rules if r[0] == "host"} == {"127.0.0.1/32"}
    assert all(r[-1] == "trust" for r in rules)
    db.stop()


def test_extra_settings_are_applied(workdir: Path) -> None:
    db = DevDB(workdir / "data", settings={"work_mem": "7MB", "application_name": "it's me"})
    url = db.start()
    with psycopg.connect(url) as conn:
        assert conn.execute("show work_mem").fetchone() == ("7MB",)
    db.stop()


def test_long_datadir_puts_the_socket_in_a_short_dir(workdir: Path) -> None:
    deep = workdir / ("d" * 60) / ("e" * 60)
    assert len(str(deep / ".s.PGSQL.65535")) > SOCKET_PATH_MAX
    db = DevDB(deep)
    db.start()
    try:
        assert db.socket_dir != db.datadir
        assert len(str(db.socket_dir / f".s.PGSQL.{db.port}")) <= SOCKET_PATH_MAX
        with db.connect("conductor") as conn:
            assert conn.execute("select 1").fetchone() == (1,)
    finally:
        db.destroy()
    assert not deep.exists()


def test_restart_keeps_data_and_port(workdir: Path) -> None:
    db = DevDB(workdir / "data")
    url = db.start()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("create table kept (x int); insert into kept values (42)")
    port = db.port
    db.restart()
    assert db.port == port
    with psycopg.connect(url) as conn:
        assert conn.execute("select x from kept").fetchone() == (42,)
    db.stop()


def test_throwaway_cluster_is_removed() -> None:
    with throwaway_cluster() as db:
        assert db.running
        datadir = db.datadir
        with psycopg.connect(db.url()) as conn:
            assert conn.execute("select current_database()").fetchone() == ("conductor",)
    assert not datadir.exists()


def test_nonempty_foreign_dir_is_refused(workdir: Path) -> None:
    (workdir / "data").mkdir()
    (workdir / "data" / "something").write_text("not a cluster")
    with pytest.raises(DevDBError, match="not empty"):
        DevDB(workdir / "data").start()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root hands the data dir to the postgres user")
def test_unreachable_datadir_has_a_clear_error(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    with pytest.raises(DevDBError, match="cannot reach"):
        DevDB(private / "data").start()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pyconductor", "devdb", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_cli_start_url_status_stop(workdir: Path) -> None:
    datadir = str(workdir / "data")
    first = _cli("start", "--datadir", datadir)
    assert first.returncode == 0, first.stderr
    url = first.stdout.strip()
    assert url.startswith("postgresql://") and url.endswith("/conductor")
    again = _cli("start", "--datadir", datadir)
    assert (again.returncode, again.stdout.strip()) == (0, url)
    assert _cli("url", "--datadir", datadir).stdout.strip() == url
    status = _cli("status", "--datadir", datadir)
    assert status.returncode == 0 and "running" in status.stdout
    env = _cli("env", "--datadir", datadir)
    assert f"export PGHOST={datadir}" in env.stdout
    assert _cli("stop", "--datadir", datadir).returncode == 0
    stopped = _cli("status", "--datadir", datadir)
    assert stopped.returncode == 3 and "stopped" in stopped.stdout


def test_cli_datadir_from_environment(workdir: Path) -> None:
    datadir = str(workdir / "envdata")
    env = {**os.environ, "CONDUCTOR_DEVDB_DIR": datadir}
    run = subprocess.run(
        [sys.executable, "-m", "pyconductor", "devdb", "start"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert DevDB(datadir).running
    help_text = subprocess.run(
        [sys.executable, "-m", "pyconductor", "devdb", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "CONDUCTOR_DEVDB_DIR" in help_text


def test_cli_url_without_cluster_fails_clearly(workdir: Path) -> None:
    run = _cli("url", "--datadir", str(workdir / "none"))
    assert run.returncode == 1
    assert "pyconductor devdb start" in run.stderr
