"""The documentation site: it builds with ``mkdocs build --strict``, its SQL
reference equals what the deployed functions' comments generate, and every
command and code block of the pages it owns runs.

How a page's blocks are run (the pages in ``RUNNABLE``; other helpers' pages
and the older ones are built, not run):

- Every fenced block tagged ``sh``, ``python`` or ``sql`` runs, in page order,
  against one fresh database per page (migrated, or empty when the page says
  ``<!-- docs-test: empty database -->``: it deploys the schema itself), in one
  working directory per page, with ``CONDUCTOR_DSN`` set and ``.venv/bin``
  first on ``PATH``. A block fails its page when it exits non-zero.
  ``sh``: ``bash -euo pipefail``; ``python``: a new interpreter each
  (``python -c``: no state is shared between blocks but files); ``sql``:
  ``psql -v ON_ERROR_STOP=1`` (so ``\\gset`` works within a block).
- A ``python`` block whose first line is ``# file: NAME`` is written to NAME
  in the working directory instead (what the reader saves, e.g. tasks.py).
- The line before a block's fence may say what else to do with it:
  ``<!-- not run: REASON -->`` shows it only (a reason is required);
  ``<!-- covered by: python/tests/test_x.py::test_name -->`` another test runs
  it (that test must exist); ``<!-- background -->`` starts an ``sh`` block
  and leaves it running (a worker the reader starts in another terminal),
  then stops it with SIGINT (Ctrl-C) when the page ends: it must exit 0;
  ``<!-- expect error: QC201 -->`` a ``sql`` block must fail with that SQLSTATE;
  ``<!-- until: REGEX -->`` an ``sh`` block that looks at something still
  happening (a worker in the background) runs again, for 60 s at most, until it
  exits 0 and its output matches REGEX (what the page says it shows).
- The web role's dashboard (``pyconductor serve``) listens on a free port of
  the test's in ``CONDUCTOR_DASHBOARD_PORT``; the page reads it with its
  default, ``${CONDUCTOR_DASHBOARD_PORT:-8765}``.
- Blocks in ``ini``, ``text`` or ``yaml`` are shown, never run; any other tag
  fails the page (so a typo cannot skip a block).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from conftest import Cluster
from helpers import REPO, assert_generated, load_script

DOCS = REPO / "docs"
RUNNABLE = ("index.md", "getting-started.md", "concepts.md", "operations.md", "comparison.md", "concurrency.md",
            "flow-control.md", "uniqueness.md", "debounce.md", "expiry.md", "versioning.md", "workflows.md",
            "graphs.md", "transactions.md")
RUN = ("sh", "python", "sql")
SHOWN = ("ini", "text", "yaml")
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,})(?P<lang>[\w-]*)[ \t]*$")
MARK = re.compile(r"^<!--\s*(?P<what>not run|covered by|background|expect error|until)\s*(?::\s*(?P<arg>.*?))?\s*-->$")
EMPTY_DATABASE = "<!-- docs-test: empty database -->"
VENV_BIN = Path(sys.executable).parent


@dataclass
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    mark: str | None  # not run, covered by, background, expect error, until
    arg: str | None

    def where(self) -> str:
        return f"docs/{self.page}:{self.line} ({self.lang})"

    @property
    def file_name(self) -> str | None:
        first = self.text.split("\n", 1)[0]
        match = re.fullmatch(r"# file: (\S+)", first.strip())
        return match.group(1) if self.lang == "python" and match else None


def blocks(page: str) -> list[Block]:
    """The fenced blocks of ``docs/<page>``, with the marker on the line before each."""
    lines = (DOCS / page).read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines))
                    if lines[j].strip() == opening["ticks"]), None)  # fmt: skip
        assert end is not None, f"docs/{page}:{i + 1}: a fence that is never closed"
        previous = lines[i - 1].strip() if i else ""
        mark = MARK.match(previous)
        indent = len(opening["indent"])
        text = "\n".join(line[indent:] for line in lines[i + 1:end]) + "\n"
        found.append(Block(page, i + 1, opening["lang"], text, mark["what"] if mark else None,
                           mark["arg"] if mark else None))  # fmt: skip
        i = end + 1
    return found


def test_every_block_of_the_runnable_pages_is_run_or_says_why() -> None:
    problems = []
    for page in RUNNABLE:
        for b in blocks(page):
            if b.lang not in RUN + SHOWN:
                problems.append(f"{b.where()}: tag it one of {RUN + SHOWN}, or it is neither run nor checked")
            if b.lang in SHOWN and b.mark:
                problems.append(f"{b.where()}: {b.lang} blocks are never run; drop the marker")
            if b.mark == "not run" and not (b.arg or "").strip():
                problems.append(f"{b.where()}: 'not run' needs a reason")
            if b.mark == "covered by":
                path, _, test = (b.arg or "").partition("::")
                source = REPO / path
                if not (test and source.is_file() and re.search(rf"^def {re.escape(test)}\(", source.read_text(), re.M)):
                    problems.append(f"{b.where()}: covered by {b.arg!r}, which does not exist")
            if b.mark == "background" and b.lang != "sh":
                problems.append(f"{b.where()}: only sh blocks run in the background")
            if b.mark == "until" and (b.lang != "sh" or not (b.arg or "").strip()):
                problems.append(f"{b.where()}: 'until' needs an sh block and a pattern")
            if b.mark == "expect error" and (b.lang != "sql" or not re.fullmatch(r"[0-9A-Z]{5}", b.arg or "")):
                problems.append(f"{b.where()}: 'expect error' takes a SQLSTATE and applies to sql blocks")
    assert not problems, "\n".join(problems)


def test_the_site_builds_with_strict(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=REPO, capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert out.returncode == 0, f"mkdocs build --strict failed:\n{out.stdout}\n{out.stderr}"
    for page in ("index.html", "getting-started/index.html", "reference/sql/index.html", "comparison/index.html"):
        assert (tmp_path / "site" / page).is_file(), page


def _sql_reference() -> ModuleType:
    return load_script("sql_reference")


def test_the_sql_reference_is_generated_from_the_schema(dsn: str) -> None:
    ref = _sql_reference()
    page, _functions = ref.generate(dsn)
    assert_generated(ref.OUTPUT, page, "the deployed schema")


def test_the_configuration_reference_is_generated_from_the_code(dsn: str) -> None:
    ref = load_script("config_reference")
    page, problems = ref.generate(dsn)
    assert problems == []
    assert_generated(ref.OUTPUT, page, "the code")


def test_every_function_has_its_contract_in_a_comment(dsn: str) -> None:
    # public functions and internal helpers alike: problems() names any without a comment
    ref = _sql_reference()
    _page, functions = ref.generate(dsn)
    assert len([f for f in functions if not f.internal]) > 40
    found = ref.problems(functions)
    assert found == [], "\n".join(found)


def test_the_reference_renders_a_signature_and_the_comment() -> None:
    text = (DOCS / "reference" / "sql.md").read_text()
    assert "conductor.claim(\n    worker_id text," in text
    assert "Granted to `conductor_worker`, `conductor_admin`; security definer" in text
    assert "Leases up to max_tasks ready tasks to worker_id" in text
    assert "`_enqueue`" in text  # internal helpers are named, apart


def _metric_names() -> set[str]:
    """Every metric the worker's /metrics can expose, from pyconductor.endpoints."""
    from pyconductor import endpoints

    source = Path(endpoints.__file__).read_text()
    names = set(re.findall(r'"(conductor_[a-z_]+)"', source))
    names |= {f"conductor_queue_{key}" for key in endpoints.QUEUE_GAUGES}
    names |= {f"conductor_queue_{outcome}" for outcome in ("succeeded", "failed")}
    counters = {"conductor_worker_tasks", "conductor_handler_runs", "conductor_retention_deleted",
                "conductor_worker_missed_notifications"}
    names |= {f"{name}_total" for name in counters}
    names |= {f"conductor_handler_duration_seconds_{part}" for part in ("bucket", "sum", "count")}
    return names


def test_the_metric_names_in_operations_exist() -> None:
    known = _metric_names()
    assert "conductor_queue_backlog_age_seconds" in known and "conductor_queue_ready" in known
    used = set(re.findall(r"\bconductor_[a-z_]+", (DOCS / "operations.md").read_text()))
    metrics = used - {"conductor_client", "conductor_worker", "conductor_admin", "conductor_owner"}  # the roles
    assert metrics, "operations.md names no metric"
    assert sorted(metrics - known) == []


# ---------------------------------------------------------------------------------- running the pages


@dataclass
class Background:
    block: Block
    process: subprocess.Popen[bytes]
    log: Path


def _fail(block: Block, what: str, out: str, backgrounds: list[Background]) -> None:
    logs = "".join(f"\n--- background {b.block.where()}:\n{b.log.read_text()[-3000:]}" for b in backgrounds)
    pytest.fail(f"{block.where()} {what}\n--- block:\n{block.text}--- output:\n{out[-4000:]}{logs}")


def _run(block: Block, cwd: Path, env: dict[str, str], url: str, psql: Path, backgrounds: list[Background]) -> None:
    if block.lang == "sh":
        argv = ["bash", "-euo", "pipefail", "-c", block.text]
    elif block.lang == "python":
        argv = [sys.executable, "-c", block.text]
    else:
        script = cwd / f"block-{block.line}.sql"
        script.write_text(block.text)
        argv = [str(psql), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose", "-d", url, "-f", str(script)]
    if block.mark == "background":
        log = cwd / f"background-{block.line}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True)  # fmt: skip
        backgrounds.append(Background(block, process, log))
        return
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False)
    out = done.stdout + done.stderr
    if block.mark == "until":
        deadline = time.monotonic() + 60
        while not (done.returncode == 0 and re.search(block.arg or "", done.stdout)):
            if time.monotonic() > deadline:
                _fail(block, f"never printed {block.arg!r} within 60 s (exit {done.returncode})", out, backgrounds)
            time.sleep(0.2)
            done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False)
            out = done.stdout + done.stderr
        return
    if block.mark == "expect error":
        if done.returncode == 0 or f"ERROR:  {block.arg}:" not in done.stderr:
            _fail(block, f"should fail with {block.arg}", out, backgrounds)
    elif done.returncode != 0:
        _fail(block, f"exited {done.returncode}", out, backgrounds)


def _stop(backgrounds: list[Background]) -> list[str]:
    """Ctrl-C for every background block; what did not exit 0."""
    problems = []
    for b in backgrounds:
        if b.process.poll() is None:
            os.killpg(b.process.pid, signal.SIGINT)
        try:
            code = b.process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(b.process.pid, signal.SIGKILL)
            code = b.process.wait(10)
        if code != 0:
            problems.append(f"{b.block.where()} exited {code} on Ctrl-C:\n{b.log.read_text()[-3000:]}")
    return problems


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _drop_roles(cluster: Cluster, roles: list[str]) -> None:
    from psycopg import sql

    with cluster.admin() as conn:
        for role in roles:
            conn.execute(sql.SQL("drop role if exists {}").format(sql.Identifier(role)))


@pytest.mark.parametrize("page", RUNNABLE)
def test_the_blocks_of_the_page_run(page: str, cluster: Cluster, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    text = (DOCS / page).read_text()
    url = request.getfixturevalue("empty_dsn" if EMPTY_DATABASE in text else "db_dsn")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CONDUCTOR_APP", "VIRTUAL_ENV")}
    env.update(CONDUCTOR_DSN=url, PATH=f"{VENV_BIN}:{os.environ['PATH']}", PYTHONUNBUFFERED="1",
               CONDUCTOR_DASHBOARD_PORT=str(_free_port()))  # fmt: skip
    # roles are the cluster's, not the database's: the ones a page creates go before and after it
    roles = sorted({r for b in blocks(page) if b.lang == "sql" for r in re.findall(r"create role (\w+)", b.text)})
    _drop_roles(cluster, roles)
    backgrounds: list[Background] = []
    ran = 0
    try:
        for block in blocks(page):
            if block.lang not in RUN or block.mark in ("not run", "covered by"):
                continue
            if block.file_name:
                compile(block.text, block.where(), "exec")  # a file nothing imports is still checked
                (tmp_path / block.file_name).write_text(block.text)
                continue
            _run(block, tmp_path, env, url, cluster.bindir / "psql", backgrounds)
            ran += 1
    finally:
        problems = _stop(backgrounds)
        _drop_roles(cluster, roles)
    assert not problems, "\n".join(problems)
    assert ran or not any(b.lang in RUN for b in blocks(page)), f"docs/{page}: nothing ran"
