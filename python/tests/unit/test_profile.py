"""A connection profile is decided once and handed down (issue 28; no database).

``profile_from`` turns a ``pooler`` setting into a :class:`ConnectionProfile`
and is the one place ``$CONDUCTOR_POOLER`` is read: a profile handed down is
kept as it is, whatever the environment says, so the services a worker starts
follow the worker's profile rather than reading the environment again.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pyconductor.profile import DIRECT, ConnectionProfile, profile_from

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "pyconductor"
POOLED = ConnectionProfile("transaction")


@pytest.mark.parametrize("setting", ["transaction", "TRANSACTION", " transaction "])
def test_a_transaction_mode_pooler_keeps_no_session(setting: str) -> None:
    profile = profile_from(setting)
    assert profile == POOLED
    assert not profile.listens and not profile.keeps_session


@pytest.mark.parametrize("setting", ["", "none", "session", "direct", "None"])
def test_a_session_of_its_own_may_listen_and_keep_state(setting: str) -> None:
    profile = profile_from(setting)
    assert profile is DIRECT
    assert profile.listens and profile.keeps_session


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown pooler mode 'statement'"):
        profile_from("statement")


def test_the_environment_is_read_only_when_nothing_was_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONDUCTOR_POOLER", "transaction")
    assert profile_from(None) == POOLED
    assert profile_from("none") is DIRECT
    assert profile_from(DIRECT) is DIRECT  # handed down: kept as decided
    monkeypatch.delenv("CONDUCTOR_POOLER")
    assert profile_from(None) is DIRECT
    assert profile_from(POOLED) is POOLED


def test_only_a_session_prepares_statements() -> None:
    dsn = "postgresql://u@h/db?keepalives=1"
    assert "prepare_threshold" not in DIRECT.connect_options(dsn)
    assert POOLED.connect_options(dsn)["prepare_threshold"] is None
    assert {k: v for k, v in POOLED.connect_options(dsn).items() if k != "prepare_threshold"} == (
        DIRECT.connect_options(dsn)
    )


def test_conductor_pooler_is_read_in_one_module() -> None:
    """The pooler's environment variable is read by profile.py alone (the CLI names it for --pooler)."""
    readers = sorted(
        path.relative_to(PACKAGE_DIR).as_posix()
        for path in PACKAGE_DIR.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and node.value == "CONDUCTOR_POOLER"
    )
    assert readers == ["cli.py", "profile.py"]
