"""Fixtures for Conductor's pytest suite: a real PostgreSQL, never mocks.

Session:
  cluster        one server for the whole session: a throwaway ``pyconductor
                 devdb`` cluster in a temp dir, or the server at
                 $CONDUCTOR_TEST_DSN (a URL whose user may create databases).
                 Exposes bindir, datadir, port, url(dbname), restart().
  template_db    name of a database migrated once with pyconductor.migrate
                 (``conductor_template``); cloned by the fixtures below.
Module:
  dsn            URL of a fresh database cloned from the template, one per
                 test module.
Function:
  conn           psycopg autocommit connection to ``dsn``.
  db_dsn         URL of a fresh database per test (cheap template clone), for
                 tests that need isolation.
  db_conn        psycopg autocommit connection to ``db_dsn``.

``from helpers import wait_until`` awaits a condition instead of sleeping.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from helpers import REPO  # noqa: F401 - re-exported for tests
from tiers import QUICK, tier_of
from pyconductor.dev.devdb import DevDB, DevDBError, find_bindir, throwaway_cluster
from pyconductor.migrate import migrate

TEMPLATE = "conductor_template"


@dataclass
class Cluster:
    """The test server. ``devdb`` is None when running against $CONDUCTOR_TEST_DSN."""

    server_dsn: str
    devdb: DevDB | None

    @property
    def bindir(self) -> Path:
        return self.devdb.bindir if self.devdb else find_bindir()

    @property
    def datadir(self) -> Path | None:
        return self.devdb.datadir if self.devdb else None

    @property
    def port(self) -> int:
        return int(conninfo_to_dict(self.server_dsn).get("port") or 5432)

    @property
    def host(self) -> str:
        return str(conninfo_to_dict(self.server_dsn).get("host") or "127.0.0.1")

    @property
    def user(self) -> str:
        return str(conninfo_to_dict(self.server_dsn).get("user") or "")

    def url(self, dbname: str) -> str:
        return make_conninfo(self.server_dsn, dbname=dbname)

    def admin(self) -> psycopg.Connection[tuple[object, ...]]:
        """Autocommit connection to the maintenance database ``postgres``."""
        return psycopg.connect(self.url("postgres"), autocommit=True)

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: every connection drops, data stays."""
        if self.devdb is None:
            pytest.skip("restart needs the throwaway cluster, not $CONDUCTOR_TEST_DSN")
        self.devdb.restart()

    def create_database(self, name: str, template: str | None = None) -> str:
        with self.admin() as conn:
            conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))
            stmt = sql.SQL("create database {}").format(sql.Identifier(name))
            if template:
                stmt += sql.SQL(" template {}").format(sql.Identifier(template))
            conn.execute(stmt)
        return self.url(name)

    def drop_database(self, name: str) -> None:
        with self.admin() as conn:
            conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))

    def schema_dump(self, dbname: str) -> str:
        """``pg_dump --schema-only -n conductor`` of ``dbname``, comparable across databases."""
        dump = self.pg_dump(dbname, "--schema-only", "-n", "conductor")
        # pg_dump >= 15.14 brackets the dump in \\restrict <random key> lines.
        return "\n".join(line for line in dump.splitlines() if not line.startswith(("\\restrict", "\\unrestrict")))

    def sqitch(self, dbname: str, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
        """``sqitch <args> db:pg://.../dbname`` run from the repository (sqitch's own
        config under ``home``); the caller checks the return code."""
        info = conninfo_to_dict(self.server_dsn)
        user = quote(str(info.get("user") or ""), safe="")
        env = {
            **os.environ,
            "SQITCH_USER_NAME": "pytest",
            "SQITCH_USER_EMAIL": "pytest@conductor.invalid",
            "SQITCH_USER_CONFIG": str(home / "sqitch-user.conf"),
        }
        if info.get("password"):
            env["PGPASSWORD"] = str(info["password"])
        target = f"db:pg://{user}@{self.host}:{self.port}/{dbname}"
        return subprocess.run(["sqitch", *args, target], cwd=REPO, capture_output=True, text=True, env=env,
                              timeout=300, check=False)  # fmt: skip

    def pg_dump(self, dbname: str, *args: str) -> str:
        """Output of this server's ``pg_dump`` for ``dbname``."""
        out = subprocess.run(
            [str(self.bindir / "pg_dump"), *args, "-d", self.url(dbname)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if out.returncode != 0:
            raise AssertionError(f"pg_dump failed: {out.stderr}")
        return out.stdout


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The versions under test, in the header: make test runs several (issue 27)."""
    if os.environ.get("CONDUCTOR_TEST_DSN"):
        server = "the server at $CONDUCTOR_TEST_DSN"
    else:
        try:
            bindir = find_bindir()
        except DevDBError as exc:  # the cluster fixture fails with it, test by test
            server = str(exc)
        else:
            version = subprocess.run([str(bindir / "postgres"), "--version"], capture_output=True, text=True,
                                     check=False).stdout.strip()  # fmt: skip
            server = f"{version or 'unknown version'} from {bindir}"
    try:
        import django
    except ImportError:
        framework = "Django not installed"
    else:
        tasks = "django.tasks" if find_spec("django.tasks") else "the django-tasks backport"
        framework = f"Django {django.get_version()}, Tasks from {tasks}"
    return [f"conductor: {server}; {framework}"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its module's tier (tiers.py), and ``quick`` what make
    test-quick runs; a module of python/tests the table does not name stops the run."""
    tests = Path(__file__).resolve().parent
    untiered: set[str] = set()
    for item in items:
        try:
            module = item.path.resolve().relative_to(tests).as_posix()
        except ValueError:  # not one of python/tests
            continue
        tier = tier_of(module)
        if tier is None:
            untiered.add(module)
            continue
        item.add_marker(tier)
        if tier == "unit" or module in QUICK:
            item.add_marker("quick")
    if untiered:
        raise pytest.UsageError(f"no tier for {', '.join(sorted(untiered))}: name each test module in one tier "
                                "of python/tests/tiers.py")  # fmt: skip


_counter = itertools.count(1)


def _dbname(prefix: str) -> str:
    """A database name unique in this session: ``t<pid>_<n>_<prefix>``, at most 63 bytes."""
    clean = re.sub(r"[^a-z0-9_]", "_", prefix.lower())
    return f"t{os.getpid()}_{next(_counter)}_{clean}"[:63]


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    external = os.environ.get("CONDUCTOR_TEST_DSN")
    if external:
        yield Cluster(server_dsn=external, devdb=None)
        return
    with throwaway_cluster(dbname=None) as db:
        yield Cluster(server_dsn=db.url("postgres"), devdb=db)


@pytest.fixture(scope="session")
def template_db(cluster: Cluster) -> Iterator[str]:
    """``conductor_template``: migrated once, then only cloned."""
    name = TEMPLATE if cluster.devdb else f"{TEMPLATE}_{os.getpid()}"
    url = cluster.create_database(name)
    migrate(url, progress=lambda line: None)
    yield name
    cluster.drop_database(name)


@pytest.fixture(scope="module")
def dsn(cluster: Cluster, template_db: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh migrated database for this test module."""
    name = _dbname(request.module.__name__.rpartition(".")[2])
    url = cluster.create_database(name, template=template_db)
    yield url
    cluster.drop_database(name)


@pytest.fixture
def db_dsn(cluster: Cluster, template_db: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh migrated database for this one test."""
    name = _dbname(request.node.name)
    url = cluster.create_database(name, template=template_db)
    yield url
    cluster.drop_database(name)


@pytest.fixture
def empty_dsn(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh empty database (nothing deployed) for this one test."""
    name = _dbname("empty_" + request.node.name)
    url = cluster.create_database(name)
    yield url
    cluster.drop_database(name)


@pytest.fixture
def conn(dsn: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    with psycopg.connect(dsn, autocommit=True) as c:
        yield c


@pytest.fixture
def db_conn(db_dsn: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    with psycopg.connect(db_dsn, autocommit=True) as c:
        yield c
