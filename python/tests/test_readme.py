"""The README's first commands, run as written: its worker of examples/myapp.py
and its ``pyconductor enqueue send_email`` land the task where that worker claims it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import psycopg
from helpers import REPO, wait_until

Conn = psycopg.Connection[tuple[object, ...]]


def readme_command(prefix: str) -> str:
    """The one line of the README's shell blocks that starts with ``prefix``."""
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    lines = [line for block in blocks for line in block.splitlines() if line.startswith(prefix)]
    assert len(lines) == 1, f"expected one README line starting with {prefix!r}, found {lines}"
    return lines[0]


def test_the_readme_worker_and_enqueue_commands_work_as_written(db_dsn: str, db_conn: Conn, tmp_path: Path) -> None:
    worker_line = readme_command("pyconductor worker --app examples.myapp:app --queues emails,default")
    enqueue_line = readme_command("pyconductor enqueue send_email")
    env = {**os.environ, "CONDUCTOR_DSN": db_dsn, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen(["bash", "-c", f"exec {worker_line}"], cwd=REPO, env=env, stdout=out,
                                  stderr=subprocess.STDOUT)  # fmt: skip
        try:
            wait_until(lambda: db_conn.execute("select count(*) from conductor.workers").fetchone() == (1,),
                       timeout=30, message=lambda: log.read_text())  # fmt: skip
            done = subprocess.run(["bash", "-c", enqueue_line], cwd=tmp_path, env=env, capture_output=True, text=True,
                                  timeout=60, check=False)  # fmt: skip
            assert done.returncode == 0, done.stderr
            task_id = int(done.stdout)
            row = wait_until(lambda: db_conn.execute(
                "select status::text, queue, max_attempts, result from conductor.tasks where id = %s and status = 'succeeded'",
                (task_id,)).fetchone(), timeout=30, message=lambda: log.read_text())  # fmt: skip
            assert row == ("succeeded", "emails", 3, {"sent_to": "a@b.c"})
        finally:
            worker.send_signal(signal.SIGTERM)
            code = worker.wait(30)
    assert code == 0, log.read_text()
