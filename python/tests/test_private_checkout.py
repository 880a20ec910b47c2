"""The README's first command in a checkout the server's OS user cannot enter.

As root the development cluster runs as ``postgres``, which must traverse
every parent of its data dir; a clone under a mode-700 directory (``/root``,
``mktemp -d``) is out of its reach. ``make demo`` must still do all the
set-up: the cluster goes to ``/var/tmp/conductor-devdb-<hash>``, ``.devdb``
links to it, and ``make clean`` removes both. The clone is of the last commit
(``git clone``), as CI's is.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only root runs the server as another OS user")


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
    finally:
        subprocess.run(["make", "clean"], cwd=clone, env=env, capture_output=True, text=True, timeout=120)
    assert not (clone / ".devdb").exists() and not (clone / ".devdb").is_symlink()
    assert target is None or not target.exists(), f"make clean left {target}"
