"""The worker's fleet flags (--kinds, --processes), what a --processes child is
given, the defaults' one home, and the extras (no database)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from helpers import REPO
from pyconductor import defaults
from pyconductor.cli import build_parser, main
from pyconductor.commands.worker import CHILD_FLAGS, SUPERVISOR_ENV, SUPERVISOR_FLAGS, child_argv, child_env
from pyconductor.supervisor import RESTART_DELAY_MAX, RESTART_DELAY_MIN, restart_delay

WORKER_ENV = ("CONDUCTOR_QUEUES", "CONDUCTOR_KINDS", "CONDUCTOR_PROCESSES", "CONDUCTOR_WORKER_MAX_INFLIGHT",
              "CONDUCTOR_WORKER_ID", "CONDUCTOR_DSN", "DATABASE_URL", "CONDUCTOR_WORKER_HTTP")  # fmt: skip


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in WORKER_ENV:
        monkeypatch.delenv(var, raising=False)


def worker_args(*argv: str):  # type: ignore[no-untyped-def]
    return build_parser().parse_args(["worker", "--app", "m:app", *argv])


def test_worker_defaults_come_from_pyconductor_defaults() -> None:
    args = worker_args()
    assert (args.concurrency, args.lease, args.heartbeat, args.poll, args.reap, args.shutdown_grace,
            args.cancel_grace, args.tick_interval) == (
        defaults.CONCURRENCY, defaults.LEASE, defaults.HEARTBEAT_INTERVAL, defaults.POLL_INTERVAL,
        defaults.REAP_INTERVAL, defaults.SHUTDOWN_GRACE, defaults.CANCEL_GRACE, defaults.TICK_INTERVAL)  # fmt: skip
    assert (args.processes, args.kinds) == (1, None)
    assert build_parser().parse_args(["scheduler"]).tick_interval == defaults.TICK_INTERVAL


def test_kinds_and_processes_from_flags_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert (worker_args("--kinds", "a,b", "--processes", "3").kinds, worker_args("--processes", "3").processes) == ("a,b", 3)
    monkeypatch.setenv("CONDUCTOR_KINDS", "send_email")
    monkeypatch.setenv("CONDUCTOR_PROCESSES", "4")
    args = worker_args()
    assert (args.kinds, args.processes) == ("send_email", 4)


def test_help_names_the_new_environment(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["worker", "--help"])
    out = capsys.readouterr().out
    assert "CONDUCTOR_KINDS" in out and "CONDUCTOR_PROCESSES" in out
    assert "--supervisor-fd" not in out  # the supervisor's own protocol


def test_processes_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["worker", "--app", "m:app", "--processes", "0"]) == 1
    assert "--processes must be 1 or more" in capsys.readouterr().err


def test_processes_with_no_workers_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["worker", "--app", "m:app", "--processes", "2", "--no-workers"]) == 1
    assert "nothing for them to do" in capsys.readouterr().err


def test_every_worker_flag_is_either_forwarded_to_a_child_or_the_supervisors() -> None:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    dests = {action.dest for action in subparsers.choices["worker"]._actions if action.dest != "help"}
    assert set(CHILD_FLAGS) | SUPERVISOR_FLAGS == dests
    assert not set(CHILD_FLAGS) & SUPERVISOR_FLAGS


def test_a_child_gets_the_supervisors_options_but_not_its_server_nor_the_dsn() -> None:
    args = worker_args("--queues", "a,b", "--kinds", "k1", "--concurrency", "4", "--lease", "5",
                       "--no-scheduler", "--http", "127.0.0.1:9100", "--metrics-token", "secret",
                       "--dsn", "postgresql://u:pw@h/db", "--processes", "3", "--worker-id", "w")  # fmt: skip
    argv = child_argv(args, 2, 1)
    pairs = dict(zip(argv[::2], argv[1::2]))
    assert pairs["--app"] == "m:app" and pairs["--queues"] == "a,b" and pairs["--kinds"] == "k1"
    assert (pairs["--concurrency"], pairs["--lease"], pairs["--no-scheduler"], pairs["--no-workers"]) == ("4", "5.0", "1", "0")
    assert pairs["--worker-id"] == "w-2.1" and child_argv(args, 2, 3)[-1] == "w-2.3"
    assert not {"--http", "--metrics-token", "--dsn", "--processes"} & set(argv)
    assert "pw" not in " ".join(argv)
    # the child parses what it is given back to the same options
    child = build_parser().parse_args(["worker", *argv])
    assert all(getattr(child, dest) == getattr(args, dest) for dest in CHILD_FLAGS)
    assert child.processes == 1


def test_a_childs_environment_has_the_dsn_and_none_of_the_supervisors_settings() -> None:
    environ = {"PATH": "/bin", "DATABASE_URL": "postgresql://old/db", **{var: "x" for var in SUPERVISOR_ENV}}
    env = child_env(worker_args("--dsn", "postgresql://u:pw@h/db"), environ)
    assert env == {"PATH": "/bin", "CONDUCTOR_DSN": "postgresql://u:pw@h/db"}
    assert child_env(worker_args(), {"PATH": "/bin", "CONDUCTOR_PROCESSES": "4"}) == {"PATH": "/bin"}


def test_restart_delay_doubles_up_to_its_cap() -> None:
    delays = [restart_delay(n) for n in range(1, 12)]
    assert delays[:4] == [RESTART_DELAY_MIN, 2 * RESTART_DELAY_MIN, 4 * RESTART_DELAY_MIN, 8 * RESTART_DELAY_MIN]
    assert delays[-1] == RESTART_DELAY_MAX and delays == sorted(delays)


def test_the_dashboard_without_its_extra_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.delitem(sys.modules, "pyconductor.dashboard", raising=False)
    # `import starlette` (and any of its modules another test imported) now fails as if not installed
    for name in ["starlette", *(m for m in sys.modules if m.startswith("starlette."))]:
        monkeypatch.setitem(sys.modules, name, None)
    assert main(["dashboard", "--dsn", "postgresql://x.invalid/db"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'conductor-pg[dashboard]'" in err and "starlette" in err


def test_a_worker_imports_no_web_library() -> None:
    """A plain install has none of them (they are extras): importing the worker must not need them."""
    code = ("import sys, pyconductor, pyconductor.worker, pyconductor.cli, pyconductor.supervisor\n"
            "print(sorted(m for m in ('starlette', 'uvicorn', 'prometheus_client') if m in sys.modules))")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "[]"
