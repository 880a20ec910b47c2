"""Passwords never shown, and which connection failures are worth retrying (no database)."""

from __future__ import annotations

import socket

import psycopg
import pytest

from pyconductor import defaults
from pyconductor.dsn import check_connect, permanent_problem, redact_dsn, tcp_options
from pyconductor.errors import DatabaseUnusable


@pytest.mark.parametrize(
    ("dsn", "shown"),
    [
        ("postgresql://app:s3cret@db.example:5432/prod", "postgresql://app:***@db.example:5432/prod"),
        ("postgres://app:s3c%40ret@db/prod?sslmode=require", "postgres://app:***@db/prod?sslmode=require"),
        ("postgresql://db/prod?sslmode=require&password=s3cret", "postgresql://db/prod?sslmode=require&password=***"),
        ("host=db user=app password=s3cret dbname=prod", "host=db user=app password=*** dbname=prod"),
        ("host=db password = 's3 cr\\'et' dbname=prod", "host=db password = *** dbname=prod"),
        ("host=db sslpassword=s3cret", "host=db sslpassword=***"),
        ("postgresql://app@db/prod", "postgresql://app@db/prod"),
        ("host=db user=app dbname=prod", "host=db user=app dbname=prod"),
        ('password authentication failed for user "app"', 'password authentication failed for user "app"'),
        ('bad URI: "postgresql://u:s3cret@[::1/db"', 'bad URI: "postgresql://u:***@[::1/db"'),
    ],
)
def test_redact_dsn(dsn: str, shown: str) -> None:
    assert redact_dsn(dsn) == shown
    assert "s3" not in redact_dsn(dsn) or "s3" not in dsn


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def connect_error(dsn: str) -> psycopg.Error:
    with pytest.raises(psycopg.Error) as info:
        psycopg.connect(dsn, connect_timeout=2)
    return info.value


def test_what_is_permanent() -> None:
    refused = connect_error(f"postgresql://u:pw@127.0.0.1:{free_port()}/db")
    assert permanent_problem(refused) is None  # the server may be restarting
    assert permanent_problem(connect_error("postgresql://u:pw@no-such-host.invalid/db")) == "unknown host name"
    assert permanent_problem(connect_error("host=127.0.0.1 port=abc")) == "invalid DSN"
    assert permanent_problem(connect_error("host=127.0.0.1 nonsense=1")) == "invalid DSN"
    assert permanent_problem(connect_error("postgresql://u:pw@[::1/db")) == "invalid DSN"
    for text, problem in [
        ('FATAL:  password authentication failed for user "app"', "authentication failed"),
        ('FATAL:  database "prod" does not exist', "the database does not exist"),
        ('FATAL:  role "app" does not exist', "the role does not exist"),
        ('FATAL:  no pg_hba.conf entry for host "10.0.0.1", user "app"', "the server's pg_hba.conf refuses this connection"),
        ("FATAL:  the database system is starting up", None),
        ("FATAL:  sorry, too many clients already", None),
        ("failed to resolve host 'db': [Errno -3] Temporary failure in name resolution", None),
    ]:
        assert permanent_problem(psycopg.OperationalError(text)) == problem, text


def test_check_connect_names_the_database_without_the_password() -> None:
    port = free_port()
    assert isinstance(check_connect(f"postgresql://u:s3cret@127.0.0.1:{port}/db", timeout=2), psycopg.OperationalError)
    with pytest.raises(DatabaseUnusable) as info:
        check_connect("postgresql://app:s3cret@no-such-host.invalid:5432/prod", timeout=2)
    message = str(info.value)
    assert "s3cret" not in message and "app:***@no-such-host.invalid:5432/prod" in message
    assert "unknown host name" in message and "Not retrying" in message
    assert info.value.__cause__ is None and info.value.__suppress_context__
    with pytest.raises(DatabaseUnusable, match="invalid DSN") as info:
        check_connect("postgresql://app:s3cret@[::1/prod")
    assert "s3cret" not in str(info.value)


def test_tcp_options_fill_in_only_what_the_dsn_does_not_set() -> None:
    assert tcp_options("postgresql://u@h/db") == defaults.TCP_OPTIONS
    assert tcp_options("host=h keepalives_idle=1 tcp_user_timeout=0") == {
        "keepalives": "1", "keepalives_interval": "5", "keepalives_count": "3"}  # fmt: skip
    assert "keepalives_interval" not in tcp_options("postgresql://h/db?keepalives_interval=2")
    assert tcp_options("not a dsn = =") == {}
