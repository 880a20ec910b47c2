"""Runs the lifecycle scenario (scenario.json) against real worker processes of
any language, and returns the counts it checked.

    with starter("node", dsn, tmp_path) as start:
        counts = run_scenario(start, dsn, label="node")

``run_scenario(start_worker, dsn)`` needs only a callable that starts one
worker process given its worker id (:data:`StartWorker`, returning a
:class:`WorkerHandle`) and a DSN for its own statements (enqueue, cancel, the
reads). The workers' DSN is the starter's business, so the same run works
through a pooler or across a failover: :func:`starter` builds the callable for
the Python and the Node worker with any DSN and extra arguments.

What it does (README.md in this folder tells it as a story):

1. creates ``lifecycle_log`` (the handlers' side effects);
2. starts worker A, enqueues every task of ``tasks``; cancels ``cancel-me``
   once its handler started and waits until the handler saw it; waits until
   the durable run blocks in step ``block_at`` and every other task finished;
   kills A with SIGKILL;
3. starts worker B, which resumes the durable run once A's lease expired;
4. enqueues ``hand-back``, sends B SIGTERM once its handler started: B hands
   the task back (``release``), deregisters and exits 0;
5. reads the tasks, attempts, steps and the log, checks every expectation
   of the scenario, prints the counts on one line, and returns them; a broken
   expectation raises AssertionError naming every problem, with the counts and
   the end of each worker's output.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from helpers import REPO, wait_until
from processes import ChildProcess
from pyconductor import queries

__all__ = [
    "Counts", "NODE_DIR", "assert_scenario_kept", "SCENARIO", "StartWorker", "WorkerHandle", "node_problem",
    "run_scenario", "starter",
]  # fmt: skip

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
NODE_DIR = REPO / "workers" / "node"
SCENARIO: dict[str, Any] = json.loads((HERE / "scenario.json").read_text())
TERMINAL = ("succeeded", "failed", "dead", "cancelled", "timed_out")

# Short leases so a killed worker's task comes back in seconds; a heartbeat at
# lease / 5 keeps a loaded machine from losing leases it still holds.
TIMING = ("--lease", "5", "--heartbeat", "1", "--reap", "0.5", "--poll", "2", "--shutdown-grace", "1",
          "--concurrency", "4")  # fmt: skip


class WorkerHandle(Protocol):
    """One running worker process, as run_scenario drives it."""

    @property
    def pid(self) -> int: ...

    def alive(self) -> bool: ...

    def signal(self, sig: int) -> None: ...

    def kill9(self) -> None: ...

    def wait(self, timeout: float) -> int: ...

    def output(self) -> str: ...


StartWorker = Callable[[str], WorkerHandle]
"""Starts a worker whose worker id is the argument; returns at once."""


def python_command(worker_id: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pyconductor", "worker", "--app", "lifecycle.app:app", "--worker-id", worker_id,
            "--no-scheduler", "--log-level", "INFO", *TIMING, *extra]  # fmt: skip


def node_command(worker_id: str, *extra: str) -> list[str]:
    return ["node", str(NODE_DIR / "main.js"), "--handlers", str(NODE_DIR / "scenario.js"),
            "--worker-id", worker_id, *TIMING, *extra]  # fmt: skip


COMMANDS: dict[str, tuple[Callable[..., list[str]], Path]] = {
    "python": (python_command, TESTS),
    "node": (node_command, REPO),
}


def node_problem() -> str | None:
    """Why the Node worker cannot run here (None: it can)."""
    if shutil.which("node") is None:
        return "node is not installed: scripts/install-deps.sh installs Node.js (CI runs it)"
    if not (NODE_DIR / "node_modules" / "pg").is_dir():
        return f"{NODE_DIR}/node_modules has no pg: run `npm ci` in workers/node (scripts/install-deps.sh does)"
    return None


@contextmanager
def starter(language: str, dsn: str, logs: Path, *extra: str) -> Iterator[StartWorker]:
    """A StartWorker for ``language`` ('python' or 'node') whose workers connect
    to ``dsn`` (CONDUCTOR_DSN) with TIMING then ``extra`` arguments; every
    process it started is killed on exit. Logs: ``logs/<worker id>.log``."""
    command, cwd = COMMANDS[language]
    procs: list[ChildProcess] = []

    def start(worker_id: str) -> ChildProcess:
        env = {**os.environ, "CONDUCTOR_DSN": dsn, "PYTHONUNBUFFERED": "1"}
        proc = ChildProcess(command(worker_id, *extra), env=env, cwd=cwd, log=logs / f"{worker_id}.log")
        procs.append(proc)
        return proc

    try:
        yield start
    finally:
        for proc in procs:
            proc.close()


@dataclass
class Counts:
    """What run_scenario counted; the line it prints is :meth:`line`."""

    enqueued: int = 0
    succeeded: int = 0
    failed: int = 0  # failed or dead for good
    retried: int = 0  # failed attempts that were followed by another attempt
    cancelled: int = 0
    released: int = 0  # handed back at shutdown, back in the queue
    recovered: int = 0  # tasks run again after their worker was killed
    steps_run_twice: int = 0  # finished steps that ran again after the kill (must be 0)
    lost: int = 0  # tasks neither finished nor back in the queue (must be 0)

    def line(self) -> str:
        return " ".join(f"{name}={value}" for name, value in asdict(self).items())


class _Db:
    """The runner's own autocommit connection (dict rows)."""

    def __init__(self, dsn: str) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True, connect_timeout=10, row_factory=dict_row)

    def rows(self, query: str, params: Any = None) -> list[dict[str, Any]]:
        cur = self.conn.execute(query, params)
        return cur.fetchall() if cur.description else []

    def value(self, query: str, params: Any = None) -> Any:
        rows = self.rows(query, params)
        return next(iter(rows[0].values())) if rows else None

    def enqueue(self, task: dict[str, Any]) -> int:
        params = {"kind": task["kind"], "payload": Jsonb(task["payload"]), **task.get("options", {})}
        return int(self.value(queries.enqueue(params), params))

    def status(self, task_id: int) -> str:
        return str(self.value("select status::text from conductor.tasks where id = %s", (task_id,)))

    def logged(self, task_id: int, event: str) -> list[dict[str, Any]]:
        return self.rows("select detail, pid from lifecycle_log where task_id = %s and event = %s order by at",
                         (task_id, event))  # fmt: skip


def reclaim_warned(output: str) -> bool:
    """Whether a worker's log holds its reaper's reclaim of a lost worker's task, at WARNING
    (Python's " WARNING ", Node's " WARN ")."""
    return any("reaper took back" in line and (" WARNING " in line or " WARN " in line)
               for line in output.splitlines())  # fmt: skip


def run_scenario(start_worker: StartWorker, dsn: str, *, label: str = "", timeout: float = 60.0,
                 scenario: dict[str, Any] = SCENARIO) -> Counts:  # fmt: skip
    """Run ``scenario`` with workers from ``start_worker``, statements on ``dsn``;
    print and return the counts; raise AssertionError when an expectation fails."""
    db = _Db(dsn)
    workers: list[WorkerHandle] = []
    prefix = f"lifecycle-{label or 'worker'}-{os.getpid()}"

    def start(suffix: str) -> WorkerHandle:
        worker_id = f"{prefix}-{suffix}"
        proc = start_worker(worker_id)
        workers.append(proc)
        wait_until(lambda: db.value("select 1 from conductor.workers where id = %s", (worker_id,)) or not proc.alive(),
                   timeout=timeout, message=f"worker {worker_id} registered")  # fmt: skip
        assert proc.alive(), f"worker {worker_id} exited at start:\n{proc.output()[-3000:]}"
        return proc

    def outputs() -> str:
        return "\n".join(f"--- worker {i} (pid {w.pid}) ---\n{w.output()[-4000:]}" for i, w in enumerate(workers))

    try:
        db.rows(scenario["side_table"])
        tasks = scenario["tasks"]
        a = start("a")
        ids = {task["name"]: db.enqueue(task) for task in tasks}
        by_act = {task.get("act"): task for task in tasks}

        # one task is cancelled while its handler runs; the handler must see it (heartbeat)
        cancelled = by_act["cancel_while_running"]
        cid = ids[cancelled["name"]]
        wait_until(lambda: db.logged(cid, "started"), timeout=timeout, message=f"{cancelled['name']} started")
        db.rows("select conductor.cancel(task_id => %s)", (cid,))
        wait_until(lambda: db.logged(cid, "observed"), timeout=timeout,
                   message=f"the handler of {cancelled['name']} saw the cancellation")  # fmt: skip

        # the durable run blocks in one step: kill -9 its worker there, once the rest finished
        durable = by_act["kill9_while_blocked"]
        did, block_at = ids[durable["name"]], durable["payload"]["block_at"]
        wait_until(lambda: any(r["detail"] == str(block_at) for r in db.logged(did, "step")), timeout=timeout,
                   message=f"{durable['name']} reached step {block_at}")  # fmt: skip
        others = [i for name, i in ids.items() if i != did]

        def unfinished() -> list[str]:
            return [r["n"] for r in db.rows("select kind || ' ' || id || ' ' || status as n from conductor.tasks"
                                            " where id = any(%s) and status::text <> all(%s)", (others, list(TERMINAL)))]  # fmt: skip

        wait_until(lambda: not unfinished(), timeout=timeout, message=lambda: f"tasks still unfinished: {unfinished()}")
        for task in tasks:  # a handler may log what it observed just after its task ended
            if "observed" in task["expect"]:
                wait_until(lambda task=task: db.logged(ids[task["name"]], "observed"), timeout=timeout,
                           message=f"the handler of {task['name']} logged what it observed")  # fmt: skip
        a.kill9()

        # a new worker resumes it without re-running the finished steps
        b = start("b")
        wait_until(lambda: db.status(did) in TERMINAL, timeout=timeout,
                   message=lambda: f"{durable['name']} finished after the kill (status {db.status(did)})")  # fmt: skip
        # the reaper's reclaim of the killed worker's lease is a warning (issue 27), in either language
        wait_until(lambda: reclaim_warned(b.output()), timeout=timeout,
                   message="worker b logs its reaper's reclaim of a's task at WARNING")  # fmt: skip

        # shutdown: SIGTERM while a handler runs hands its task back and deregisters
        shutdown = scenario["shutdown"]
        sid = ids[shutdown["name"]] = db.enqueue(shutdown)
        wait_until(lambda: db.logged(sid, "started"), timeout=timeout, message=f"{shutdown['name']} started")
        b.signal(signal.SIGTERM)
        exit_code = b.wait(timeout)
        b_id = f"{prefix}-b"

        counts, problems = _check(db, scenario, ids, exit_code=exit_code, worker_b=b_id,
                                  pids={"a": a.pid, "b": b.pid})  # fmt: skip
        db.rows("select conductor.cancel(task_id => %s)", (sid,))  # nothing may run it later
    except BaseException as exc:
        if isinstance(exc, AssertionError):
            raise AssertionError(f"{exc}\n{outputs()}") from None
        raise
    finally:
        db.conn.close()
    print(f"lifecycle {label}: {counts.line()}", flush=True)
    if problems:
        raise AssertionError(f"lifecycle {label}: {len(problems)} problem(s):\n  " + "\n  ".join(problems)
                             + f"\ncounts: {counts.line()}\n{outputs()}")  # fmt: skip
    return counts


def _check(db: _Db, scenario: dict[str, Any], ids: dict[str, int], *, exit_code: int, worker_b: str,
           pids: dict[str, int]) -> tuple[Counts, list[str]]:  # fmt: skip
    """The counts, and every expectation of the scenario that does not hold."""
    problems: list[str] = []
    everything = [*scenario["tasks"], scenario["shutdown"]]
    rows = {r["id"]: r for r in db.rows(
        "select t.id, t.status::text as status, t.result, t.error, t.attempt, t.recoveries,"
        " (select count(*) from conductor.attempts a where a.task_id = t.id and a.outcome = 'failed'"
        "   and exists (select from conductor.attempts l where l.task_id = t.id and l.id > a.id)) as retries,"
        " (select coalesce(array_agg(a.outcome order by a.id), '{}') from conductor.attempts a where a.task_id = t.id)"
        "   as outcomes"
        " from conductor.tasks t where t.id = any(%s)", (list(ids.values()),))}  # fmt: skip
    counts = Counts(enqueued=len(everything))
    for task in everything:
        name, expect = task["name"], task["expect"]
        row = rows[ids[name]]
        status = row["status"]
        counts.succeeded += status == "succeeded"
        counts.failed += status in ("failed", "dead")
        counts.cancelled += status == "cancelled"
        counts.retried += row["retries"]
        counts.recovered += row["recoveries"] > 0
        if task is scenario["shutdown"]:
            counts.released += status == "queued" and row["outcomes"] == ["released"]
            counts.lost += status not in ("queued", *TERMINAL)
        else:
            counts.lost += status not in TERMINAL

        def differs(what: str, got: Any, want: Any, name: str = name) -> None:
            if got != want:
                problems.append(f"{name}: {what} is {got!r}, expected {want!r}")

        differs("status", status, expect["status"])
        if "result" in expect:
            differs("result", row["result"], expect["result"])
        if "attempts" in expect:
            differs("attempt", row["attempt"], expect["attempts"])
        if "retries" in expect:
            differs("retries", row["retries"], expect["retries"])
        if "recoveries" in expect:
            differs("recoveries", row["recoveries"], expect["recoveries"])
        if "error_contains" in expect and expect["error_contains"] not in (row["error"] or ""):
            problems.append(f"{name}: error {row['error']!r} does not contain {expect['error_contains']!r}")
        if "observed" in expect:
            differs("what the handler observed", [r["detail"] for r in db.logged(ids[name], "observed")],
                    [expect["observed"]])  # fmt: skip
        if "attempt_outcomes" in expect:
            differs("attempt outcomes", row["outcomes"], expect["attempt_outcomes"])
        missing = [o for o in expect.get("attempt_outcomes_include", ()) if o not in row["outcomes"]]
        if missing:
            problems.append(f"{name}: attempt outcomes {row['outcomes']} lack {missing}")
        if "exit_code" in expect:
            differs("the worker's exit code after SIGTERM", exit_code, expect["exit_code"])
        if expect.get("deregistered"):
            differs("worker rows left", db.value("select count(*) from conductor.workers where id = %s", (worker_b,)), 0)
        if "checkpoints" in expect:
            saved = [r["name"] for r in db.rows("select name from conductor.steps where task_id = %s"
                                                " order by saved_at, name", (ids[name],))]  # fmt: skip
            differs("checkpoints", saved, expect["checkpoints"])
        if "block_at" in task["payload"]:
            counts.steps_run_twice += _check_steps(db, task, ids[name], pids, problems)
    return counts, problems


def _check_steps(db: _Db, task: dict[str, Any], task_id: int, pids: dict[str, int], problems: list[str]) -> int:
    """Checks which process ran each step of the durable run killed in step
    block_at; returns how many finished steps ran more than once."""
    name, block_at = task["name"], task["payload"]["block_at"]
    runs: dict[int, list[int]] = {}
    for r in db.logged(task_id, "step"):
        runs.setdefault(int(r["detail"]), []).append(r["pid"])
    twice = 0
    for index in range(1, len(task["payload"]["steps"]) + 1):
        got = runs.get(index, [])
        # before the kill: worker a; the killed step: a then b; after: b
        want = [pids["a"]] if index < block_at else [pids["a"], pids["b"]] if index == block_at else [pids["b"]]
        if got != want:
            problems.append(f"{name}: step {index} ran in pids {got}, expected {want} (a={pids['a']}, b={pids['b']})")
        if index != block_at and len(got) > 1:
            twice += 1
    return twice


def assert_scenario_kept(counts: Counts) -> None:
    """The checks every worker must pass, whatever its language or connection:
    the scenario's expected outcomes, retries, one release, one recovery, no
    finished step run twice, nothing lost."""
    tasks = SCENARIO["tasks"]
    expected = {s: sum(t["expect"]["status"] == s for t in tasks) for s in ("succeeded", "failed", "cancelled")}
    assert counts.enqueued == len(tasks) + 1
    assert (counts.succeeded, counts.failed, counts.cancelled) == (
        expected["succeeded"], expected["failed"], expected["cancelled"])  # fmt: skip
    assert counts.retried == sum(t["expect"]["retries"] for t in tasks) > 0
    assert counts.released == 1
    assert counts.recovered == 1
    assert counts.steps_run_twice == 0
    assert counts.lost == 0
