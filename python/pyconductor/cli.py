"""The ``pyconductor`` command line.

Each subcommand is one function decorated with ``@subcommand``: it receives
the subparsers object, adds its parser, and sets ``func`` (the function that
runs it, taking the parsed namespace and returning an exit code). Adding a
subcommand is writing one such function.

Every flag can also be set by an environment variable, declared with
``env_arg`` and shown in ``--help`` as ``[env CONDUCTOR_...]``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pyconductor import defaults
from pyconductor.cliutil import default_dsn, fail, resolve_dsn
from pyconductor.version import __version__

if TYPE_CHECKING:
    from pyconductor.client import Conductor
    from pyconductor.worker import Worker

Handler = Callable[[argparse.Namespace], int]
ParserFactory = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

SUBCOMMANDS: list[ParserFactory] = []


def subcommand(factory: ParserFactory) -> ParserFactory:
    """Register a function that adds one subcommand's parser."""
    SUBCOMMANDS.append(factory)
    return factory


def env_arg(
    parser: argparse.ArgumentParser,
    *flags: str,
    env: str | Sequence[str],
    help: str,  # noqa: A002 - argparse's keyword, which callers pass through
    default: Any = None,
    type: Callable[[str], Any] = str,  # noqa: A002 - argparse's keyword, which callers pass through
    **kwargs: Any,
) -> argparse.Action:
    """Add a flag whose default comes from the first set environment variable in ``env``."""
    names = [env] if isinstance(env, str) else list(env)
    value = next((os.environ[n] for n in names if os.environ.get(n)), None)
    shown = " or ".join(names)
    return parser.add_argument(
        *flags,
        default=type(value) if value is not None else default,
        type=type,
        help=f"{help} [env {shown}]",
        **kwargs,
    )


# -- helpers of the HTTP servers' flags (dashboard, worker --http) -------------------


def _allowed_hosts_arg(p: argparse.ArgumentParser, server: str) -> None:
    p.add_argument(
        "--allowed-host", dest="allowed_hosts", action="append", metavar="HOST[,HOST]",
        help=f"another name the {server} answers to in the Host header, repeatable; besides these it "
        "answers only to localhost, 127.0.0.1, ::1 and the address it listens on (other Host headers "
        "get 421: DNS rebinding) [env CONDUCTOR_ALLOWED_HOSTS, comma-separated]",
    )  # fmt: skip


def _allowed_hosts(args: argparse.Namespace) -> list[str]:
    """--allowed-host values and $CONDUCTOR_ALLOWED_HOSTS together."""
    from pyconductor.access import parse_hosts

    return parse_hosts([os.environ.get("CONDUCTOR_ALLOWED_HOSTS"), *(args.allowed_hosts or [])])


def _token(token: str | None, token_file: Path | None, flag: str) -> str | None:
    """The token given by ``flag`` (or its environment variable) or read from
    ``flag``-file; ValueError when both are given or the file is no good."""
    from pyconductor.access import read_token_file

    if token and token_file:
        raise ValueError(f"give one of {flag} and {flag}-file, not both")
    return read_token_file(token_file) if token_file else (token or None)


# -- devdb -----------------------------------------------------------------------


def _setting(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected name=value, got {text!r}")
    return name.strip(), value.strip()


def _run_devdb(args: argparse.Namespace) -> int:
    from pyconductor.devdb import DevDB, DevDBError

    env_settings = [_setting(s) for s in os.environ.get("CONDUCTOR_DEVDB_SETTINGS", "").split(",") if s.strip()]
    db = DevDB(args.datadir, settings=dict(env_settings + (args.settings or [])))
    try:
        if args.action == "start":
            was_running = db.running
            url = db.start(args.dbname)
            if not was_running:
                print(f"started PostgreSQL in {db.datadir} (log {db.logfile})", file=sys.stderr)
            print(url)
        elif args.action == "stop":
            print("stopped" if db.stop() else f"not running: {db.datadir}", file=sys.stderr)
        elif args.action == "status":
            print(db.status())
            return 0 if db.running else 3
        elif args.action == "url":
            if not db.initialized:
                return fail(f"no development cluster in {db.datadir}; run `pyconductor devdb start`")
            print(db.url(args.dbname))
        elif args.action == "env":
            if not db.running:
                return fail(f"development cluster in {db.datadir} is not running")
            info = db.conninfo(args.dbname)
            for key, var in (("host", "PGHOST"), ("port", "PGPORT"), ("user", "PGUSER"), ("dbname", "PGDATABASE")):
                print(f"export {var}={info[key]}")
            print(f"export CONDUCTOR_DEVDB_URL={db.url(args.dbname)}")
    except DevDBError as exc:
        return fail(str(exc))
    return 0


@subcommand
def add_devdb_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from pyconductor.devdb import DEFAULT_DBNAME

    p = subparsers.add_parser(
        "devdb",
        help="run a private PostgreSQL cluster for development",
        description="Run a private PostgreSQL cluster from this machine's server binaries "
        "(127.0.0.1 only, trust auth). `start` is idempotent and prints the URL.",
    )
    p.add_argument(
        "action",
        choices=["start", "stop", "status", "url", "env"],
        help="start (create if needed), stop, status (exit 3 when stopped), url, "
        "env (shell exports PGHOST/PGPORT/PGUSER/PGDATABASE for the socket)",
    )
    env_arg(p, "--datadir", env="CONDUCTOR_DEVDB_DIR", type=Path,
            help="cluster data directory (default: <repo>/.devdb)")  # fmt: skip
    env_arg(p, "--dbname", env="CONDUCTOR_DEVDB_NAME", default=DEFAULT_DBNAME,
            help="database to create on start and to name in the URL (default: %(default)s)")  # fmt: skip
    p.add_argument(
        "-c", "--set", dest="settings", action="append", type=_setting, metavar="NAME=VALUE",
        help="extra server setting, repeatable, kept for later starts "
        "[env CONDUCTOR_DEVDB_SETTINGS, comma-separated]",
    )  # fmt: skip
    p.set_defaults(func=_run_devdb)


# -- migrate ---------------------------------------------------------------------


# Exit codes of `pyconductor migrate --check`, beside 0 (up to date) and 1 (could not check).
MIGRATE_PENDING = 3
MIGRATE_DRIFTED = 4


def _run_migrate(args: argparse.Namespace) -> int:
    from pyconductor.devdb import DevDBError
    from pyconductor.dsn import redact_dsn
    from pyconductor.migrate import DriftError, MigrateError, migrate, status

    dsn = args.dsn
    if not dsn:
        try:
            dsn = default_dsn()
        except DevDBError:
            dsn = None
        if not dsn:
            return fail(
                "no database given: pass --dsn (or set CONDUCTOR_DSN / DATABASE_URL), "
                "or start the development cluster with `pyconductor devdb start`"
            )
    try:
        if args.check:
            state = status(dsn, plan_path=args.plan, sql_dir=args.sql_dir, to=args.to)
            for change in state.drifted:
                print(f"  ! {change.key}: deployed script differs from the plan's")
            for change in state.pending:
                print(f"  + {change.key}: pending")
            if state.drifted:
                print(f"drifted: {len(state.drifted)} change(s); `pyconductor migrate` will refuse")
                return MIGRATE_DRIFTED
            if state.pending:
                print(f"pending: {len(state.pending)} change(s); run `pyconductor migrate`")
                return MIGRATE_PENDING
            print("up to date")
            return 0
        migrate(dsn, plan_path=args.plan, sql_dir=args.sql_dir, to=args.to, lock_wait=args.lock_wait,
                progress=lambda line: print(line, flush=True))  # fmt: skip
    except DriftError as exc:
        for change in exc.drifted:
            print(f"  ! {change.key}: deployed script differs from the plan's", file=sys.stderr)
        fail(str(exc))
        return MIGRATE_DRIFTED
    except MigrateError as exc:
        return fail(redact_dsn(str(exc)))
    except Exception as exc:  # connection errors and the like: one clear line, no password
        if exc.__class__.__module__.startswith("psycopg"):
            return fail(redact_dsn(f"cannot migrate {dsn}: {' '.join(str(exc).split())}"))
        raise
    return 0


@subcommand
def add_migrate_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "migrate",
        help="deploy or upgrade the Conductor schema (sqitch.plan) without sqitch",
        description="Apply every not-yet-applied change of sqitch.plan, in order, each in its "
        "own transaction, recorded in conductor_registry.changes. Idempotent; concurrent "
        "runs serialise on an advisory lock, waited for at most --lock-wait (then it names the session "
        "holding it and exits 1, having applied nothing). Refuses, applying nothing and exiting "
        f"{MIGRATE_DRIFTED}, when a deployed change's script differs from the plan's (drift).",
    )
    env_arg(p, "--dsn", env=["CONDUCTOR_DSN", "DATABASE_URL"],
            help="libpq connection string or URL (default: the running devdb)")  # fmt: skip
    env_arg(p, "--plan", env="CONDUCTOR_PLAN", type=Path,
            help="sqitch plan file (default: the one shipped with pyconductor)")  # fmt: skip
    env_arg(p, "--sql-dir", env="CONDUCTOR_SQL_DIR", type=Path,
            help="deploy script directory (default: sql/ beside the plan)")  # fmt: skip
    p.add_argument("--to", metavar="@TAG",
                   help="stop at this tag of the plan (e.g. @v0.1.0) instead of its end")  # fmt: skip
    env_arg(p, "--lock-wait", env="CONDUCTOR_MIGRATE_LOCK_WAIT", type=float, default=60.0, metavar="SECONDS",
            help="how long to wait for the migration lock another session holds (default: %(default)s)")  # fmt: skip
    p.add_argument("--check", action="store_true",
                   help=f"change nothing; exit 0 when up to date, {MIGRATE_PENDING} when changes are "
                   f"pending, {MIGRATE_DRIFTED} when deployed scripts drifted, 1 when it cannot tell")  # fmt: skip
    p.set_defaults(func=_run_migrate)


# -- worker and enqueue ----------------------------------------------------------------


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


def _exit(code: int, *, abandoned: int) -> int:
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


def _app_and_endpoints(args: argparse.Namespace) -> tuple[Conductor | None, tuple[str, int] | None, str | None] | str:
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
        metrics_token = _token(args.metrics_token, args.metrics_token_file, "--metrics-token")
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


def _setup_logging(level: str, log_format: str = "text") -> None:
    from pyconductor.logs import setup_logging

    setup_logging(level, log_format)


def _log_format_arg(p: argparse.ArgumentParser) -> None:
    env_arg(p, "--log-format", env="CONDUCTOR_LOG_FORMAT", default="text", choices=["text", "json"], type=str.lower,
            help="log lines as text, or one JSON object per line for log shippers (default: %(default)s)")  # fmt: skip


def _env_flag(value: str) -> bool:
    """A boolean flag's value from the environment: 1/true/yes/on or 0/false/no/off."""
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise argparse.ArgumentTypeError(f"expected a boolean, got {value!r}")


def _csv(text: str | None) -> list[str] | None:
    """``a, b,,c`` -> ``["a", "b", "c"]``; None when nothing is named."""
    return [part.strip() for part in (text or "").split(",") if part.strip()] or None


def _run_worker(args: argparse.Namespace) -> int:
    _setup_logging(args.log_level, args.log_format)
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
    return _run_single_worker(args)


def _run_single_worker(args: argparse.Namespace) -> int:
    from pyconductor.dsn import redact_dsn
    from pyconductor.errors import ConductorError
    from pyconductor.link import DirectConnectionNeeded
    from pyconductor.serve import Node

    found = _app_and_endpoints(args)
    if isinstance(found, str):
        return fail(found)
    app, http_addr, metrics_token = found
    assert app is not None  # _run_worker refused a missing --app
    dsn = args.dsn or app.dsn
    supervised = args.supervisor_fd is not None
    roles = [role for role, on in (("worker", not args.no_workers), ("scheduler", not args.no_scheduler)) if on]
    options = {
        "queues": _csv(args.queues), "concurrency": args.concurrency, "kinds": _csv(args.kinds), "lease": args.lease,
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
            server = EndpointServer(cast("Worker", node), *http_addr, allowed_hosts=_allowed_hosts(args),
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
    return _exit(code, abandoned=node.abandoned)


# The worker flags a --processes child is given as its supervisor got them; the
# others are the supervisor's own (a test checks that each flag is in one set).
CHILD_FLAGS = {
    "app": "--app", "queues": "--queues", "kinds": "--kinds", "concurrency": "--concurrency",
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
    from pyconductor.link import pooler_mode
    from pyconductor.supervisor import Supervisor

    try:
        metrics_token = _token(args.metrics_token, args.metrics_token_file, "--metrics-token")
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
                            queues=_csv(args.queues), concurrency=args.concurrency, dsn=dsn,
                            outcomes=http_addr is not None, pooler=pooler_mode(args.pooler))  # fmt: skip
    server = None
    if http_addr is not None:
        from pyconductor.endpoints import EndpointServer

        try:
            # the fleet offers the Worker attributes the server reads (duck-typed)
            server = EndpointServer(cast("Worker", supervisor.fleet), *http_addr, dsn=dsn,
                                    allowed_hosts=_allowed_hosts(args), token=metrics_token).start()  # fmt: skip
        except OSError as exc:
            return fail(f"--http {args.http}: cannot listen: {exc}")
    try:
        return supervisor.run()
    finally:
        if server is not None:
            server.stop()


def _worker_args(p: argparse.ArgumentParser, worker_id_help: str = "") -> None:
    """The flags of a process that runs a Worker (``worker``, ``serve``): the app,
    the database, what it claims and its timings, its logging."""
    env_arg(p, "--app", env="CONDUCTOR_APP",
            help="the Conductor instance, as module:attr (module alone means module:app)")  # fmt: skip
    env_arg(p, "--dsn", env=["CONDUCTOR_DSN", "DATABASE_URL"],
            help="libpq connection string or URL (default: the app's)")  # fmt: skip
    env_arg(p, "--queues", env="CONDUCTOR_QUEUES", help="comma-separated queues (default: every queue)")
    env_arg(p, "--kinds", env="CONDUCTOR_KINDS",
            help="comma-separated kinds to claim, each registered in the app (default: every kind the app "
            "registers); tasks of other kinds stay queued for the workers that serve them")  # fmt: skip
    env_arg(p, "--concurrency", env="CONDUCTOR_WORKER_MAX_INFLIGHT", type=int, default=defaults.CONCURRENCY,
            help="tasks running at once, per process (default: %(default)s)")  # fmt: skip
    env_arg(p, "--prefetch", env="CONDUCTOR_PREFETCH", type=int,
            help="claimed tasks that may wait in a local buffer for a slot, at most; the worker claims ahead only "
            "what its slots start within 50 ms (default: --concurrency; 0: no buffer)")  # fmt: skip
    env_arg(p, "--lease", env="CONDUCTOR_LEASE", type=float, default=defaults.LEASE,
            help="lease in seconds (default: %(default)s)")  # fmt: skip
    env_arg(p, "--heartbeat", env="CONDUCTOR_HEARTBEAT", type=float, default=defaults.HEARTBEAT_INTERVAL,
            help="heartbeat interval in seconds (default: %(default)s)")  # fmt: skip
    env_arg(p, "--poll", env="CONDUCTOR_POLL", type=float, default=defaults.POLL_INTERVAL,
            help="poll interval in seconds, the backstop for missed notifications; at most "
            f"{defaults.POOLER_POLL_INTERVAL:g} with --pooler transaction, where polling is how new tasks are found "
            "(default: %(default)s)")  # fmt: skip
    env_arg(p, "--reap", env="CONDUCTOR_REAP", type=float, default=defaults.REAP_INTERVAL,
            help="reap interval in seconds (default: %(default)s)")  # fmt: skip
    env_arg(p, "--shutdown-grace", env="CONDUCTOR_SHUTDOWN_GRACE", type=float, default=defaults.SHUTDOWN_GRACE,
            help="seconds running tasks get to finish at shutdown, inf to wait for every one "
            "(default: %(default)s)")  # fmt: skip
    env_arg(p, "--cancel-grace", env="CONDUCTOR_CANCEL_GRACE", type=float, default=defaults.CANCEL_GRACE,
            help="seconds a cancelled handler (or one whose lease was lost) may keep running before its slot "
            "is freed and its thread counts as stuck (default: %(default)s)")  # fmt: skip
    env_arg(p, "--worker-id", env="CONDUCTOR_WORKER_ID",
            help=f"worker id (default: host-pid-random{worker_id_help})")  # fmt: skip
    env_arg(p, "--log-level", env="CONDUCTOR_LOG_LEVEL", default="INFO",
            choices=["DEBUG", "INFO", "WARNING", "ERROR"], type=str.upper,
            help="log level (default: %(default)s)")  # fmt: skip
    _log_format_arg(p)
    env_arg(p, "--tick-interval", env="CONDUCTOR_TICK_INTERVAL", type=float, default=defaults.TICK_INTERVAL,
            help="the scheduler ticks at each due time and at least this often, in seconds "
                 "(default: %(default)s)")  # fmt: skip
    _pooler_arg(p)


def _pooler_arg(p: argparse.ArgumentParser) -> None:
    """--pooler: the DSN goes through a transaction-mode pooler (pgbouncer pool_mode=transaction)."""
    env_arg(p, "--pooler", env="CONDUCTOR_POOLER", choices=["transaction", "none"], type=str.lower,
            help="'transaction' when --dsn goes through a transaction-mode pooler (pgbouncer "
            "pool_mode=transaction): no session state (no LISTEN: it polls, every --poll seconds; no prepared "
            "statements). Leader leases (scheduler, retention, singletons) work through it. The web role "
            "needs a direct connection and refuses (default: none)")  # fmt: skip


def _endpoint_args(p: argparse.ArgumentParser, http_help: str = "") -> None:
    """--http and its token: the worker endpoints' server (``worker``, ``serve``)."""
    env_arg(p, "--http", env="CONDUCTOR_WORKER_HTTP", metavar="HOST:PORT",
            help="serve /health (JSON) and /metrics (Prometheus; needs the 'metrics' extra) on HOST:PORT "
            f"(default: off){http_help}")  # fmt: skip
    env_arg(p, "--metrics-token", env="CONDUCTOR_METRICS_TOKEN",
            help="require 'Authorization: Bearer TOKEN' on /metrics (/health then shows only its status "
            "without it); on the command line it shows in ps: prefer the environment variable or "
            "--metrics-token-file (default: none)")  # fmt: skip
    env_arg(p, "--metrics-token-file", env="CONDUCTOR_METRICS_TOKEN_FILE", type=Path, metavar="PATH",
            help="read the /metrics token from this file")  # fmt: skip


@subcommand
def add_worker_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "worker",
        help="run a worker: claim tasks and run the app's handlers",
        description="Claim tasks of the given queues and kinds and run the handlers registered on the app. "
        "SIGTERM/SIGINT: stop claiming, let running tasks finish within the grace period, hand "
        "the rest back, exit 0; a second signal exits at once with code 130. With --processes N, "
        "a supervisor runs N such workers as child processes, restarts one that dies, forwards "
        "the signals and serves one --http for all of them.",
    )
    _worker_args(p, "; with --processes, W gives the children W-1.1, W-2.1, ... and a restarted one W-1.2")
    env_arg(p, "--processes", env="CONDUCTOR_PROCESSES", type=int, default=1,
            help="worker processes under one supervisor, each with --concurrency threads; a child whose "
            "handler is stuck past its time limit is replaced (default: %(default)s: this process runs the "
            "worker)")  # fmt: skip
    env_arg(p, "--no-scheduler", env="CONDUCTOR_NO_SCHEDULER", type=_env_flag, default=False, nargs="?", const=True,
            metavar="0|1",
            help="do not run the scheduler (tick() under the leader lease) in this process")  # fmt: skip
    env_arg(p, "--no-workers", env="CONDUCTOR_NO_WORKERS", type=_env_flag, default=False, nargs="?", const=True,
            metavar="0|1",
            help="run only the scheduler part: claim no tasks")  # fmt: skip
    _endpoint_args(p, "; with --processes, one server for all the children")
    _allowed_hosts_arg(p, "/health and /metrics server")
    # A --processes child's end of the pipe to its supervisor (pyconductor.supervisor).
    p.add_argument("--supervisor-fd", type=int, help=argparse.SUPPRESS)
    p.add_argument("--supervisor-outcomes", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(func=_run_worker)


def _run_enqueue(args: argparse.Namespace) -> int:
    import json

    from pyconductor.client import Conductor
    from pyconductor.dsn import redact_dsn
    from pyconductor.errors import ConductorError

    app: Conductor | None = None
    if args.app:
        try:
            loaded = load_app(args.app)
        except (ImportError, AttributeError) as exc:
            return fail(f"cannot load app {args.app!r}: {exc}")
        if isinstance(loaded, Conductor):
            app = loaded
    dsn = args.dsn or (app.dsn if app else None) or resolve_dsn(args)
    if not dsn:
        return fail("no database given: pass --dsn (or set CONDUCTOR_DSN / DATABASE_URL)")
    try:
        payload = json.loads(args.payload)
    except json.JSONDecodeError as exc:
        return fail(f"--payload is not JSON: {exc}")
    client = Conductor(dsn, pool_min=1, pool_max=1)
    if app is not None:
        client.registry = app.registry  # the kind's registered defaults apply
    try:
        with client:
            task_id = client.enqueue(
                args.kind, payload, queue=args.queue, priority=args.priority, run_at=args.run_at,
                max_attempts=args.max_attempts, dedupe_key=args.dedupe_key, concurrency_key=args.concurrency_key,
                parent_id=args.parent, timeout=args.timeout, max_recoveries=args.max_recoveries,
                backoff_base=args.backoff_base, backoff_factor=args.backoff_factor, backoff_max=args.backoff_max,
            )  # fmt: skip
    except ConductorError as exc:
        return fail(f"{exc} [{exc.sqlstate}]")
    except Exception as exc:
        if exc.__class__.__module__.startswith("psycopg"):
            return fail(f"cannot enqueue: {redact_dsn(str(exc))}")
        raise
    print(task_id)
    return 0


@subcommand
def add_enqueue_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "enqueue", help="enqueue one task and print its id",
        description="Write one task with conductor.enqueue and print its id. An option not given is "
        "left to the database: the kind's configuration (conductor.configure_kind, which the kind's "
        "workers write at start), else the engine's default. With --app, the app's registered "
        "options for the kind are sent instead.",
    )  # fmt: skip
    p.add_argument("kind", help="the task kind (handler name)")
    env_arg(p, "--payload", env="CONDUCTOR_PAYLOAD", default="{}", help="the payload, a JSON object (default: {})")
    env_arg(p, "--dsn", env=["CONDUCTOR_DSN", "DATABASE_URL"],
            help="libpq connection string or URL (default: the app's, else the running devdb)")  # fmt: skip
    env_arg(p, "--app", env="CONDUCTOR_APP", help="module:attr of a Conductor whose registered defaults apply")
    env_arg(p, "--queue", env="CONDUCTOR_QUEUE", help="queue (default: the kind's configured queue, else 'default')")
    env_arg(
        p, "--priority", env="CONDUCTOR_PRIORITY", type=int, help="priority, higher first (default: the kind's, else 0)"
    )
    env_arg(p, "--run-at", env="CONDUCTOR_RUN_AT", help="due time, ISO 8601 with a time zone (default: now)")
    env_arg(
        p,
        "--max-attempts",
        env="CONDUCTOR_MAX_ATTEMPTS",
        type=int,
        help="attempts before failing (default: the kind's, else 1)",
    )
    env_arg(
        p, "--dedupe-key", env="CONDUCTOR_DEDUPE_KEY", help="dedupe key: an unfinished holder's id is printed instead"
    )
    env_arg(p, "--concurrency-key", env="CONDUCTOR_CONCURRENCY_KEY",
            help="concurrency key: at most one task of the key runs at a time "
            "(default: the kind's, else none)")  # fmt: skip
    env_arg(p, "--parent", env="CONDUCTOR_PARENT", type=int, help="the id of the task this one joins as a child")
    env_arg(p, "--timeout", env="CONDUCTOR_TIMEOUT",
            help="how long one attempt may run: seconds, or an interval such as '5 minutes' "
            "(default: the kind's, else no limit)")  # fmt: skip
    env_arg(p, "--max-recoveries", env="CONDUCTOR_MAX_RECOVERIES", type=int,
            help="lost workers the task survives (default: the kind's, else 3)")  # fmt: skip
    env_arg(p, "--backoff-base", env="CONDUCTOR_BACKOFF_BASE",
            help="the first retry's delay: seconds or an interval (default: the kind's, else 30 s)")  # fmt: skip
    env_arg(p, "--backoff-factor", env="CONDUCTOR_BACKOFF_FACTOR", type=float,
            help="each retry's delay is the last one's times this, 1-10 (default: the kind's, else 2)")  # fmt: skip
    env_arg(p, "--backoff-max", env="CONDUCTOR_BACKOFF_MAX",
            help="the longest retry delay: seconds or an interval (default: the kind's, else 1 hour)")  # fmt: skip
    p.set_defaults(func=_run_enqueue)


# -- scheduler and schedules -------------------------------------------------------


def _run_scheduler(args: argparse.Namespace) -> int:
    import signal
    import threading

    from pyconductor.scheduler import Scheduler

    _setup_logging(args.log_level, args.log_format)
    dsn = resolve_dsn(args)
    if not dsn:
        return fail("no database given: pass --dsn (or set CONDUCTOR_DSN / DATABASE_URL)")
    if args.tick_interval <= 0:
        return fail("--tick-interval must be positive")
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    from pyconductor.link import DirectConnectionNeeded

    try:
        scheduler = Scheduler(dsn, tick_interval=args.tick_interval,
                              use_leader_lock=False if args.no_leader_lock else None, pooler=args.pooler)  # fmt: skip
    except (ValueError, DirectConnectionNeeded) as exc:
        return fail(str(exc))
    scheduler.start()
    while not done.wait(0.5):
        pass
    scheduler.stop()
    return 0


@subcommand
def add_scheduler_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "scheduler",
        help="run only the scheduler: call conductor.tick() when schedules are due",
        description="Contend for the leader lease 'scheduler' (three --tick-interval long, renewed every "
        "tick); while leading, call conductor.tick() at each due time (at least every --tick-interval). "
        "Each due time fires once whatever runs, so several schedulers are safe. SIGTERM/SIGINT: release "
        "the lease, exit 0.",
    )
    env_arg(p, "--dsn", env=["CONDUCTOR_DSN", "DATABASE_URL"],
            help="libpq connection string or URL (default: the running devdb)")  # fmt: skip
    env_arg(p, "--tick-interval", env="CONDUCTOR_TICK_INTERVAL", type=float, default=defaults.TICK_INTERVAL,
            help="longest sleep between ticks, and between tries for the lease, in seconds "
                 "(default: %(default)s)")  # fmt: skip
    p.add_argument("--no-leader-lock", action="store_true",
                   help="tick without taking the leader lease (each due time still fires exactly once)")  # fmt: skip
    _pooler_arg(p)
    env_arg(p, "--log-level", env="CONDUCTOR_LOG_LEVEL", default="INFO",
            choices=["DEBUG", "INFO", "WARNING", "ERROR"], type=str.upper,
            help="log level (default: %(default)s)")  # fmt: skip
    _log_format_arg(p)
    p.set_defaults(func=_run_scheduler)


SCHEDULE_COLUMNS = ("name", "cron", "timezone", "kind", "queue", "enabled", "next_due_at", "last_due_at",
                    "declared_by", "last_error")  # fmt: skip


def _cell(value: object, width: int = 60) -> str:
    text = "-" if value is None else " ".join(str(value).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _run_schedules(args: argparse.Namespace) -> int:
    import json

    import psycopg
    from psycopg.rows import dict_row

    from pyconductor import queries
    from pyconductor.dsn import redact_dsn

    if args.action:
        return _run_schedules_action(args)
    dsn = resolve_dsn(args)
    if not dsn:
        return fail("no database given: pass --dsn (or set CONDUCTOR_DSN / DATABASE_URL)")
    try:
        with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
            rows = conn.execute(queries.LIST_SCHEDULES).fetchall()
    except psycopg.Error as exc:
        return fail(f"cannot list schedules: {redact_dsn(str(exc))}")
    if args.json:
        print(json.dumps(rows, default=str, indent=2))
        return 0
    table = [[_cell(r[c]) for c in SCHEDULE_COLUMNS] for r in rows]
    header = [c.upper() for c in SCHEDULE_COLUMNS]
    widths = [max(len(x) for x in col) for col in zip(header, *table, strict=True)]
    for line in [header, *table]:
        print("  ".join(x.ljust(w) for x, w in zip(line, widths, strict=True)).rstrip())
    return 0


def _run_schedules_action(args: argparse.Namespace) -> int:
    """``schedules run NAME``: one task now (conductor.fire_schedule; admin)."""
    from pyconductor.ops import _command

    if len(args.action) != 2 or args.action[0] != "run":
        return fail(f"expected `schedules` or `schedules run NAME`, got `schedules {' '.join(args.action)}`")
    args.name = args.action[1]
    return _command(_fire_schedule)(args)


@subcommand
def add_schedules_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "schedules", help="list the schedules; `schedules run NAME` fires one now",
        description="List every schedule (conductor.list_schedules): cron line, time zone, kind, "
        "queue, enabled, next due time and last fire. `pyconductor schedules run NAME` fires the schedule "
        "now (conductor.fire_schedule, admin): one task, counted as a fire, its next due time unchanged; "
        "it prints the task's id.",
    )  # fmt: skip
    env_arg(p, "--dsn", env=["CONDUCTOR_DSN", "DATABASE_URL"],
            help="libpq connection string or URL (default: the running devdb)")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the rows as JSON, every column")
    p.add_argument("action", nargs="*", metavar="run NAME", help="fire the schedule NAME now")
    p.set_defaults(func=_run_schedules)


# -- dashboard -----------------------------------------------------------------------


# The modules of the 'dashboard' extra (pyproject.toml): a plain install has none of them.
DASHBOARD_MODULES = ("starlette", "uvicorn")


def _run_dashboard(args: argparse.Namespace) -> int:
    try:
        from pyconductor.dashboard import DashboardConfigError, check_bind, serve
    except ImportError as exc:
        if not _dashboard_missing(exc):
            raise
        fail(f"the dashboard needs the 'dashboard' extra ({exc.name} is not installed): "
             "pip install 'conductor-pg[dashboard]'")  # fmt: skip
        return 2

    _setup_logging(args.log_level)
    try:
        token = _token(args.token, args.token_file, "--token")
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
        serve(dsn, args.host, args.port, token, allowed_hosts=_allowed_hosts(args),
              session_max_age=int(args.session_max_age.total_seconds()), secure_cookies=args.behind_tls)  # fmt: skip
    except OSError as exc:
        return fail(f"cannot listen on {args.host}:{args.port}: {exc}")
    except KeyboardInterrupt:
        # Ctrl-C: uvicorn shut down cleanly, then raised the signal again it had caught
        return 0
    return 0


@subcommand
def add_dashboard_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "dashboard",
        help="serve the web dashboard: queues, runs, retry and cancel",
        description="Serve server-rendered pages over the conductor schema: queues (stats()), runs "
        "with filters, a run's tree with attempts and tracebacks, and retry/cancel buttons (POSTs "
        "with CSRF protection). Listens on 127.0.0.1 unless given a token; with a token, every "
        "request needs it (Authorization: Bearer, or the /login form's cookie).",
    )
    env_arg(p, "--dsn", env=["CONDUCTOR_DSN", "DATABASE_URL"],
            help="libpq connection string or URL (default: the running devdb)")  # fmt: skip
    env_arg(p, "--host", env="CONDUCTOR_DASHBOARD_HOST", default="127.0.0.1",
            help="address to listen on; anything but loopback needs --token (default: %(default)s)")  # fmt: skip
    env_arg(p, "--port", env="CONDUCTOR_DASHBOARD_PORT", type=int, default=8765,
            help="port to listen on (default: %(default)s)")  # fmt: skip
    _dashboard_access_args(p)
    _allowed_hosts_arg(p, "dashboard")
    env_arg(p, "--log-level", env="CONDUCTOR_LOG_LEVEL", default="INFO",
            choices=["DEBUG", "INFO", "WARNING", "ERROR"], type=str.upper,
            help="log level (default: %(default)s)")  # fmt: skip
    p.set_defaults(func=_run_dashboard)


def _dashboard_access_args(p: argparse.ArgumentParser) -> None:
    """Who may use the dashboard (``dashboard``, ``serve``'s web role): its token and logins."""
    env_arg(p, "--token", env="CONDUCTOR_DASHBOARD_TOKEN",
            help="require this token on every dashboard request (default: none, loopback only); on the command "
            "line it shows in ps: prefer the environment variable or --token-file")  # fmt: skip
    env_arg(p, "--token-file", env="CONDUCTOR_DASHBOARD_TOKEN_FILE", type=Path, metavar="PATH",
            help="read the token from this file (surrounding white space removed)")  # fmt: skip
    env_arg(p, "--session-max-age", env="CONDUCTOR_DASHBOARD_SESSION_MAX_AGE", type=_duration,
            default=_duration("12h"), metavar="DURATION",
            help="how long a login lasts, e.g. 12h or 30m (default: 12h)")  # fmt: skip
    env_arg(p, "--behind-tls", env="CONDUCTOR_DASHBOARD_BEHIND_TLS", type=_env_flag, default=False, nargs="?",
            const=True, metavar="0|1", help="mark cookies Secure: a TLS proxy serves the dashboard (they are "
            "Secure anyway when the request came over TLS)")  # fmt: skip


def _dashboard_missing(exc: ImportError) -> bool:
    """Whether ``exc`` says a module of the 'dashboard' extra is not installed."""
    return (exc.name or "").partition(".")[0] in DASHBOARD_MODULES


# -- serve ---------------------------------------------------------------------------

# `serve`'s exit code for a role set it cannot run (an unknown role, the web role without its extra)
SERVE_USAGE = 2


def _run_serve(args: argparse.Namespace) -> int:
    from pyconductor.dsn import redact_dsn
    from pyconductor.errors import ConductorError
    from pyconductor.serve import Node, WebOptions, parse_roles

    _setup_logging(args.log_level, args.log_format)
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
            if not _dashboard_missing(exc):
                raise
            fail(f"the web role needs the 'dashboard' extra ({exc.name} is not installed): pip install "
                 "'conductor-pg[dashboard]', or leave the role out: "
                 f"--role {','.join(r for r in roles if r != 'web')}")  # fmt: skip
            return SERVE_USAGE
        try:
            token = _token(args.token, args.token_file, "--token")
            check_bind(args.http_host, token)
        except (ValueError, DashboardConfigError) as exc:
            return fail(str(exc))
        web = WebOptions(args.http_host, args.http_port, token, allowed_hosts=_allowed_hosts(args),
                         session_max_age=int(args.session_max_age.total_seconds()),
                         secure_cookies=args.behind_tls)  # fmt: skip
    found = _app_and_endpoints(args)
    if isinstance(found, str):
        return fail(found)
    app, http_addr, metrics_token = found
    dsn = args.dsn or (app.dsn if app is not None else None)
    worker_options = {
        "queues": _csv(args.queues), "concurrency": args.concurrency, "kinds": _csv(args.kinds), "lease": args.lease,
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
            server = EndpointServer(cast("Worker", node), *http_addr, dsn=dsn, allowed_hosts=_allowed_hosts(args),
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
    return _exit(code, abandoned=node.abandoned)


@subcommand
def add_serve_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from pyconductor.retention import BATCH, INTERVAL
    from pyconductor.serve import ROLES

    p = subparsers.add_parser(
        "serve",
        help="run every role in one process: worker, scheduler, maintenance, web (dashboard)",
        description="One process running the roles asked (default: all): worker (claim the app's kinds and "
        "run its handlers), scheduler (tick() under the leader lease), maintenance (the reaper, retention "
        "under the leader lease 'retention', the app's singletons), web (the dashboard on --http-host/"
        "--http-port). Leader leases make it safe to run every role on every process. --http serves "
        "/health (the roles, the leader leases held, the fleet's schedules, sessions outside the engine "
        "holding its locks) and /metrics. SIGTERM/SIGINT: "
        "stop every role (the worker drains as `pyconductor worker` does), exit 0; a second signal "
        "exits at once with code 130.",
    )
    env_arg(p, "--role", env="CONDUCTOR_ROLES", metavar="ROLE[,ROLE]",
            help=f"comma-separated roles of this process, of {', '.join(ROLES)} (default: all)")  # fmt: skip
    _worker_args(p)
    env_arg(p, "--http-host", env="CONDUCTOR_DASHBOARD_HOST", default="127.0.0.1",
            help="the web role's dashboard listens on this address; anything but loopback needs --token "
            "(default: %(default)s)")  # fmt: skip
    env_arg(p, "--http-port", env="CONDUCTOR_DASHBOARD_PORT", type=int, default=8765,
            help="the dashboard's port (default: %(default)s)")  # fmt: skip
    _dashboard_access_args(p)
    _endpoint_args(p, ", whatever the roles")
    _allowed_hosts_arg(p, "dashboard and the /health and /metrics server")
    env_arg(p, "--schedule-grace", env="CONDUCTOR_SCHEDULE_GRACE", type=_duration, default=_duration("1m"),
            metavar="DURATION", help="/health is 503 when an enabled schedule is overdue by more than this, "
            "e.g. 1m (default: 1m)")  # fmt: skip
    env_arg(p, "--retention-interval", env="CONDUCTOR_RETENTION_INTERVAL", type=_duration,
            default=_duration(f"{INTERVAL:g}s"), metavar="DURATION",
            help=f"the maintenance role applies retention this often (default: {INTERVAL:g}s)")  # fmt: skip
    env_arg(p, "--retention-batch", env="CONDUCTOR_RETENTION_BATCH", type=int, default=BATCH,
            help="rows one apply_retention call deletes at most (default: %(default)s)")  # fmt: skip
    p.set_defaults(func=_run_serve)


# -- queue controls: pause, resume, rate-limit --------------------------------------------
# admin calls; the database validates (QC104 a bad queue name, QC101 a bad kind, QC106 a bad limit)

PAUSE_QUEUE = "select conductor.pause_queue(queue => %(queue)s) as changed"
RESUME_QUEUE = "select conductor.resume_queue(queue => %(queue)s) as changed"
SET_RATE_LIMIT = "select conductor.set_rate_limit(queue => %(queue)s::text, kind => %(kind)s::text, per_second => %(per_second)s::float8, burst => %(burst)s::float8)"  # noqa: E501 - one statement a line, as in queries.py
FIRE_SCHEDULE = "select conductor.fire_schedule(name => %(name)s) as task_id"


def _pause(args: argparse.Namespace, conn: Any) -> int:
    paused = conn.execute(PAUSE_QUEUE, {"queue": args.queue}).fetchone()["changed"]
    print(f"queue {args.queue} paused: nothing is claimed from it, its tasks stay queued (`pyconductor resume "
          f"{args.queue}` resumes it)" if paused else f"queue {args.queue} was paused already")  # fmt: skip
    return 0


def _resume(args: argparse.Namespace, conn: Any) -> int:
    resumed = conn.execute(RESUME_QUEUE, {"queue": args.queue}).fetchone()["changed"]
    print(f"queue {args.queue} resumed" if resumed else f"queue {args.queue} was not paused")
    return 0


def _rate(text: str) -> float | None:
    """A rate limit's PER_SECOND: a number, or ``off`` (None)."""
    if text.strip().lower() == "off":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number of task starts per second or 'off', got {text!r}"
        ) from None
    return value  # its range is the database's to judge (QC106)


def _rate_limit(args: argparse.Namespace, conn: Any) -> int:
    conn.execute(SET_RATE_LIMIT, {"queue": args.queue, "kind": args.kind, "per_second": args.per_second,
                                  "burst": args.burst})  # fmt: skip
    what = f"queue {args.queue}" if args.queue is not None else f"kind {args.kind}"
    if args.per_second is None:
        print(f"{what}: no rate limit")
    else:
        burst = f", bursts of up to {args.burst:g}" if args.burst is not None else ""
        print(f"{what}: at most {args.per_second:g} task starts per second across the fleet{burst}")
    return 0


def _fire_schedule(args: argparse.Namespace, conn: Any) -> int:
    task_id = conn.execute(FIRE_SCHEDULE, {"name": args.name}).fetchone()["task_id"]
    print(f"schedule {args.name} fired now as task {task_id} (its next due time is unchanged)", file=sys.stderr)
    print(task_id)
    return 0


@subcommand
def add_pause_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from pyconductor.ops import _command

    p = subparsers.add_parser(
        "pause", help="pause a queue: nothing is claimed from it, its tasks stay queued (admin)",
        description="conductor.pause_queue(QUEUE): no worker claims from the queue until it is resumed; its "
        "tasks stay queued, running ones finish, `pyconductor stats` shows it paused.",
    )  # fmt: skip
    p.add_argument("queue", metavar="QUEUE")
    _dsn_arg(p)
    p.set_defaults(func=_command(_pause))


@subcommand
def add_resume_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from pyconductor.ops import _command

    p = subparsers.add_parser("resume", help="resume a paused queue (admin)",
                              description="conductor.resume_queue(QUEUE): workers claim from the queue "
                                          "again.")  # fmt: skip
    p.add_argument("queue", metavar="QUEUE")
    _dsn_arg(p)
    p.set_defaults(func=_command(_resume))


@subcommand
def add_rate_limit_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from pyconductor.ops import _command

    p = subparsers.add_parser(
        "rate-limit", help="limit the task starts per second of a queue or a kind, across the fleet",
        description="conductor.set_rate_limit: at most PER_SECOND tasks of the queue (or the kind) start per "
        "second across every worker, in any language: claim draws from a token bucket of --burst tokens "
        "(default: max(1, PER_SECOND)) refilled at PER_SECOND. 'off' removes the limit.",
    )  # fmt: skip
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--queue", help="limit this queue")
    which.add_argument("--kind", help="limit this kind, in every queue")
    p.add_argument("per_second", type=_rate, metavar="PER_SECOND|off", help="task starts per second, or off")
    p.add_argument(
        "--burst", type=float, help="starts allowed at once after a quiet spell (default: max(1, PER_SECOND))"
    )
    _dsn_arg(p)
    p.set_defaults(func=_command(_rate_limit))


# -- operations: stats, health, prune, tasks, cancel, retry, status ----------------------
# The runners and the formatting live in pyconductor.ops.


def _dsn_arg(p: argparse.ArgumentParser) -> None:
    env_arg(p, "--dsn", env=["CONDUCTOR_DSN", "DATABASE_URL"],
            help="libpq connection string or URL (default: the running devdb)")  # fmt: skip


def _duration(text: str) -> Any:
    from pyconductor.ops import parse_duration

    return parse_duration(text)


@subcommand
def add_stats_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from pyconductor import ops

    p = subparsers.add_parser(
        "stats", help="per-queue depth, backlog age, throughput and failure rate",
        description="One row per queue from conductor.stats(): ready (depth), scheduled, running, "
        "waiting, unrunnable (queued, and no live worker serves both its queue and its kind), backlog age, "
        "tasks succeeded and failed (failed + dead) in the last 1/5/15 "
        "minutes, and the failure rate over 15 minutes.",
    )  # fmt: skip
    _dsn_arg(p)
    env_arg(p, "--queue", env="CONDUCTOR_QUEUE", help="only this queue")
    p.add_argument("--json", action="store_true", help="print JSON (ages in seconds)")
    p.set_defaults(func=ops.run_stats)


@subcommand
def add_health_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from pyconductor import ops

    p = subparsers.add_parser(
        "health", help="check the queues against thresholds (exit 0 ok, 1 unhealthy, 2 unreachable)",
        description="For cron jobs and container probes: print one line and exit 0 when every "
        "queue is within the thresholds, 1 with the reasons when one is not, 2 when the database "
        "cannot be reached. Durations: 30s, 5m, 1h, 7d.",
    )  # fmt: skip
    _dsn_arg(p)
    env_arg(p, "--max-depth", env="CONDUCTOR_HEALTH_MAX_DEPTH", type=int,
            help="most ready tasks a queue may hold (default: no limit)")  # fmt: skip
    env_arg(p, "--max-age", env="CONDUCTOR_HEALTH_MAX_AGE", type=_duration,
            help="oldest a ready task may be, e.g. 5m (default: no limit)")  # fmt: skip
    env_arg(p, "--max-failure-rate", env="CONDUCTOR_HEALTH_MAX_FAILURE_RATE", type=float,
            help="highest failure rate over 15 minutes, 0..1 (default: no limit)")  # fmt: skip
    env_arg(p, "--queue", env="CONDUCTOR_QUEUE", help="check only this queue")
    p.set_defaults(func=ops.run_health)


@subcommand
def add_prune_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from pyconductor import ops

    p = subparsers.add_parser(
        "prune", help="delete old finished tasks with their attempts and steps (admin)",
        description="Call conductor.prune() until it returns less than a batch: each call deletes up "
        "to --batch succeeded or cancelled tasks (and with --include-failed failed, dead and timed "
        "out ones) finished before --older-than ago, with their attempts, steps and schedule fires, "
        "in its own short transaction. Runs with an unfinished task are kept. Progress on stderr.",
    )  # fmt: skip
    _dsn_arg(p)
    env_arg(p, "--older-than", env="CONDUCTOR_PRUNE_OLDER_THAN", type=_duration, required=True,
            help="delete tasks finished more than this long ago, e.g. 7d")  # fmt: skip
    env_arg(p, "--include-failed", env="CONDUCTOR_PRUNE_INCLUDE_FAILED", type=_env_flag, default=False,
            nargs="?", const=True, metavar="0|1", help="delete failed, dead and timed out tasks too")  # fmt: skip
    env_arg(p, "--batch", env="CONDUCTOR_PRUNE_BATCH", type=int, default=10000,
            help="tasks per call (default: %(default)s)")  # fmt: skip
    p.set_defaults(func=ops.run_prune)


@subcommand
def add_tasks_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from pyconductor import ops

    p = subparsers.add_parser(
        "tasks", help="list tasks, newest first; `tasks show ID` for one with its attempts, steps and children",
        description="List tasks newest first (conductor.list_tasks), filtered by status, queue and "
        "kind; `pyconductor tasks show ID` prints one task with every attempt (its error, traceback and "
        "handler log lines), its steps and its children.",
    )  # fmt: skip
    _dsn_arg(p)
    p.add_argument("--status", help="only this status (queued, running, waiting, succeeded, failed, ...)")
    p.add_argument("--queue", help="only this queue")
    p.add_argument("--kind", help="only this kind")
    p.add_argument("--limit", type=int, default=50, help="at most this many (default: %(default)s)")
    p.add_argument("--before", type=int, metavar="ID", help="only tasks with a smaller id (the next page)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("show", nargs="*", metavar="show ID", help="show one task with its attempts and tracebacks")
    p.set_defaults(func=ops.run_tasks)


@subcommand
def add_cancel_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from pyconductor import ops

    p = subparsers.add_parser("cancel", help="cancel a task and its descendants",
                              description="conductor.cancel(ID): running descendants learn it at their "
                                          "next heartbeat.")  # fmt: skip
    p.add_argument("task_id", type=int, metavar="ID")
    _dsn_arg(p)
    p.set_defaults(func=ops.run_cancel)


@subcommand
def add_emit_event_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from pyconductor import ops

    p = subparsers.add_parser(
        "emit-event", help="emit an event: the tasks waiting for it wake (approve a waiting run)",
        description="conductor.emit_event(NAME, PAYLOAD): every task waiting for the event wakes with the "
        "payload as its step's result; an event emitted before anyone waits still counts, and the first "
        "payload for a name wins. Prints how many waiting tasks it woke.",
    )  # fmt: skip
    p.add_argument("name", metavar="NAME")
    env_arg(p, "--payload", env="CONDUCTOR_PAYLOAD", default="{}", help="the payload, a JSON object (default: {})")
    _dsn_arg(p)
    p.set_defaults(func=ops.run_emit_event)


@subcommand
def add_retry_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from pyconductor import ops

    p = subparsers.add_parser("retry", help="requeue a failed, dead, timed-out or cancelled task",
                              description="conductor.retry(ID): the task is due now again, with fresh "
                                          "counts.")  # fmt: skip
    p.add_argument("task_id", type=int, metavar="ID")
    _dsn_arg(p)
    p.set_defaults(func=ops.run_retry)


@subcommand
def add_status_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from pyconductor import ops

    p = subparsers.add_parser(
        "status", help="live workers (roles, queues, kinds, last seen), the leader leases held, and sessions "
        "outside the engine holding its locks",
        description="Workers from conductor.workers seen recently, with their roles, queues and kinds; "
        "who holds the leader leases (conductor.leaders()); and the sessions outside the engine that hold one "
        "of its advisory keys (conductor.foreign_lock_holders(), for a worker or admin login).",
    )  # fmt: skip
    _dsn_arg(p)
    env_arg(p, "--seen-within", env="CONDUCTOR_STATUS_SEEN_WITHIN", type=_duration, default=_duration("30s"),
            help="a worker counts as live when seen this recently (default: 30s, three heartbeats at the "
                 "default interval); the others reap() has not forgotten are listed apart as silent")  # fmt: skip
    p.add_argument(
        "--lock",
        action="append",
        metavar="NAME",
        help="accepted for scripts written for 0.2.0, and ignored: every leader lease is listed",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=ops.run_status)


# -- demo ----------------------------------------------------------------------------


def _run_demo(args: argparse.Namespace) -> int:
    from pyconductor.demo import run_demo
    from pyconductor.dsn import redact_dsn
    from pyconductor.errors import DatabaseUnusable

    dsn = resolve_dsn(args)
    if not dsn:
        return fail(
            "no database given: pass --dsn (or set CONDUCTOR_DSN / DATABASE_URL), "
            "or start the development cluster with `make devdb`"
        )
    try:
        summary = run_demo(dsn, args.tasks, concurrency=args.concurrency, rate=args.rate, seed=args.seed)
    except (RuntimeError, DatabaseUnusable) as exc:
        return fail(redact_dsn(str(exc)))
    except Exception as exc:
        if exc.__class__.__module__.startswith("psycopg"):
            return fail(f"demo failed on {redact_dsn(dsn)}: {redact_dsn(str(exc))} "
                         "(is the database migrated? `pyconductor migrate`)")  # fmt: skip
        raise
    print(summary.render())
    return 0 if summary.consistent else 1


@subcommand
def add_demo_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "demo",
        help="run a mixed demo workload (emails, thumbnails, reports) through a worker",
        description="Enqueue a few thousand tasks over three fresh demo queues while a worker "
        "runs them (some sleep, some fail and are retried, some fail for good), show a "
        "progress bar on stderr, then print done, failed, retried, throughput and pickup latency. "
        "Safe to run again: each run uses new queues.",
    )
    env_arg(p, "--dsn", env=["CONDUCTOR_DSN", "DATABASE_URL"],
            help="libpq connection string or URL of a migrated database (default: the running devdb)")  # fmt: skip
    p.add_argument("--tasks", type=int, default=3000, help="tasks to enqueue (default: %(default)s)")
    p.add_argument("--concurrency", type=int, default=16, help="worker concurrency (default: %(default)s)")
    p.add_argument("--rate", type=float, default=600.0, help="tasks enqueued per second (default: %(default)s)")
    p.add_argument("--seed", type=int, default=None, help="seed of the failure plan (default: random)")
    p.set_defaults(func=_run_demo)


# -- entry point -----------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pyconductor",
        description="Conductor: a durable task engine in PostgreSQL.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for factory in SUBCOMMANDS:
        factory(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.func
    try:
        return handler(args)
    except BrokenPipeError:
        # the reader went away (`pyconductor tasks | head`): no traceback; what is
        # left in stdout's buffer goes nowhere, so the flush at exit cannot fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell tool killed by the broken pipe


if __name__ == "__main__":
    raise SystemExit(main())
