"""A primary and its synchronous streaming standby: two local PostgreSQL
clusters the failover test starts and stops itself.

``sync_pair(workdir)`` (a context manager) builds:

- the primary: ``initdb``, ``wal_level = replica``, a replication role
  ``replicator`` (password, ``scram-sha-256``, its own pg_hba line for
  ``replication`` from 127.0.0.1) and the ``synchronous_commit`` asked for
  (default ``on``); ``synchronous_standby_names = 'FIRST 1 (standby1)'`` is
  set (and the configuration reloaded) only once the standby streams, since
  until then every commit would wait for it;
- the standby: ``pg_basebackup -R -X stream`` of the primary as
  ``replicator`` with ``application_name=standby1`` (so ``-R`` writes a
  ``primary_conninfo`` the primary's synchronous_standby_names names), its
  own port and socket, and ``synchronous_standby_names = ''``: once promoted
  it is a primary with no standby, whose commits must not wait for one;
- a wait until ``pg_stat_replication`` shows the standby streaming as
  ``sync``.

Each node listens on 127.0.0.1 only, on a free port, with its Unix socket in
a short directory of its own; the servers run as the ``postgres`` OS user
(``runuser``) when the test runs as root, as pyconductor.dev.devdb does. On exit
both are stopped (``immediate``: a failover test has no data to keep) and
the work directory's clusters removed.

``Pair.dsn(dbname)`` is the multi-host DSN clients and workers use:
``host=127.0.0.1,127.0.0.1 port=P1,P2 ... target_session_attrs=read-write``,
so libpq connects to whichever node accepts writes.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import pwd
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg
from helpers import wait_until

from pyconductor.dev.devdb import find_bindir, free_port

__all__ = ["Node", "Pair", "TopologyError", "sync_pair"]

REPLICATOR = "replicator"
REPLICATOR_PASSWORD = "failover-test"
STANDBY_NAME = "standby1"
CONF = "topology.conf"
START_TIMEOUT = 60  # seconds pg_ctl waits for a start, a stop or a promotion


class TopologyError(RuntimeError):
    """A cluster of the pair could not be made, started, stopped or promoted."""


def _as_postgres() -> bool:
    return os.geteuid() == 0


def _superuser() -> str:
    return "postgres" if _as_postgres() else getpass.getuser()


def _give_to_postgres(*paths: Path) -> None:
    if not _as_postgres():
        return
    pw = pwd.getpwnam("postgres")
    for path in paths:
        os.chown(path, pw.pw_uid, pw.pw_gid)


def _run(argv: Sequence[str], *, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``argv`` as the server's OS user; raises TopologyError when it fails and ``check``."""
    full = ["runuser", "-u", "postgres", "--", *argv] if _as_postgres() else list(argv)
    proc = subprocess.run(full, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=timeout)
    if check and proc.returncode != 0:
        raise TopologyError(f"{' '.join(full)} failed ({proc.returncode}):\n{(proc.stderr or proc.stdout).strip()}")
    return proc


@dataclass
class Node:
    """One cluster of the pair: its data dir, port, socket dir and log."""

    name: str
    datadir: Path
    port: int
    socket_dir: Path
    logfile: Path
    bindir: Path

    def _bin(self, name: str) -> str:
        return str(self.bindir / name)

    def url(self, dbname: str = "postgres") -> str:
        """A single-host libpq DSN of ``dbname`` on this node (TCP, 127.0.0.1)."""
        return f"host=127.0.0.1 port={self.port} user={_superuser()} dbname={dbname}"

    def connect(self, dbname: str = "postgres") -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(self.url(dbname), autocommit=True, connect_timeout=5)

    def write_conf(self, settings: Mapping[str, str]) -> None:
        """This node's own settings, in ``topology.conf`` (included by postgresql.conf)."""
        lines = [f"# Written by python/tests/topology.py for node {self.name}."]
        base = {
            "port": str(self.port),
            "listen_addresses": "127.0.0.1",
            "unix_socket_directories": str(self.socket_dir),
        }
        for key, value in {**base, **settings}.items():
            lines.append(f"{key} = '{value}'")
        path = self.datadir / CONF
        path.write_text("\n".join(lines) + "\n")
        _give_to_postgres(path)

    def start(self) -> None:
        _run([self._bin("pg_ctl"), "-D", str(self.datadir), "-l", str(self.logfile), "-w",
              "-t", str(START_TIMEOUT), "start"])  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """``pg_ctl stop -m mode``: ``immediate`` is a crash (no shutdown checkpoint,
        every backend killed at once, clients see their connections drop)."""
        _run([self._bin("pg_ctl"), "-D", str(self.datadir), "-m", mode, "-w", "-t", str(START_TIMEOUT), "stop"])

    def promote(self) -> None:
        """``pg_ctl promote -w``: returns once this standby accepts writes."""
        _run([self._bin("pg_ctl"), "-D", str(self.datadir), "-w", "-t", str(START_TIMEOUT), "promote"])

    @property
    def running(self) -> bool:
        return _run([self._bin("pg_ctl"), "-D", str(self.datadir), "status"], check=False).returncode == 0

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.logfile.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@dataclass
class Pair:
    """The primary, its synchronous standby, and the DSN that follows the writable one."""

    primary: Node
    standby: Node
    synchronous_commit: str

    def dsn(self, dbname: str) -> str:
        """The multi-host DSN of ``dbname``: libpq tries each node in turn and keeps
        the first that accepts writes (``target_session_attrs=read-write``)."""
        return (f"host=127.0.0.1,127.0.0.1 port={self.primary.port},{self.standby.port} user={_superuser()} "
                f"dbname={dbname} target_session_attrs=read-write")  # fmt: skip

    def replication(self) -> list[tuple[str, str, str]]:
        """(application_name, state, sync_state) of each standby the primary streams to."""
        with self.primary.connect() as conn:
            rows = conn.execute("select application_name, state, sync_state from pg_stat_replication").fetchall()
        return [(str(a), str(b), str(c)) for a, b, c in rows]


def _node(name: str, workdir: Path, bindir: Path) -> Node:
    socket_dir = workdir / f"s-{name}"
    socket_dir.mkdir(mode=0o755)
    _give_to_postgres(socket_dir)
    return Node(name=name, datadir=workdir / name, port=free_port(), socket_dir=socket_dir,
                logfile=workdir / "logs" / f"{name}.log", bindir=bindir)  # fmt: skip


@contextlib.contextmanager
def sync_pair(workdir: Path, *, synchronous_commit: str = "on",
              settings: Mapping[str, str] | None = None) -> Iterator[Pair]:  # fmt: skip
    """A running primary with a streaming synchronous standby under ``workdir``
    (which must be reachable by the postgres OS user); both stopped on exit."""
    bindir = find_bindir()
    workdir.mkdir(parents=True, exist_ok=True)
    workdir.chmod(0o755)
    (workdir / "logs").mkdir(mode=0o755)
    _give_to_postgres(workdir / "logs")
    primary = _node("primary", workdir, bindir)
    standby = _node("standby", workdir, bindir)
    common = {"shared_buffers": "32MB", "max_connections": "200", **(settings or {})}
    started: list[Node] = []
    try:
        primary.datadir.mkdir(mode=0o700)
        _give_to_postgres(primary.datadir)
        _run([str(bindir / "initdb"), "-D", str(primary.datadir), "-U", _superuser(), "--auth=trust",
              "--encoding=UTF8", "--no-locale", "--no-instructions"])  # fmt: skip
        (primary.datadir / "pg_hba.conf").write_text(
            "# Written by python/tests/topology.py: the superuser by trust (local and 127.0.0.1),\n"
            "# replication only for the replicator role, with its password.\n"
            "local   all             all                          trust\n"
            "host    all             all          127.0.0.1/32    trust\n"
            f"host    replication     {REPLICATOR}   127.0.0.1/32    scram-sha-256\n"
        )
        with (primary.datadir / "postgresql.conf").open("a") as conf:
            conf.write(f"\ninclude_if_exists = '{CONF}'\n")
        primary_settings = {
            **common,
            "wal_level": "replica",
            "max_wal_senders": "4",
            "synchronous_commit": synchronous_commit,
        }  # fmt: skip
        # No synchronous standby named yet: until one streams, every commit
        # (creating the replication role, say) would wait for it forever.
        primary.write_conf({**primary_settings, "synchronous_standby_names": ""})
        primary.start()
        started.append(primary)
        with primary.connect() as conn:
            conn.execute(f"create role {REPLICATOR} with login replication password '{REPLICATOR_PASSWORD}'")
        standby.datadir.mkdir(mode=0o700)
        _give_to_postgres(standby.datadir)
        # The backup is taken as the replication role, over TCP, with the
        # application_name the primary's synchronous_standby_names names:
        # -R writes exactly that into the standby's primary_conninfo.
        _run([str(bindir / "pg_basebackup"), "-D", str(standby.datadir), "-R", "-X", "stream", "-c", "fast",
              "-d", f"host=127.0.0.1 port={primary.port} user={REPLICATOR} password={REPLICATOR_PASSWORD} "
                    f"application_name={STANDBY_NAME}"])  # fmt: skip
        standby.write_conf({**common, "hot_standby": "on", "synchronous_standby_names": ""})
        standby.start()
        started.append(standby)
        pair = Pair(primary=primary, standby=standby, synchronous_commit=synchronous_commit)
        wait_until(lambda: (STANDBY_NAME, "streaming", "async") in pair.replication(), timeout=60, interval=0.05,
                   message=f"the standby streaming to the primary as {STANDBY_NAME}")  # fmt: skip
        primary.write_conf({**primary_settings, "synchronous_standby_names": f"FIRST 1 ({STANDBY_NAME})"})
        with primary.connect() as conn:
            conn.execute("select pg_reload_conf()")
        wait_until(lambda: (STANDBY_NAME, "streaming", "sync") in pair.replication(), timeout=60, interval=0.05,
                   message=f"the primary waiting for {STANDBY_NAME} as its synchronous standby")  # fmt: skip
        yield pair
    finally:
        for node in reversed(started):
            if node.running:
                with contextlib.suppress(TopologyError, subprocess.TimeoutExpired):
                    node.stop("immediate")
        for node in (primary, standby):
            shutil.rmtree(node.datadir, ignore_errors=True)
            shutil.rmtree(node.socket_dir, ignore_errors=True)
