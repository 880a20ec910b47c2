"""``dashboard``: the web dashboard alone (:mod:`pyconductor.dashboard`), which
needs the 'dashboard' extra."""

from __future__ import annotations

import argparse
import sys

from pyconductor.cliutil import fail, resolve_dsn
from pyconductor.commands.options import allowed_hosts, read_token
from pyconductor.logs import setup_logging

__all__ = ["DASHBOARD_MODULES", "dashboard_missing", "run_dashboard"]


# The modules of the 'dashboard' extra (pyproject.toml): a plain install has none of them.
DASHBOARD_MODULES = ("starlette", "uvicorn")


def run_dashboard(args: argparse.Namespace) -> int:
    try:
        from pyconductor.dashboard import DashboardConfigError, check_bind, serve
    except ImportError as exc:
        if not dashboard_missing(exc):
            raise
        fail(f"the dashboard needs the 'dashboard' extra ({exc.name} is not installed): "
             "pip install 'conductor-pg[dashboard]'")  # fmt: skip
        return 2

    from pyconductor.dsn import redact_dsn
    from pyconductor.errors import ConductorError

    setup_logging(args.log_level)
    try:
        token = read_token(args.token, args.token_file, "--token")
        check_bind(args.host, token)
    except (ValueError, DashboardConfigError) as exc:
        return fail(str(exc))
    dsn = resolve_dsn(args)
    if not dsn:
        return fail("no database given: pass --dsn (or set CONDUCTOR_DSN / DATABASE_URL)")
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"pyconductor dashboard on http://{shown}:{args.port}/" + (" (token required)" if token else ""),
          file=sys.stderr, flush=True)  # fmt: skip
    try:
        serve(dsn, args.host, args.port, token, allowed_hosts=allowed_hosts(args),
              session_max_age=int(args.session_max_age.total_seconds()), secure_cookies=args.behind_tls)  # fmt: skip
    except OSError as exc:
        return fail(f"cannot listen on {args.host}:{args.port}: {exc}")
    except ConductorError as exc:  # SchemaMismatch: a database of another release
        return fail(redact_dsn(str(exc)))
    except KeyboardInterrupt:
        # Ctrl-C: uvicorn shut down cleanly, then raised the signal again it had caught
        return 0
    return 0


def dashboard_missing(exc: ImportError) -> bool:
    """Whether ``exc`` says a module of the 'dashboard' extra is not installed."""
    return (exc.name or "").partition(".")[0] in DASHBOARD_MODULES
