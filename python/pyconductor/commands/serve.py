"""``serve``: the roles asked (worker, scheduler, maintenance, web) in one
process, as one :class:`pyconductor.serve.Node`, with the /health and /metrics
server when --http is given."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, cast

from pyconductor.cliutil import fail
from pyconductor.commands.options import allowed_hosts, app_and_endpoints, exit_code, names, read_token
from pyconductor.commands.web import dashboard_missing
from pyconductor.logs import setup_logging

if TYPE_CHECKING:
    from pyconductor.worker import Worker

__all__ = ["SERVE_USAGE", "run_serve"]


# `serve`'s exit code for a role set it cannot run (an unknown role, the web role without its extra)
SERVE_USAGE = 2


def run_serve(args: argparse.Namespace) -> int:
    from pyconductor.dsn import redact_dsn
    from pyconductor.errors import ConductorError
    from pyconductor.serve import Node, WebOptions, parse_roles

    setup_logging(args.log_level, args.log_format)
    try:
        roles = parse_roles(args.role)
    except ValueError as exc:
        fail(f"--role: {exc}")
        return SERVE_USAGE
    if not args.app and roles != ["web"]:
        return fail("no app given: pass --app module:attr (or set CONDUCTOR_APP); "
                    "`pyconductor dashboard` serves the dashboard alone, as does serve --role web")  # fmt: skip
    web = None
    if "web" in roles:
        try:
            from pyconductor.dashboard import DashboardConfigError, check_bind
        except ImportError as exc:
            if not dashboard_missing(exc):
                raise
            fail(f"the web role needs the 'dashboard' extra ({exc.name} is not installed): pip install "
                 "'conductor-pg[dashboard]', or leave the role out: "
                 f"--role {','.join(r for r in roles if r != 'web')}")  # fmt: skip
            return SERVE_USAGE
        try:
            token = read_token(args.token, args.token_file, "--token")
            check_bind(args.http_host, token)
        except (ValueError, DashboardConfigError) as exc:
            return fail(str(exc))
        web = WebOptions(args.http_host, args.http_port, token, allowed_hosts=allowed_hosts(args),
                         session_max_age=int(args.session_max_age.total_seconds()),
                         secure_cookies=args.behind_tls)  # fmt: skip
    found = app_and_endpoints(args)
    if isinstance(found, str):
        return fail(found)
    app, http_addr, metrics_token = found
    dsn = args.dsn or (app.dsn if app is not None else None)
    worker_options = {
        "queues": names(args.queues), "concurrency": args.concurrency, "kinds": names(args.kinds), "lease": args.lease,
        "code_version": args.code_version, "replays": names(args.replays),
        "heartbeat_interval": args.heartbeat, "poll_interval": args.poll, "reap_interval": args.reap,
        "shutdown_grace": args.shutdown_grace, "cancel_grace": args.cancel_grace, "worker_id": args.worker_id,
        "tick_interval": args.tick_interval, "pooler": args.pooler,
    }  # fmt: skip
    try:
        node = Node(app, roles, dsn=dsn, worker_options=worker_options, web=web,
                    retention_interval=args.retention_interval.total_seconds(),
                    retention_batch=args.retention_batch)  # fmt: skip
    except (ValueError, RuntimeError) as exc:  # unknown kinds, a bad interval, a role that needs a session
        return fail(str(exc))
    server = None
    if http_addr is not None:
        from pyconductor.endpoints import EndpointServer

        try:
            # the node offers the Worker attributes the server reads (duck-typed)
            server = EndpointServer(cast("Worker", node), *http_addr, dsn=dsn, allowed_hosts=allowed_hosts(args),
                                    token=metrics_token,
                                    schedule_grace=args.schedule_grace.total_seconds()).start()  # fmt: skip
        except OSError as exc:
            return fail(f"--http {args.http}: cannot listen: {exc}")
    try:
        code = node.run()
    except ConductorError as exc:  # DatabaseUnusable, SchemaMismatch, options the database refuses
        return fail(redact_dsn(str(exc)))
    except RuntimeError as exc:  # the dashboard could not listen
        return fail(str(exc))
    finally:
        if server is not None:
            server.stop()
    return exit_code(code, abandoned=node.abandoned)
