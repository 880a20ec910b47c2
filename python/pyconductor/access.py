"""Who may talk to pyconductor's HTTP servers (the dashboard, a worker's
``/health`` and ``/metrics``): the Host header check, bearer tokens, and
tokens read from a file.

The Host check stops DNS rebinding: a page of ``evil.example`` whose name the
attacker re-points at 127.0.0.1 makes the victim's browser send requests to a
loopback server, but with ``Host: evil.example``. :class:`HostCheck` answers
only to

- this machine's loopback names and addresses (``localhost``, 127.0.0.0/8,
  ``::1``),
- the address or name the server is bound to; bound to every address
  (``0.0.0.0``, ``::``), any IP address, since rebinding needs a name and a
  scraper or probe often names the machine by IP,
- the names given with ``--allowed-host`` / ``CONDUCTOR_ALLOWED_HOSTS``
  (comma-separated), for a server reached through a DNS name or a proxy.

The port is not compared: a proxy may forward from another one.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable
from pathlib import Path

__all__ = ["HostCheck", "bearer_matches", "host_of", "is_loopback", "parse_hosts", "read_token_file"]

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARDS = frozenset({"", "0.0.0.0", "::"})


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (127.0.0.0/8, ::1, localhost)."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_of(value: str) -> str:
    """The host part of a Host header or of a ``HOST[:PORT]`` name, lower case,
    without brackets or a trailing dot: ``[::1]:8765`` -> ``::1``."""
    value = value.strip().lower()
    if value.startswith("["):
        value = value[1:].partition("]")[0]
    elif value.count(":") == 1:
        value = value.partition(":")[0]
    return value.rstrip(".")


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def parse_hosts(values: Iterable[str | None]) -> list[str]:
    """Host names from comma-separated values (flags, the environment), normalised by :func:`host_of`."""
    return [host_of(h) for v in values if v for h in v.split(",") if h.strip()]


class HostCheck:
    """Whether a request's Host header names this server (see the module doc)."""

    def __init__(self, bound_host: str, allowed_hosts: Iterable[str] = ()) -> None:
        bound = host_of(bound_host)
        self.any_ip = bound in WILDCARDS
        self.names = LOOPBACK_NAMES | set(parse_hosts(allowed_hosts)) | ({bound} - WILDCARDS)

    def __call__(self, header: str | None) -> bool:
        if not header:
            return False  # every browser sends one; a request without names nothing
        host = host_of(header)
        if host in self.names:
            return True
        ip = _ip(host)
        return ip is not None and (self.any_ip or ip.is_loopback)

    @staticmethod
    def refusal(header: str | None) -> str:
        """The text of the 421 answer to a refused Host header."""
        shown = repr(header[:100]) if header else "(none)"
        return (
            f"421 misdirected request: this server does not answer to the host {shown}. If that is a name of "
            "this server, add it with --allowed-host (or CONDUCTOR_ALLOWED_HOSTS).\n"
        )


def bearer_matches(authorization: str | None, token: str) -> bool:
    """Whether an Authorization header is ``Bearer <token>`` (compared in constant time)."""
    auth = authorization or ""
    if auth[:7].lower() != "bearer ":
        return False
    return hmac.compare_digest(auth[7:].strip().encode(), token.encode())


def read_token_file(path: str | Path) -> str:
    """The token in the file at ``path``, surrounding white space removed.
    Raises ValueError when it cannot be read or is empty."""
    try:
        token = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the token file {path}: {exc}") from exc
    if not token:
        raise ValueError(f"the token file {path} is empty")
    return token
