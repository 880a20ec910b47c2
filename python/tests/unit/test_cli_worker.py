"""The worker and enqueue subcommands' parsing (no database)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pyconductor import Conductor
from pyconductor.cli import build_parser, main
from pyconductor.commands.options import load_app


def test_worker_flags_and_their_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONDUCTOR_QUEUES", "a,b")
    monkeypatch.setenv("CONDUCTOR_WORKER_MAX_INFLIGHT", "7")
    args = build_parser().parse_args(["worker", "--app", "m:app", "--lease", "30"])
    assert (args.app, args.queues, args.concurrency, args.lease, args.heartbeat, args.poll) == ("m:app", "a,b", 7, 30.0, 10.0, 10.0)
    assert (args.shutdown_grace, args.log_level) == (30.0, "INFO")


def test_help_names_the_environment(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["worker", "--help"])
    out = capsys.readouterr().out
    for var in ("CONDUCTOR_APP", "CONDUCTOR_QUEUES", "CONDUCTOR_WORKER_MAX_INFLIGHT", "CONDUCTOR_DSN", "CONDUCTOR_SHUTDOWN_GRACE"):
        assert var in out


def test_load_app_from_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pkg_for_cli_test").mkdir()
    (tmp_path / "pkg_for_cli_test" / "__init__.py").write_text("")
    (tmp_path / "pkg_for_cli_test" / "tasks.py").write_text(
        "from pyconductor import Conductor\napp = Conductor('postgresql://x.invalid/db')\nother = app\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    app = load_app("pkg_for_cli_test.tasks:app")
    assert isinstance(app, Conductor) and app.dsn == "postgresql://x.invalid/db"
    assert load_app("pkg_for_cli_test.tasks") is app
    assert load_app("pkg_for_cli_test.tasks:other") is app


def test_worker_without_app_fails_clearly(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONDUCTOR_APP", raising=False)
    assert main(["worker"]) == 1
    assert "--app" in capsys.readouterr().err


def test_enqueue_rejects_bad_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["enqueue", "k", "--payload", "{nope", "--dsn", "postgresql://x.invalid/db"]) == 1
    assert "not JSON" in capsys.readouterr().err
