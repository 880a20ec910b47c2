"""``worker``: one worker in this process, or with ``--processes N`` a supervisor
of N worker processes (:mod:`pyconductor.supervisor`) that start with the flags
:func:`child_argv` and the environment :func:`child_env` give them.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, cast

from pyconductor.cliutil import fail
from pyconductor.commands.options import allowed_hosts, app_and_endpoints, exit_code, load_app, names, read_token
from pyconductor.logs import setup_logging

if TYPE_CHECKING:
    from pyconductor.worker import Worker

__all__ = ["CHILD_FLAGS", "SUPERVISOR_ENV", "SUPERVISOR_FLAGS", "child_argv", "child_env", "run_worker"]


def run_worker(args: argparse.Namespace) -> int:
    setup_logging(args.log_level, args.log_format)
    if not args.app:
        return fail("no app given: pass --app module:attr (or set CONDUCTOR_APP)")
    if args.no_workers and args.no_scheduler:
        return fail("--no-workers and --no-scheduler together leave nothing to run")
    if args.processes < 1:
        return fail(f"--processes must be 1 or more, got {args.processes}")
    if args.processes > 1:
        if args.no_workers:
            return fail("--processes starts task workers; with --no-workers there is nothing for them to do")
        return _run_supervisor(args)
    return _run_one(args)


def _run_one(args: argparse.Namespace) -> int:
    from pyconductor.dsn import redact_dsn
    from pyconductor.errors import ConductorError
    from pyconductor.link import DirectConnectionNeeded
    from pyconductor.serve import Node

    found = app_and_endpoints(args)
    if isinstance(found, str):
        return fail(found)
    app, http_addr, metrics_token = found
    assert app is not None  # run_worker refused a missing --app
    dsn = args.dsn or app.dsn
    supervised = args.supervisor_fd is not None
    roles = [role for role, on in (("worker", not args.no_workers), ("scheduler", not args.no_scheduler)) if on]
    options = {
        "queues": names(args.queues), "concurrency": args.concurrency, "kinds": names(args.kinds), "lease": args.lease,
        "code_version": args.code_version, "replays": names(args.replays),
        "heartbeat_interval": args.heartbeat, "poll_interval": args.poll, "reap_interval": args.reap,
        "shutdown_grace": args.shutdown_grace, "cancel_grace": args.cancel_grace, "worker_id": args.worker_id,
        "tick_interval": args.tick_interval, "pooler": args.pooler, "prefetch": args.prefetch,
        "exit_on_stuck": supervised,  # a child with a stuck handler thread exits 3: its supervisor replaces it
    }  # fmt: skip
    try:
        # the same services as `serve --role worker,scheduler`, started and stopped the same way
        node = Node(app, roles, dsn=dsn, worker_options=options)
    except (ValueError, DirectConnectionNeeded) as exc:  # kinds the app does not register, and the like
        return fail(str(exc))
    server = None
    if http_addr is not None:
        from pyconductor.endpoints import EndpointServer

        try:
            server = EndpointServer(cast("Worker", node), *http_addr, allowed_hosts=allowed_hosts(args),
                                    token=metrics_token).start()  # fmt: skip
        except OSError as exc:
            return fail(f"--http {args.http}: cannot listen: {exc}")
    reporter = None
    if supervised:
        from pyconductor.supervisor import ChildReporter

        reporter = ChildReporter(node, args.supervisor_fd, outcomes=args.supervisor_outcomes).start()
    try:
        code = node.run()
    except ConductorError as exc:  # DatabaseUnusable, SchemaMismatch, options the database refuses
        return fail(redact_dsn(str(exc)))
    finally:
        if server is not None:
            server.stop()
        if reporter is not None:
            reporter.stop()
    return exit_code(code, abandoned=node.abandoned)


# The worker flags a --processes child is given as its supervisor got them; the
# others are the supervisor's own (a test checks that each flag is in one set).
CHILD_FLAGS = {
    "app": "--app", "queues": "--queues", "kinds": "--kinds", "code_version": "--code-version",
    "replays": "--replays", "concurrency": "--concurrency",
    "lease": "--lease", "heartbeat": "--heartbeat", "poll": "--poll", "reap": "--reap",
    "shutdown_grace": "--shutdown-grace", "cancel_grace": "--cancel-grace", "log_level": "--log-level",
    "log_format": "--log-format",
    "tick_interval": "--tick-interval", "no_scheduler": "--no-scheduler", "no_workers": "--no-workers",
    "pooler": "--pooler", "prefetch": "--prefetch",
}  # fmt: skip


SUPERVISOR_FLAGS = {"processes", "http", "metrics_token", "metrics_token_file", "allowed_hosts", "dsn", "worker_id",
                    "supervisor_fd", "supervisor_outcomes"}  # fmt: skip


# What a child must not read from the supervisor's environment: it would start
# supervisors, or a second server on the supervisor's port.
SUPERVISOR_ENV = ("CONDUCTOR_PROCESSES", "CONDUCTOR_WORKER_HTTP", "CONDUCTOR_METRICS_TOKEN",
                  "CONDUCTOR_METRICS_TOKEN_FILE", "CONDUCTOR_ALLOWED_HOSTS")  # fmt: skip


def child_argv(args: argparse.Namespace, slot: int, start: int) -> list[str]:
    """The ``pyconductor worker`` arguments of a --processes child. The DSN goes
    through the environment (``child_env``), never the command line (ps shows it);
    ``--worker-id W`` becomes ``W-<slot>.<start>``."""
    argv: list[str] = []
    for dest, flag in CHILD_FLAGS.items():
        value = getattr(args, dest)
        if isinstance(value, bool):
            argv += [flag, "1" if value else "0"]
        elif value is not None:
            argv += [flag, str(value)]
    if args.worker_id:
        argv += ["--worker-id", f"{args.worker_id}-{slot}.{start}"]
    return argv


def child_env(args: argparse.Namespace, environ: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in (os.environ if environ is None else environ).items() if k not in SUPERVISOR_ENV}
    if args.dsn:
        env["CONDUCTOR_DSN"] = str(args.dsn)
        env.pop("DATABASE_URL", None)
    return env


def _run_supervisor(args: argparse.Namespace) -> int:
    from pyconductor.profile import profile_from
    from pyconductor.supervisor import Supervisor

    try:
        metrics_token = read_token(args.metrics_token, args.metrics_token_file, "--metrics-token")
    except ValueError as exc:
        return fail(str(exc))
    http_addr = None
    dsn = args.dsn
    if args.http:
        from pyconductor.endpoints import parse_hostport

        try:
            http_addr = parse_hostport(args.http)
        except ValueError as exc:
            return fail(f"--http: {exc}")
        if not dsn:  # /health probes the database: the app's DSN, as the children use it
            try:
                dsn = load_app(args.app).dsn
            except (ImportError, AttributeError) as exc:
                return fail(f"cannot load app {args.app!r}: {exc}")
    supervisor = Supervisor(args.processes, lambda slot, start: child_argv(args, slot, start), env=child_env(args),
                            queues=names(args.queues), concurrency=args.concurrency, dsn=dsn,
                            outcomes=http_addr is not None, profile=profile_from(args.pooler))  # fmt: skip
    server = None
    if http_addr is not None:
        from pyconductor.endpoints import EndpointServer

        try:
            # the fleet offers the Worker attributes the server reads (duck-typed)
            server = EndpointServer(cast("Worker", supervisor.fleet), *http_addr, dsn=dsn,
                                    allowed_hosts=allowed_hosts(args), token=metrics_token).start()  # fmt: skip
        except OSError as exc:
            return fail(f"--http {args.http}: cannot listen: {exc}")
    try:
        return supervisor.run()
    finally:
        if server is not None:
            server.stop()
