"""``pyconductor worker --processes N``: N worker processes under one supervisor.

Each child is a whole ``pyconductor worker`` (``python -m pyconductor worker``
with the supervisor's options, without ``--processes`` and ``--http``), run
with ``exit_on_stuck``: a child whose handler thread is stuck past its time
limit stops gracefully and exits with :data:`STUCK_EXIT`, and the supervisor
starts a new one. That is the hard time limit that threads cannot give.

Why subprocesses and not :mod:`multiprocessing`: a child is then exactly the
single-process worker (the same argument parsing, signal handling, exit codes,
and ``os._exit`` when released handlers are still running), it loads the app
by its ``module:attr`` spec as a single worker does (an app object is not
picklable), and nothing of the supervisor (threads, sockets, an imported app)
is forked into it. Each child runs in a session of its own, so a Ctrl-C in a
terminal reaches the supervisor only, which forwards it once.

The supervisor:

- restarts a child that exits for any reason but a requested stop, after
  :data:`RESTART_DELAY_MIN` doubling to :data:`RESTART_DELAY_MAX` for a child
  that keeps dying young (the delay starts over once a child ran
  :data:`RESTART_RESET_AFTER`). A child that fails before it started (a bad
  ``--app``, a DSN that can never work, a schema of another release) while no
  child has started yet is a configuration error: the supervisor stops the
  others and exits with that child's code instead of restarting it for ever;
- forwards the first SIGTERM or SIGINT to every child (each drains as a
  single worker does) and exits 0 once all of them exited 0; a second signal
  kills the children (SIGKILL: their tasks go back through the leases and the
  reaper) and exits 130 at once;
- serves one ``/health`` and ``/metrics`` for all children with ``--http``
  (:class:`Fleet`). Each child writes a JSON line describing itself (its
  ``health()``, counters, held attempts, leader leases and, when metrics are
  served, each handler outcome) every :data:`REPORT_INTERVAL` to a pipe the
  supervisor reads; :class:`Fleet` offers the attributes of a
  :class:`~pyconductor.worker.Worker` that
  :class:`~pyconductor.endpoints.EndpointServer` reads, summed over the
  children, and a status that is ``degraded`` while a child is missing,
  starting, restarting, silent or has stuck handler threads, and
  ``unavailable`` while none runs.
- A child whose pipe breaks (the supervisor is gone, even by ``kill -9``)
  stops gracefully, so no orphan keeps claiming.

Under systemd, use ``KillMode=mixed`` so that a stop signals the supervisor
only (docs/deployment.md).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyconductor.profile import DIRECT, ConnectionProfile

__all__ = [
    "REPORT_INTERVAL",
    "RESTART_DELAY_MAX",
    "RESTART_DELAY_MIN",
    "RESTART_RESET_AFTER",
    "STUCK_EXIT",
    "ChildReporter",
    "Fleet",
    "Supervisor",
    "restart_delay",
]

logger = logging.getLogger("pyconductor")

RESTART_DELAY_MIN = 0.5  # seconds before the first restart of a child
RESTART_DELAY_MAX = 30.0  # the delay doubles for a child that keeps dying young, up to this
RESTART_RESET_AFTER = 60.0  # a child that ran this long starts the delay over
REPORT_INTERVAL = 0.5  # a child describes itself this often
REPORT_STALE = 10.0  # a child silent this long counts as unresponsive (degraded)
STUCK_EXIT = 3  # a child's exit code: a handler thread was stuck (Worker(exit_on_stuck=True))
SECOND_SIGNAL_EXIT = 130
MAX_OUTCOMES = 100_000  # outcomes a child keeps between two reports; more are counted as dropped


def restart_delay(failures: int) -> float:
    """Seconds before restarting a child that died young ``failures`` times in a row (1 = the first)."""
    return min(RESTART_DELAY_MAX, RESTART_DELAY_MIN * 2.0 ** max(0, failures - 1))


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    if code == STUCK_EXIT:
        return f"exit code {code}: a handler thread was stuck past its time limit"
    return f"exit code {code}"


# -- in the child ------------------------------------------------------------------


def worker_report(worker: Any) -> dict[str, Any]:
    """What a child tells its supervisor about its worker (a Worker, or the
    :class:`~pyconductor.serve.Node` that runs it): its ``health()``
    (worker id, roles, queues, kinds, concurrency, counters, in flight, stuck),
    the attempts it holds, its leader leases, and whether it has started."""
    return {
        **worker.health(),
        "pid": os.getpid(),
        "started": bool(worker.started),
        "held": list(worker.held),
        "leader_locks": dict(worker.leader_locks),
    }


class ChildReporter:
    """In a child: writes :func:`worker_report` (and, with ``outcomes``, each
    handler outcome since the last report) as one JSON line to ``fd`` every
    ``interval`` seconds. When the write fails (the supervisor is gone), it
    asks the worker to stop gracefully."""

    def __init__(self, worker: Any, fd: int, *, outcomes: bool = False, interval: float = REPORT_INTERVAL) -> None:
        self.worker = worker
        self.fd = fd
        self.interval = interval
        self._outcomes: list[list[Any]] | None = [] if outcomes else None
        self._dropped = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        os.set_inheritable(fd, False)  # a handler's own subprocesses do not keep the pipe open
        if outcomes:
            worker.outcome_listeners.append(self._observe)

    def _observe(self, ctx: Any, outcome: str, handler_ms: float | None) -> None:
        with self._lock:
            assert self._outcomes is not None
            if len(self._outcomes) < MAX_OUTCOMES:
                self._outcomes.append([ctx.kind, ctx.queue, outcome, handler_ms])
            else:
                self._dropped += 1

    def start(self) -> ChildReporter:
        self._thread = threading.Thread(target=self._loop, name="pyconductor-supervisor-report", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Send a last report and stop."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self._send()

    def _send(self) -> bool:
        report = worker_report(self.worker)
        if self._outcomes is not None:
            with self._lock:
                report["outcomes"], self._outcomes = self._outcomes, []
                report["outcomes_dropped"], self._dropped = self._dropped, 0
        data = (json.dumps(report, default=str, separators=(",", ":")) + "\n").encode()
        try:
            while data:
                data = data[os.write(self.fd, data) :]
        except OSError:
            return False
        return True

    def _loop(self) -> None:
        while True:
            try:
                sent = self._send()
            except Exception:  # a report that cannot be built must not end the reports
                logger.exception("cannot report to the supervisor")
                sent = True
            if not sent:
                logger.warning("the supervisor is gone; stopping", extra={"worker_id": self.worker.worker_id})
                self.worker.request_stop()
                return
            if self._stop.wait(self.interval):
                return


# -- in the supervisor --------------------------------------------------------------


class _Outcome:
    """What a metrics listener reads of a task context: its kind and queue."""

    __slots__ = ("kind", "queue")

    def __init__(self, kind: str, queue: str) -> None:
        self.kind = kind
        self.queue = queue


@dataclass
class _Child:
    """One slot of the supervisor: the process that fills it now, if any."""

    slot: int
    proc: subprocess.Popen[bytes] | None = None
    fd: int | None = None  # read end of the child's report pipe
    buffer: bytes = b""
    report: dict[str, Any] | None = None
    reported_at: float = 0.0
    started_at: float = 0.0
    starts: int = 0
    failures: int = 0  # deaths in a row, each before RESTART_RESET_AFTER
    restart_at: float | None = None
    last_exit: int | None = None
    stop_sent: bool = False
    exited: bool = False  # the exit of proc was handled
    exits: list[tuple[int, bool]] = field(default_factory=list)  # (exit code, whether it had started)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    @property
    def ready(self) -> bool:
        return self.alive and bool(self.report and self.report.get("started"))

    def state(self, now: float) -> str:
        if self.alive:
            if not self.ready:
                return "starting"
            if now - self.reported_at > REPORT_STALE:
                return "unresponsive"
            return "running"
        return "restarting" if self.restart_at is not None else "stopped"


class Fleet:
    """The children of a :class:`Supervisor` seen as one worker: the attributes
    :class:`~pyconductor.endpoints.EndpointServer` reads, summed from the
    children's last reports (counters include the children that exited, so
    they never go down), and :meth:`health`."""

    def __init__(self, supervisor: Supervisor, dsn: str | None, profile: ConnectionProfile = DIRECT) -> None:
        self._sup = supervisor
        self.dsn = dsn
        self.profile = profile  # the children's --pooler: /health reads through the same pooler
        self.host = socket.gethostname()
        self.worker_id = f"{self.host}-{os.getpid()}-supervisor"
        self.outcome_listeners: list[Callable[[Any, str, float | None], None]] = []
        self._retired: dict[str, int] = {}  # counters of the children that exited
        self._retired_missed = 0  # missed notifications of the children that exited

    def _reports(self) -> list[dict[str, Any]]:
        return [c.report for c in self._sup.children if c.alive and c.report]

    @property
    def processes(self) -> int:
        return len(self._sup.children)

    @property
    def roles(self) -> list[str]:
        roles = {r for rep in self._reports() for r in rep.get("roles") or ()}
        return [r for r in ("worker", "scheduler") if r in roles] + sorted(roles - {"worker", "scheduler"})

    @property
    def queues(self) -> list[str] | None:
        return self._sup.queues

    @property
    def kinds(self) -> list[str] | None:
        reports = self._reports()
        return reports[0].get("kinds") if reports else None

    @property
    def concurrency(self) -> int:
        return self._sup.concurrency * len(self._sup.children)

    @property
    def running(self) -> int:
        return sum(int(rep.get("in_flight") or 0) for rep in self._reports())

    @property
    def held(self) -> list[int]:
        return [a for rep in self._reports() for a in rep.get("held") or ()]

    @property
    def stuck(self) -> int:
        return sum(int(rep.get("stuck") or 0) for rep in self._reports())

    @property
    def leader_locks(self) -> dict[str, bool]:
        locks: dict[str, bool] = {}
        for rep in self._reports():
            for name, held in (rep.get("leader_locks") or {}).items():
                locks[name] = locks.get(name, False) or bool(held)
        return locks

    @property
    def stats(self) -> dict[str, int]:
        total = dict(self._retired)
        for rep in self._reports():
            for key, n in (rep.get("stats") or {}).items():
                total[key] = total.get(key, 0) + int(n)
        return total

    def missed_notifications(self) -> dict[str, Any]:
        """The children's (Worker.missed_notifications): the total since start, exited
        children's included; the longest run in a row; a child's warning while one keeps
        missing them (None otherwise)."""
        missed = [rep.get("missed_notifications") or {} for rep in self._reports()]
        return {
            "total": self._retired_missed + sum(int(m.get("total") or 0) for m in missed),
            "in_a_row": max((int(m.get("in_a_row") or 0) for m in missed), default=0),
            "warning": next((m["warning"] for m in missed if m.get("warning")), None),
        }

    def retire(self, report: Mapping[str, Any] | None) -> None:
        """Keep the counters of a child that exited."""
        for key, n in ((report or {}).get("stats") or {}).items():
            self._retired[key] = self._retired.get(key, 0) + int(n)
        self._retired_missed += int(((report or {}).get("missed_notifications") or {}).get("total") or 0)

    def observe(self, report: Mapping[str, Any]) -> None:
        """Hand a report's handler outcomes to the outcome listeners (the metrics)."""
        if report.get("outcomes_dropped"):
            logger.warning("supervisor: worker %s had more than %d handler outcomes to report at once; "
                           "%d are missing from /metrics", report.get("worker_id"), MAX_OUTCOMES,
                           report["outcomes_dropped"], extra={"worker_id": self.worker_id})  # fmt: skip
        for kind, queue, outcome, handler_ms in report.get("outcomes") or ():
            ctx = _Outcome(kind, queue)
            for listener in self.outcome_listeners:
                listener(ctx, outcome, handler_ms)

    def health(self) -> dict[str, Any]:
        """``status``: ``ok`` while every child runs and reports no stuck thread;
        ``degraded`` while one is missing, starting, restarting, silent or
        stuck; ``unavailable`` while none runs. With each child's state."""
        now = time.monotonic()
        children = []
        for c in self._sup.children:
            rep = c.report if c.alive else None
            children.append({
                "slot": c.slot, "state": c.state(now), "pid": c.proc.pid if c.alive and c.proc else None,
                "worker_id": (rep or {}).get("worker_id"), "in_flight": (rep or {}).get("in_flight", 0),
                "stuck": (rep or {}).get("stuck", 0), "restarts": max(0, c.starts - 1), "last_exit": c.last_exit,
            })  # fmt: skip
        states = [child["state"] for child in children]
        stuck = sum(int(child["stuck"] or 0) for child in children)
        if self._sup.stopping:
            status = "stopping"
        elif "running" not in states:
            status = "unavailable"
        elif all(s == "running" for s in states) and not stuck:
            status = "ok"
        else:
            status = "degraded"
        return {
            "status": status, "stuck": stuck, "in_flight": self.running, "held": len(self.held),
            "worker_id": self.worker_id, "roles": self.roles, "queues": self.queues, "kinds": self.kinds,
            "concurrency": self.concurrency, "stats": self.stats, "processes": len(children),
            "running_processes": states.count("running"), "children": children,
            "missed_notifications": self.missed_notifications(),
        }  # fmt: skip


class Supervisor:
    """Runs ``processes`` children, each ``python -m pyconductor worker`` with
    ``child_args(slot, start)`` (``slot`` 1..N, ``start`` 1 for the first
    process of the slot) and ``env``; see the module doc. ``queues`` and
    ``concurrency`` (per child) are what :class:`Fleet` reports before the
    children do. ``run()`` returns the exit code."""

    def __init__(self, processes: int, child_args: Callable[[int, int], Sequence[str]], *,
                 env: Mapping[str, str] | None = None, queues: list[str] | None = None, concurrency: int = 1,
                 dsn: str | None = None, outcomes: bool = False,
                 profile: ConnectionProfile = DIRECT) -> None:  # fmt: skip
        if processes < 1:
            raise ValueError(f"processes must be 1 or more, got {processes}")
        self.children = [_Child(slot) for slot in range(1, processes + 1)]
        self.child_args = child_args
        self.env = dict(os.environ if env is None else env)
        self.queues = queues
        self.concurrency = concurrency
        self.outcomes = outcomes
        self.fleet = Fleet(self, dsn, profile)
        self.stopping = False
        self._ever_started = False
        self._signals: list[int] = []
        self._selector: selectors.BaseSelector | None = None

    # -- children ----------------------------------------------------------------------

    def _spawn(self, child: _Child) -> None:
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        child.starts += 1
        argv = [sys.executable, "-m", "pyconductor", "worker", *self.child_args(child.slot, child.starts),
                "--supervisor-fd", str(write_fd)]  # fmt: skip
        if self.outcomes:
            argv.append("--supervisor-outcomes")
        try:
            child.proc = subprocess.Popen(argv, env=self.env, pass_fds=(write_fd,), start_new_session=True)
        except OSError:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        child.fd = read_fd
        child.buffer = b""
        child.report = None
        child.reported_at = time.monotonic()
        child.started_at = time.monotonic()
        child.restart_at = None
        child.stop_sent = False
        child.exited = False
        assert self._selector is not None
        self._selector.register(read_fd, selectors.EVENT_READ, child)
        logger.info("supervisor: child %d started (pid %d)", child.slot, child.proc.pid,
                    extra={"worker_id": self.fleet.worker_id})  # fmt: skip

    def _read(self, child: _Child) -> None:
        assert child.fd is not None
        try:
            data = os.read(child.fd, 1 << 16)
        except BlockingIOError:
            return
        if not data:
            self._close_pipe(child)
            return
        child.buffer += data
        *lines, child.buffer = child.buffer.split(b"\n")
        for line in lines:
            try:
                report = json.loads(line)
            except ValueError:
                logger.warning("supervisor: child %d sent a line that is not JSON", child.slot)
                continue
            child.report = report
            child.reported_at = time.monotonic()
            if report.get("started"):
                self._ever_started = True
            self.fleet.observe(report)

    def _close_pipe(self, child: _Child) -> None:
        if child.fd is not None:
            assert self._selector is not None
            self._selector.unregister(child.fd)
            os.close(child.fd)
            child.fd = None

    def _reap(self, child: _Child, now: float) -> int | None:
        """Handle the exit of ``child``'s process, if it exited; returns a code
        when the supervisor must exit (a configuration error)."""
        if child.proc is None or child.exited or child.proc.poll() is None:
            return None
        child.exited = True
        while child.fd is not None:  # its last reports
            before = len(child.buffer), child.fd
            self._read(child)
            if (len(child.buffer), child.fd) == before:
                break
        self._close_pipe(child)
        code = child.proc.returncode
        started = bool(child.report and child.report.get("started"))
        child.last_exit = code
        child.exits.append((code, started))
        self.fleet.retire(child.report)
        child.report = None
        ran = now - child.started_at
        if self.stopping:
            logger.info("supervisor: child %d (pid %d) exited: %s", child.slot, child.proc.pid, _exit_text(code),
                        extra={"worker_id": self.fleet.worker_id})  # fmt: skip
            return None
        if not started and not self._ever_started and code > 0:
            logger.error("supervisor: child %d (pid %d) failed at start (%s) and no child has started: "
                         "stopping (see its error above)", child.slot, child.proc.pid, _exit_text(code),
                         extra={"worker_id": self.fleet.worker_id})  # fmt: skip
            return code
        child.failures = 1 if ran >= RESTART_RESET_AFTER else child.failures + 1
        delay = restart_delay(child.failures)
        child.restart_at = now + delay
        log = logger.warning if code in (0, STUCK_EXIT) else logger.error
        log("supervisor: child %d (pid %d) exited after %.1f s (%s); restarting in %.1f s", child.slot,
            child.proc.pid, ran, _exit_text(code), delay, extra={"worker_id": self.fleet.worker_id})  # fmt: skip
        return None

    # -- signals -----------------------------------------------------------------------

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._signals.append(signum)

    def _handle_signals(self) -> None:
        while self._signals:
            signum = self._signals.pop(0)
            if signum == signal.SIGCHLD:
                continue
            if self.stopping:
                self._kill_all()
            self.stopping = True
            name = signal.Signals(signum).name
            logger.info("supervisor: %s: stopping %d children (again to exit now)", name,
                        sum(c.alive for c in self.children), extra={"worker_id": self.fleet.worker_id})  # fmt: skip
            for child in self.children:
                child.restart_at = None
                if child.alive and not child.stop_sent:
                    child.stop_sent = True
                    assert child.proc is not None
                    child.proc.send_signal(signum)

    def _kill_all(self) -> None:
        """The second signal: kill every child and exit 130 now."""
        os.write(2, b"pyconductor: second signal, killing the children and exiting now (130)\n")
        for child in self.children:
            if child.alive:
                assert child.proc is not None
                with contextlib.suppress(OSError):
                    child.proc.kill()
        for child in self.children:
            if child.proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.proc.wait(5)
        logging.shutdown()
        os._exit(SECOND_SIGNAL_EXIT)

    # -- main loop ---------------------------------------------------------------------

    def run(self) -> int:
        """Start the children, supervise them until a signal and every child's
        exit; 0 when each child that started exited 0 after the stop."""
        self._selector = selectors.DefaultSelector()
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        self._selector.register(wake_r, selectors.EVENT_READ, None)
        previous_wakeup = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD)}
        logger.info("supervisor: %d worker processes", len(self.children), extra={"worker_id": self.fleet.worker_id})
        try:
            for child in self.children:
                self._spawn(child)
            return self._loop(wake_r)
        finally:
            for child in self.children:  # only after a configuration error: the others were asked to stop
                if child.alive:
                    assert child.proc is not None
                    child.proc.kill()
                    child.proc.wait()
                self._close_pipe(child)
            signal.set_wakeup_fd(previous_wakeup)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self._selector.close()
            os.close(wake_r)
            os.close(wake_w)

    def _loop(self, wake_r: int) -> int:
        assert self._selector is not None
        failed: int | None = None
        while True:
            now = time.monotonic()
            due = [c.restart_at for c in self.children if c.restart_at is not None]
            timeout = max(0.0, min([REPORT_INTERVAL, *(d - now for d in due)]))
            for key, _ in self._selector.select(timeout):
                if key.data is None:
                    try:
                        while os.read(wake_r, 512):
                            pass
                    except BlockingIOError:
                        pass
                else:
                    self._read(key.data)
            self._handle_signals()
            now = time.monotonic()
            for child in self.children:
                code = self._reap(child, now)
                if code is not None and failed is None:
                    failed = code
                    self._stop_all()
            if failed is not None or self.stopping:
                if not any(c.alive for c in self.children):
                    break
                continue
            for child in self.children:
                if child.restart_at is not None and child.restart_at <= now:
                    self._spawn(child)
        if failed is not None:
            return failed
        # a child stopped before it started held nothing: how it ended does not matter
        unclean = [(c.slot, c.exits[-1][0]) for c in self.children if c.exits and c.exits[-1] != (0, True)
                   and c.exits[-1][1]]  # fmt: skip
        if unclean:
            logger.warning("supervisor: stopped; not every child drained cleanly: %s",
                           ", ".join(f"child {slot} {_exit_text(code)}" for slot, code in unclean),
                           extra={"worker_id": self.fleet.worker_id})  # fmt: skip
            return 1
        logger.info("supervisor: stopped", extra={"worker_id": self.fleet.worker_id})
        return 0

    def _stop_all(self) -> None:
        self.stopping = True
        for child in self.children:
            child.restart_at = None
            if child.alive and not child.stop_sent:
                assert child.proc is not None
                child.stop_sent = True
                child.proc.send_signal(signal.SIGTERM)
