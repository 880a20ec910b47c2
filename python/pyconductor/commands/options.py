"""What several commands make of their flags: the app to load, the lists and
tokens given, the HTTP servers' allowed hosts, and how a process with abandoned
handler threads exits (``worker``, ``serve``, ``enqueue``, ``dashboard``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyconductor.client import Conductor

__all__ = ["allowed_hosts", "app_and_endpoints", "exit_code", "load_app", "names", "read_token"]


def allowed_hosts(args: argparse.Namespace) -> list[str]:
    """--allowed-host values and $CONDUCTOR_ALLOWED_HOSTS together."""
    from pyconductor.access import parse_hosts

    return parse_hosts([os.environ.get("CONDUCTOR_ALLOWED_HOSTS"), *(args.allowed_hosts or [])])


def read_token(token: str | None, token_file: Path | None, flag: str) -> str | None:
    """The token given by ``flag`` (or its environment variable) or read from
    ``flag``-file; ValueError when both are given or the file is no good."""
    from pyconductor.access import read_token_file

    if token and token_file:
        raise ValueError(f"give one of {flag} and {flag}-file, not both")
    return read_token_file(token_file) if token_file else (token or None)


def load_app(spec: str) -> Any:
    """Import ``module:attr`` (``module`` alone means ``module:app``), with the
    current directory on sys.path so ``examples.x:app`` works from the repo."""
    import importlib

    module_name, _, attr = spec.partition(":")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    module = importlib.import_module(module_name)
    obj: Any = module
    for part in (attr or "app").split("."):
        obj = getattr(obj, part)
    return obj


def exit_code(code: int, *, abandoned: int) -> int:
    """``code``, or, when handlers were abandoned at stop, leave the process at
    once with it: they still run in threads the interpreter would wait for at
    exit, and their tasks are back in the queue."""
    if abandoned:
        import logging

        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def app_and_endpoints(args: argparse.Namespace) -> tuple[Conductor | None, tuple[str, int] | None, str | None] | str:
    """What `worker` and `serve` both read: the app (--app; None when not given), the
    /health and /metrics address (--http) and its token; or the message of what is wrong."""
    from pyconductor.client import Conductor

    http_addr = None
    if args.http:
        from pyconductor.endpoints import parse_hostport

        try:
            http_addr = parse_hostport(args.http)
        except ValueError as exc:
            return f"--http: {exc}"
    try:
        metrics_token = read_token(args.metrics_token, args.metrics_token_file, "--metrics-token")
    except ValueError as exc:
        return str(exc)
    if not args.app:
        return None, http_addr, metrics_token
    try:
        app = load_app(args.app)
    except (ImportError, AttributeError) as exc:
        return f"cannot load app {args.app!r}: {exc}"
    if not isinstance(app, Conductor):
        return f"{args.app} is a {type(app).__name__}, not a pyconductor.Conductor"
    return app, http_addr, metrics_token


def names(text: str | None) -> list[str] | None:
    """``a, b,,c`` -> ``["a", "b", "c"]``; None when nothing is named."""
    return [part.strip() for part in (text or "").split(",") if part.strip()] or None
