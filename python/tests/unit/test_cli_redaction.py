"""No command prints a DSN's password, whatever goes wrong with it (no database:
the DSNs point at nothing or do not parse)."""

from __future__ import annotations

import socket

import pytest

from pyconductor.cli import main

PASSWORD = "s3cret-pw-5678"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def dsns() -> list[str]:
    return [
        f"postgresql://app:{PASSWORD}@[::1/prod",  # libpq quotes the whole URI in its error
        f"host=127.0.0.1 port={closed_port()} user=app password={PASSWORD} dbname=prod",
        f"postgresql://app:{PASSWORD}@127.0.0.1:{closed_port()}/prod",
    ]


@pytest.mark.parametrize(
    "argv",
    [["stats"], ["tasks"], ["schedules"], ["demo", "--tasks", "1"], ["worker", "--app", "apps.proc_app:app"]],
    ids=lambda argv: argv[0],
)
def test_no_command_prints_the_password(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for dsn in dsns():
        monkeypatch.setenv("CONDUCTOR_DSN", dsn)  # the worker's app reads it
        if argv[0] in ("worker", "demo") and "[::1" not in dsn:
            # a refused connection is waited for (see test_worker_database_errors), by the
            # demo's client pool for 30 s: too slow for this file
            continue
        code = main([*argv, "--dsn", dsn])
        out, err = capsys.readouterr()
        assert code != 0, (argv, dsn)
        assert PASSWORD not in out + err, (argv, dsn, err)
        assert err.strip(), (argv, dsn)
