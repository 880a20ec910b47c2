"""The Host check and the tokens of the HTTP servers (no database)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyconductor.access import HostCheck, bearer_matches, host_of, parse_hosts, read_token_file


def test_host_of() -> None:
    assert host_of("Example.COM:8765") == "example.com"
    assert host_of("example.com.") == "example.com"
    assert host_of("[::1]:8765") == "::1" and host_of("[::1]") == "::1" and host_of("::1") == "::1"
    assert host_of("127.0.0.1") == "127.0.0.1"
    assert parse_hosts(["a.example, B.example:443", None, "", "[fd00::2]"]) == ["a.example", "b.example", "fd00::2"]


def test_a_loopback_bind_answers_loopback_names_only() -> None:
    check = HostCheck("127.0.0.1")
    for ok in ("127.0.0.1:8765", "localhost", "LOCALHOST:1", "[::1]:8765", "127.0.0.2"):
        assert check(ok), ok
    for bad in ("evil.example", "evil.example:8765", "localhost.evil.example", "10.0.0.1", "", None):
        assert not check(bad), bad


def test_the_bound_name_and_the_allowed_hosts() -> None:
    check = HostCheck("dash.internal", ["ops.example.com"])
    assert check("dash.internal:8765") and check("ops.example.com") and check("localhost")
    assert not check("other.internal") and not check("10.0.0.1")


def test_a_wildcard_bind_answers_any_ip_but_no_foreign_name() -> None:
    for bound in ("0.0.0.0", "::"):
        check = HostCheck(bound)
        assert check("10.1.2.3:9100") and check("[fd00::1]:9100") and check("localhost")
        assert not check("evil.example")


def test_refusal_text_is_short_and_quotes_the_host() -> None:
    text = HostCheck.refusal("evil.example" + "x" * 500)
    assert text.startswith("421 misdirected request") and "--allowed-host" in text and len(text) < 400


def test_bearer_matches() -> None:
    assert bearer_matches("Bearer s3cret", "s3cret") and bearer_matches("bearer  s3cret ", "s3cret")
    assert not bearer_matches("Bearer wrong", "s3cret") and not bearer_matches(None, "s3cret")
    assert not bearer_matches("Basic s3cret", "s3cret")


def test_read_token_file(tmp_path: Path) -> None:
    (tmp_path / "t").write_text("s3cret\n")
    assert read_token_file(tmp_path / "t") == "s3cret"
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ValueError, match="is empty"):
        read_token_file(tmp_path / "empty")
    with pytest.raises(ValueError, match="cannot read"):
        read_token_file(tmp_path / "missing")
