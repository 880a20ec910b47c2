"""The README's first command in a checkout the server's OS user cannot enter.

As root the development cluster runs as ``postgres``, which must traverse
every parent of its data dir; a clone under a mode-700 directory (``/root``,
``mktemp -d``) is out of its reach. ``make demo`` must still do all the
set-up: the cluster goes to ``/var/tmp/conductor-devdb-<hash>``, ``.devdb``
links to it, and ``make clean`` removes both. The clone is of the last commit
(``git clone``), as CI's is. After it, ``pyconductor dashboard`` shows the
demo's runs (issue 27: the demo's ``.venv`` has the ``dashboard`` extra).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from helpers import wait_until

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only root runs the server as another OS user")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_make_demo_in_a_private_checkout(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    clone = private / "conductor"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("CONDUCTOR_DEVDB_DIR", "CONDUCTOR_DSN", "DATABASE_URL", "VIRTUAL_ENV")}  # fmt: skip
    target: Path | None = None
    try:
        run = subprocess.run(["make", "demo"], cwd=clone, env=env, capture_output=True, text=True, timeout=1200)
        assert run.returncode == 0, f"make demo failed:\n{run.stdout[-4000:]}\n{run.stderr[-4000:]}"
        link = clone / ".devdb"
        assert link.is_symlink(), "the cluster should live outside the private checkout"
        target = link.resolve()
        assert target.parent == Path("/var/tmp") and target.name.startswith("conductor-devdb-")
        assert (target / "PG_VERSION").is_file()
        # what a newcomer does next (docs/getting-started.md): the dashboard on the demo's runs
        log = tmp_path / "serve.log"
        with log.open("wb") as out:
            argv = [str(clone / ".venv/bin/pyconductor"), "dashboard", "--port", str(free_port())]
            serve = subprocess.Popen(argv, cwd=clone, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            def url() -> str | None:
                assert serve.poll() is None, f"the dashboard exited {serve.returncode}:\n{log.read_text()[-3000:]}"
                m = re.search(r"dashboard on (http://\S+?)/?\s", log.read_text())
                return m.group(1) if m else None

            base = wait_until(url, timeout=60, interval=0.1, message=lambda: log.read_text()[-3000:])

            def runs() -> str | None:  # the line comes as the server starts: it may not answer yet
                assert serve.poll() is None, f"the dashboard exited {serve.returncode}:\n{log.read_text()[-3000:]}"
                try:
                    with urllib.request.urlopen(base + "/runs?kind=demo.send_email", timeout=10) as resp:
                        return str(resp.read().decode()) if resp.status == 200 else None
                except urllib.error.URLError:
                    return None

            page = wait_until(runs, timeout=60, interval=0.2, message=lambda: log.read_text()[-3000:])
            assert "demo.send_email" in page, page[-2000:]
        finally:
            if serve.poll() is None:
                serve.send_signal(signal.SIGINT)
            assert serve.wait(60) == 0, log.read_text()[-3000:]
    finally:
        subprocess.run(["make", "clean"], cwd=clone, env=env, capture_output=True, text=True, timeout=120)
    assert not (clone / ".devdb").exists() and not (clone / ".devdb").is_symlink()
    assert target is None or not target.exists(), f"make clean left {target}"
