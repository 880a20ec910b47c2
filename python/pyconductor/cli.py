"""The ``pyconductor`` command line.

Each subcommand is one function decorated with ``@subcommand``: it receives
the subparsers object, adds its parser, and sets ``func`` (the function that
runs it, taking the parsed namespace and returning an exit code). This module
only parses: the runners live in :mod:`pyconductor.commands`, one module per
area. Adding a subcommand is writing one such function and its runner.

Every flag can also be set by an environment variable, declared with
``env_arg`` and shown in ``--help`` as ``[env CONDUCTOR_...]``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pyconductor import defaults
from pyconductor.commands import ops, runs
from pyconductor.commands.controls import run_pause, run_queue_limit, run_rate_limit, run_resume
from pyconductor.commands.dev import parse_setting, run_demo, run_devdb
from pyconductor.commands.enqueue import run_enqueue
from pyconductor.commands.migrate import MIGRATE_DRIFTED, MIGRATE_PENDING, run_migrate
from pyconductor.commands.schedules import run_scheduler, run_schedules
from pyconductor.commands.serve import run_serve
from pyconductor.commands.web import run_dashboard
from pyconductor.commands.worker import run_worker
from pyconductor.durations import parse_duration
from pyconductor.version import __version__

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


# -- devdb -----------------------------------------------------------------------


@subcommand
def add_devdb_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from pyconductor.dev.devdb import DEFAULT_DBNAME

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
        "-c", "--set", dest="settings", action="append", type=parse_setting, metavar="NAME=VALUE",
        help="extra server setting, repeatable, kept for later starts "
        "[env CONDUCTOR_DEVDB_SETTINGS, comma-separated]",
    )  # fmt: skip
    p.set_defaults(func=run_devdb)


# -- migrate ---------------------------------------------------------------------


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
    p.set_defaults(func=run_migrate)


# -- worker and enqueue ----------------------------------------------------------------


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
    env_arg(p, "--code-version", env="CONDUCTOR_CODE_VERSION",
            help="the version of the handlers' code: the runs this worker starts record it, and it claims only runs "
            "recorded under it, under a --replays version, or under none (docs/versioning.md)")  # fmt: skip
    env_arg(
        p,
        "--replays",
        env="CONDUCTOR_REPLAYS",
        help="comma-separated older code versions whose runs these handlers still replay (needs --code-version)",
    )
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
    p.set_defaults(func=run_worker)


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
    env_arg(p, "--expires-in", env="CONDUCTOR_EXPIRES_IN",
            help="how long after it is due the task may wait for its first start, then it ends expired: "
            "seconds, or an interval such as '10 minutes' (default: the kind's, else for ever)")  # fmt: skip
    env_arg(p, "--max-recoveries", env="CONDUCTOR_MAX_RECOVERIES", type=int,
            help="lost workers the task survives (default: the kind's, else 3)")  # fmt: skip
    env_arg(p, "--backoff-base", env="CONDUCTOR_BACKOFF_BASE",
            help="the first retry's delay: seconds or an interval (default: the kind's, else 30 s)")  # fmt: skip
    env_arg(p, "--backoff-factor", env="CONDUCTOR_BACKOFF_FACTOR", type=float,
            help="each retry's delay is the last one's times this, 1-10 (default: the kind's, else 2)")  # fmt: skip
    env_arg(p, "--backoff-max", env="CONDUCTOR_BACKOFF_MAX",
            help="the longest retry delay: seconds or an interval (default: the kind's, else 1 hour)")  # fmt: skip
    p.set_defaults(func=run_enqueue)


# -- scheduler and schedules -------------------------------------------------------


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
    p.set_defaults(func=run_scheduler)


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
    p.set_defaults(func=run_schedules)


# -- dashboard -----------------------------------------------------------------------


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
    p.set_defaults(func=run_dashboard)


def _dashboard_access_args(p: argparse.ArgumentParser) -> None:
    """Who may use the dashboard (``dashboard``, ``serve``'s web role): its token and logins."""
    env_arg(p, "--token", env="CONDUCTOR_DASHBOARD_TOKEN",
            help="require this token on every dashboard request (default: none, loopback only); on the command "
            "line it shows in ps: prefer the environment variable or --token-file")  # fmt: skip
    env_arg(p, "--token-file", env="CONDUCTOR_DASHBOARD_TOKEN_FILE", type=Path, metavar="PATH",
            help="read the token from this file (surrounding white space removed)")  # fmt: skip
    env_arg(p, "--session-max-age", env="CONDUCTOR_DASHBOARD_SESSION_MAX_AGE", type=parse_duration,
            default=parse_duration("12h"), metavar="DURATION",
            help="how long a login lasts, e.g. 12h or 30m (default: 12h)")  # fmt: skip
    env_arg(p, "--behind-tls", env="CONDUCTOR_DASHBOARD_BEHIND_TLS", type=_env_flag, default=False, nargs="?",
            const=True, metavar="0|1", help="mark cookies Secure: a TLS proxy serves the dashboard (they are "
            "Secure anyway when the request came over TLS)")  # fmt: skip


# -- serve ---------------------------------------------------------------------------


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
    env_arg(p, "--schedule-grace", env="CONDUCTOR_SCHEDULE_GRACE", type=parse_duration, default=parse_duration("1m"),
            metavar="DURATION", help="/health is 503 when an enabled schedule is overdue by more than this, "
            "e.g. 1m (default: 1m)")  # fmt: skip
    env_arg(p, "--retention-interval", env="CONDUCTOR_RETENTION_INTERVAL", type=parse_duration,
            default=parse_duration(f"{INTERVAL:g}s"), metavar="DURATION",
            help=f"the maintenance role applies retention this often (default: {INTERVAL:g}s)")  # fmt: skip
    env_arg(p, "--retention-batch", env="CONDUCTOR_RETENTION_BATCH", type=int, default=BATCH,
            help="rows one apply_retention call deletes at most (default: %(default)s)")  # fmt: skip
    p.set_defaults(func=run_serve)


# -- queue controls: pause, resume, rate-limit, queue-limit ------------------------------
# admin calls (pyconductor.commands.controls); the database validates what they are given


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


@subcommand
def add_pause_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "pause", help="pause a queue: nothing is claimed from it, its tasks stay queued (admin)",
        description="conductor.pause_queue(QUEUE): no worker claims from the queue until it is resumed; its "
        "tasks stay queued, running ones finish, `pyconductor stats` shows it paused.",
    )  # fmt: skip
    p.add_argument("queue", metavar="QUEUE")
    _dsn_arg(p)
    p.set_defaults(func=run_pause)


@subcommand
def add_resume_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("resume", help="resume a paused queue (admin)",
                              description="conductor.resume_queue(QUEUE): workers claim from the queue "
                                          "again.")  # fmt: skip
    p.add_argument("queue", metavar="QUEUE")
    _dsn_arg(p)
    p.set_defaults(func=run_resume)


@subcommand
def add_rate_limit_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "rate-limit", help="limit the task starts per second of a queue or a kind, across the fleet",
        description="conductor.set_rate_limit: at most PER_SECOND tasks of the queue (or the kind) start per "
        "second across every worker, in any language: claim draws from a token bucket of --burst tokens "
        "(default: max(1, PER_SECOND)) refilled at PER_SECOND. 'off' removes the limit. --per-key: a bucket "
        "per rate_key of its tasks (given at enqueue), e.g. at most 10 calls per second per customer.",
    )  # fmt: skip
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--queue", help="limit this queue")
    which.add_argument("--kind", help="limit this kind, in every queue")
    p.add_argument("per_second", type=_rate, metavar="PER_SECOND|off", help="task starts per second, or off")
    p.add_argument(
        "--burst", type=float, help="starts allowed at once after a quiet spell (default: max(1, PER_SECOND))"
    )
    p.add_argument(
        "--per-key", action="store_true",
        help="a bucket of PER_SECOND and --burst per rate_key of the tasks (a task without one is not limited)",
    )  # fmt: skip
    _dsn_arg(p)
    p.set_defaults(func=run_rate_limit)


def _max_running(text: str) -> int | None:
    """A queue cap's MAX_RUNNING: a whole number, or ``off`` (None)."""
    if text.strip().lower() == "off":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of running tasks or 'off', got {text!r}") from None


@subcommand
def add_queue_limit_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "queue-limit", help="cap the tasks of a queue running at once, across the fleet",
        description="conductor.set_queue_limit: at most MAX_RUNNING tasks of QUEUE run at once across every "
        "worker, in any language, whatever their number and concurrency; the others wait queued. "
        "'off' removes the cap.",
    )  # fmt: skip
    p.add_argument("queue", metavar="QUEUE")
    p.add_argument("max_running", type=_max_running, metavar="MAX_RUNNING|off",
                   help="tasks of the queue running at once, or off")  # fmt: skip
    _dsn_arg(p)
    p.set_defaults(func=run_queue_limit)


# -- operations: stats, health, prune, tasks, cancel, retry, status ----------------------
# The runners and the formatting live in pyconductor.commands.ops.


def _dsn_arg(p: argparse.ArgumentParser) -> None:
    env_arg(p, "--dsn", env=["CONDUCTOR_DSN", "DATABASE_URL"],
            help="libpq connection string or URL (default: the running devdb)")  # fmt: skip


@subcommand
def add_stats_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    p = subparsers.add_parser(
        "health", help="check the queues against thresholds (exit 0 ok, 1 unhealthy, 2 unreachable)",
        description="For cron jobs and container probes: print one line and exit 0 when every "
        "queue is within the thresholds, 1 with the reasons when one is not, 2 when the database "
        "cannot be reached. Durations: 30s, 5m, 1h, 7d.",
    )  # fmt: skip
    _dsn_arg(p)
    env_arg(p, "--max-depth", env="CONDUCTOR_HEALTH_MAX_DEPTH", type=int,
            help="most ready tasks a queue may hold (default: no limit)")  # fmt: skip
    env_arg(p, "--max-age", env="CONDUCTOR_HEALTH_MAX_AGE", type=parse_duration,
            help="oldest a ready task may be, e.g. 5m (default: no limit)")  # fmt: skip
    env_arg(p, "--max-failure-rate", env="CONDUCTOR_HEALTH_MAX_FAILURE_RATE", type=float,
            help="highest failure rate over 15 minutes, 0..1 (default: no limit)")  # fmt: skip
    env_arg(p, "--queue", env="CONDUCTOR_QUEUE", help="check only this queue")
    p.set_defaults(func=ops.run_health)


@subcommand
def add_prune_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "prune", help="delete old finished tasks with their attempts and steps (admin)",
        description="Call conductor.prune() until it returns less than a batch: each call deletes up "
        "to --batch succeeded or cancelled tasks (and with --include-failed failed, dead and timed "
        "out ones) finished before --older-than ago, with their attempts, steps and schedule fires, "
        "in its own short transaction. Runs with an unfinished task are kept. Progress on stderr.",
    )  # fmt: skip
    _dsn_arg(p)
    env_arg(p, "--older-than", env="CONDUCTOR_PRUNE_OLDER_THAN", type=parse_duration, required=True,
            help="delete tasks finished more than this long ago, e.g. 7d")  # fmt: skip
    env_arg(p, "--include-failed", env="CONDUCTOR_PRUNE_INCLUDE_FAILED", type=_env_flag, default=False,
            nargs="?", const=True, metavar="0|1", help="delete failed, dead and timed out tasks too")  # fmt: skip
    env_arg(p, "--batch", env="CONDUCTOR_PRUNE_BATCH", type=int, default=10000,
            help="tasks per call (default: %(default)s)")  # fmt: skip
    p.set_defaults(func=ops.run_prune)


@subcommand
def add_tasks_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "tasks", help="list tasks, newest first; `tasks show ID` for one with its attempts, steps and children",
        description="List tasks newest first (conductor.list_tasks), filtered by status, queue and "
        "kind; `pyconductor tasks show ID` prints one task with every attempt (its error, traceback and "
        "handler log lines), its steps and its children. `pyconductor tasks search` finds tasks by kind, "
        "queue, status, dedupe key, a payload field and time, a page at a time (conductor.search_tasks: each "
        "page examines at most --scan tasks). `pyconductor tasks retry` and `tasks cancel` with "
        "a filter print how many tasks match (conductor.preview_matching), ask, then retry or cancel "
        "them a batch per statement (conductor.retry_matching, cancel_matching; admin).",
    )  # fmt: skip
    _dsn_arg(p)
    p.add_argument("--status", help="only this status (queued, running, waiting, succeeded, failed, ...)")
    p.add_argument("--queue", help="only this queue")
    p.add_argument("--kind", help="only this kind")
    p.add_argument("--limit", type=int, default=50, help="at most this many (default: %(default)s)")
    p.add_argument("--before", type=int, metavar="ID", help="only tasks with a smaller id (the next page)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument(
        "--since",
        type=parse_duration,
        metavar="AGO",
        help="only tasks enqueued at most this long ago, e.g. 1h (retry, cancel)",
    )
    p.add_argument(
        "--until",
        type=parse_duration,
        metavar="AGO",
        help="only tasks enqueued more than this long ago, e.g. 10m (retry, cancel)",
    )
    p.add_argument(
        "--error-contains",
        metavar="TEXT",
        help="only tasks whose last attempt's error holds this text, ignoring case (retry, cancel)",
    )
    p.add_argument("--dedupe-key", metavar="KEY", help="only tasks with this dedupe key (search)")
    p.add_argument(
        "--payload",
        metavar="JSON",
        help="only tasks whose payload contains this JSON object, e.g. '{\"order_id\": 42}' (search)",
    )
    for edge, word in (("after", "at or after"), ("before", "before")):
        p.add_argument(f"--enqueued-{edge}", metavar="TIME", help=f"only tasks enqueued {word} TIME, ISO 8601, "
                       "UTC unless it says (search)")  # fmt: skip
        p.add_argument(f"--finished-{edge}", metavar="TIME", help=f"only tasks finished {word} TIME (search)")
    p.add_argument("--scan", type=int, default=10000,
                   help="tasks a search page examines at most (default: %(default)s)")  # fmt: skip
    p.add_argument("--yes", action="store_true", help="retry or cancel without asking for confirmation")
    p.add_argument(
        "--batch", type=int, default=1000, help="tasks per statement for retry, cancel (default: %(default)s)"
    )
    p.add_argument(
        "show",
        nargs="*",
        metavar="show ID | search | retry | cancel",
        help="show one task with its attempts and tracebacks; or search (one page, newest first); or "
        "retry or cancel every task the filter matches, after printing the count and asking (admin)",
    )
    p.set_defaults(func=ops.run_tasks)


@subcommand
def add_cancel_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("cancel", help="cancel a task and its descendants",
                              description="conductor.cancel(ID): running descendants learn it at their "
                                          "next heartbeat.")  # fmt: skip
    p.add_argument("task_id", type=int, metavar="ID")
    _dsn_arg(p)
    p.set_defaults(func=ops.run_cancel)


@subcommand
def add_emit_event_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    p = subparsers.add_parser("retry", help="requeue a failed, dead, timed-out, expired or cancelled task",
                              description="conductor.retry(ID): the task is due now again, with fresh "
                                          "counts.")  # fmt: skip
    p.add_argument("task_id", type=int, metavar="ID")
    _dsn_arg(p)
    p.set_defaults(func=ops.run_retry)


@subcommand
def add_rewind_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("rewind", help="restart a finished run from a step, keeping the steps before it",
                              description="conductor.rewind(ID, STEP): the finished run (succeeded too) is due "
                                          "now again with fresh counts; the steps it saved before STEP are kept, "
                                          "STEP and every later one run again. A rewound spawn's unfinished "
                                          "child is cancelled (docs/workflows.md).")  # fmt: skip
    p.add_argument("task_id", type=int, metavar="ID")
    p.add_argument("--from", dest="from_step", required=True, metavar="STEP", help="the first step to run again")
    _dsn_arg(p)
    p.set_defaults(func=ops.run_rewind)


@subcommand
def add_fork_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("fork", help="copy a finished run from a step, as a new task",
                              description="conductor.fork(ID, STEP): a new task with the run's kind, payload, "
                                          "queue and policy, due now, carrying the steps saved before STEP; "
                                          "the run itself is not changed. Prints the copy's id.")  # fmt: skip
    p.add_argument("task_id", type=int, metavar="ID")
    p.add_argument("--from", dest="from_step", required=True, metavar="STEP", help="the first step the copy runs")
    _dsn_arg(p)
    p.set_defaults(func=ops.run_fork)


@subcommand
def add_run_state_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("run-state", help="the state a run's handler published last (ctx.publish_state)",
                              description="conductor.run_state(ID): the value the run published last and when, "
                                          "while it runs or waits, or after it ended (docs/workflows.md).")  # fmt: skip
    p.add_argument("task_id", type=int, metavar="ID")
    p.add_argument("--json", action="store_true", help="print JSON: task_id, state, set_at")
    _dsn_arg(p)
    p.set_defaults(func=runs.run_run_state)


@subcommand
def add_send_update_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "send-update", help="send an update to a running workflow, and wait for its reply",
        description="conductor.send_update(ID, NAME, PAYLOAD): the run's ctx.wait_for_update(NAME) receives it "
        "and answers with ctx.reply. Prints the update's id; with --wait, waits that many seconds for the reply "
        "and prints it (exit 1 when none came).",
    )  # fmt: skip
    p.add_argument("task_id", type=int, metavar="ID")
    p.add_argument("name", metavar="NAME")
    env_arg(p, "--payload", env="CONDUCTOR_PAYLOAD", default="null", help="the payload, JSON (default: null)")
    p.add_argument("--wait", type=float, metavar="SECONDS", help="wait this long for the run's reply")
    p.add_argument("--json", action="store_true", help="print only the reply, as JSON")
    _dsn_arg(p)
    p.set_defaults(func=runs.run_send_update)


@subcommand
def add_graph_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("graph", help="a graph's tasks by layer, with what each runs after",
                              description="conductor.graph(ID): its members and callbacks by layer, with their "
                                          "status, what each runs after and its error (docs/graphs.md).")  # fmt: skip
    p.add_argument("graph_id", type=int, metavar="ID")
    p.add_argument("--json", action="store_true", help="print JSON, a row per task")
    _dsn_arg(p)
    p.set_defaults(func=runs.run_graph)


@subcommand
def add_cancel_graph_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("cancel-graph", help="cancel what has not finished in a graph",
                              description="conductor.cancel_graph(ID): its unfinished members, callbacks and "
                                          "their children are cancelled; no callback runs after it.")  # fmt: skip
    p.add_argument("graph_id", type=int, metavar="ID")
    _dsn_arg(p)
    p.set_defaults(func=runs.run_cancel_graph)


@subcommand
def add_status_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "status", help="live workers (roles, queues, kinds, last seen), the leader leases held, and sessions "
        "outside the engine holding its locks",
        description="Workers from conductor.workers seen recently, with their roles, queues and kinds; "
        "who holds the leader leases (conductor.leaders()); and the sessions outside the engine that hold one "
        "of its advisory keys (conductor.foreign_lock_holders(), for a worker or admin login).",
    )  # fmt: skip
    _dsn_arg(p)
    env_arg(p, "--seen-within", env="CONDUCTOR_STATUS_SEEN_WITHIN", type=parse_duration, default=parse_duration("30s"),
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
    p.set_defaults(func=run_demo)


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
