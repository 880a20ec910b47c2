"""``pyconductor serve``: real processes (``python -m pyconductor serve``) with
their roles, against a real database; and the retention loop it runs."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import REPO, wait_until
from processes import TESTS, ChildProcess

from pyconductor import Conductor, NotFound
from pyconductor.retention import Retention
from pyconductor.serve import ROLES, parse_roles

APP = "apps.serve_app:app"
Conn = psycopg.Connection[tuple[Any, ...]]


class ServeProcess(ChildProcess):
    """One ``pyconductor serve --app apps.serve_app:app`` process, its output in a log file."""

    def __init__(self, dsn: str, log: Path, *args: str) -> None:
        env = {**os.environ, "CONDUCTOR_DSN": dsn, "PYTHONUNBUFFERED": "1"}
        env.pop("CONDUCTOR_ROLES", None)
        super().__init__([sys.executable, "-m", "pyconductor", "serve", "--app", APP, "--log-level", "INFO",
                          "--http", "127.0.0.1:0", "--http-port", "0", *args], env=env, cwd=TESTS, log=log)  # fmt: skip

    def _url(self, pattern: str, what: str) -> str:
        def found() -> str | None:
            assert self.alive(), f"serve exited early:\n{self.output()[-3000:]}"
            m = re.search(pattern, self.output())
            return m.group(1) if m else None

        return wait_until(found, timeout=30, interval=0.05, message=lambda: f"{what}:\n{self.output()[-3000:]}")

    @property
    def endpoints(self) -> str:
        """Where /health and /metrics are (--http 127.0.0.1:0 picks the port)."""
        return self._url(r"worker endpoints on (http://\S+)", "the endpoints listen")

    @property
    def dashboard(self) -> str:
        return self._url(r"dashboard on (http://\S+?)/?\s", "the dashboard listens")


@pytest.fixture
def serve(db_dsn: str, tmp_path: Path) -> Iterator[Any]:
    procs: list[ServeProcess] = []

    def start(*args: str) -> ServeProcess:
        proc = ServeProcess(db_dsn, tmp_path / f"serve{len(procs)}.log", "--poll", "2", "--tick-interval", "1", *args)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.close()


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def health(proc: ServeProcess) -> tuple[int, dict[str, Any]]:
    status, body = get(proc.endpoints + "/health")
    return status, json.loads(body)


def metric(text: str, name: str) -> float | None:
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def one(conn: Conn, sql: str, params: Any = None) -> Any:
    row = conn.execute(sql, params).fetchone()
    return row[0] if row else None


# -- roles -------------------------------------------------------------------------


def test_parse_roles() -> None:
    assert parse_roles(None) == list(ROLES) == ["web", "worker", "scheduler", "maintenance"]
    assert parse_roles(" maintenance , WEB,web") == ["web", "maintenance"]
    with pytest.raises(ValueError, match=r"unknown role 'bogus': the roles are web, worker, scheduler, maintenance"):
        parse_roles("worker,bogus")
    with pytest.raises(ValueError, match="no role given"):
        parse_roles(" , ")


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_an_unknown_role_exits_2_naming_the_valid_ones(how: str) -> None:
    env = {**os.environ, "CONDUCTOR_DSN": "postgresql://nobody@127.0.0.1:1/none", "PYTHONPATH": str(REPO / "python")}
    argv = [sys.executable, "-m", "pyconductor", "serve", "--app", APP]
    if how == "flag":
        argv += ["--role", "worker,bogus"]
    else:
        env["CONDUCTOR_ROLES"] = "worker,bogus"
    out = subprocess.run(argv, cwd=TESTS, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 2, out.stderr
    assert "unknown role 'bogus'" in out.stderr
    assert "web, worker, scheduler, maintenance" in out.stderr


def test_serve_without_an_app_fails_pointing_at_the_dashboard_alone() -> None:
    """Issue 27: right after make demo a newcomer runs `pyconductor serve` to see something; it
    serves an app's tasks, so it needs one, and says where the dashboard alone is."""
    env = {k: v for k, v in os.environ.items() if k != "CONDUCTOR_APP"}
    env.update(CONDUCTOR_DSN="postgresql://nobody@127.0.0.1:1/none", PYTHONPATH=str(REPO / "python"))
    out = subprocess.run([sys.executable, "-m", "pyconductor", "serve"], cwd=TESTS, env=env,
                         capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert out.returncode == 1, out.stderr  # as `pyconductor worker` without one
    assert "no app given: pass --app module:attr" in out.stderr
    assert "`pyconductor dashboard` serves the dashboard alone" in out.stderr


# -- one process, every role --------------------------------------------------------


def test_every_role_in_one_process(db_dsn: str, db_conn: Conn, serve: Any) -> None:
    proc = serve()
    # web: the dashboard's queues page
    status, page = get(proc.dashboard + "/")
    assert status == 200 and "Queues" in page
    # worker: a task runs
    with Conductor(db_dsn) as app:
        task_id = app.enqueue("echo", {"n": 1})
        assert app.result(task_id, timeout=30).result == {"n": 1}
    # scheduler: the declared schedule fires (every second) and its tasks run
    wait_until(lambda: one(db_conn, "select count(*) from conductor.tasks t join conductor.schedule_fires f "
                                    "on f.task_id = t.id where f.schedule_name = 'every-second' "
                                    "and t.status = 'succeeded'") >= 2, timeout=30)  # fmt: skip
    # maintenance: the singleton runs, in this process
    wait_until(lambda: one(db_conn, "select to_regclass('beacon_runs') is not null")
               and one(db_conn, "select pid from beacon_runs") == proc.pid, timeout=30)  # fmt: skip

    def leading_all() -> dict[str, Any] | None:
        code, body = health(proc)
        return body if code == 200 and set(body["leader_locks"]) == {"scheduler", "retention", "samples", "singleton:beacon"} else None

    body = wait_until(leading_all, timeout=30, message=lambda: str(health(proc)))
    assert body["status"] == "ok" and body["roles"] == ["web", "worker", "scheduler", "maintenance"]
    assert body["schedules"]["scheduler_leader"] is True and body["schedules"]["overdue"] == []
    assert body["problems"] == []
    # maintenance: the queues are sampled (the first sample writes the last whole minute and the day before)
    wait_until(lambda: one(db_conn, "select count(*) from conductor.sample_minutes where sampled_at is not null") >= 1,
               timeout=30)  # fmt: skip
    registered = one(db_conn, "select roles from conductor.workers")
    assert set(registered) == {"web", "worker", "scheduler", "maintenance"}

    status, text = get(proc.endpoints + "/metrics")
    assert status == 200
    assert metric(text, "conductor_scheduler_leader") == 1.0
    assert metric(text, "conductor_schedules_overdue") == 0.0
    assert metric(text, 'conductor_worker_leader{lock="retention"}') == 1.0
    assert metric(text, 'conductor_worker_leader{lock="singleton:beacon"}') == 1.0
    assert metric(text, 'conductor_retention_deleted_total{what="succeeded_runs"}') == 0.0

    proc.signal(signal.SIGTERM)
    assert proc.wait(60) == 0, proc.output()[-3000:]
    assert "stopped roles web,worker,scheduler,maintenance" in proc.output()
    assert one(db_conn, "select count(*) from conductor.leaders(array['scheduler', 'retention', 'singleton:beacon'])") == 0
    assert one(db_conn, "select count(*) from conductor.workers") == 0


def test_an_infinite_shutdown_grace_stops_every_role_cleanly(db_conn: Conn, serve: Any) -> None:
    """--shutdown-grace inf (issue 27): the singleton is waited for as long as it takes
    (not an OverflowError), and the log says 'unlimited', never 'infs'."""
    proc = serve("--role", "worker,maintenance", "--shutdown-grace", "inf")
    wait_until(lambda: one(db_conn, "select to_regclass('beacon_runs') is not null")
               and one(db_conn, "select pid from beacon_runs") == proc.pid, timeout=30)  # fmt: skip
    proc.signal(signal.SIGTERM)
    assert proc.wait(60) == 0, proc.output()[-3000:]
    out = proc.output()
    assert "grace unlimited" in out, out[-3000:]
    assert "infs" not in out and "grace inf" not in out, out[-3000:]
    assert "did not stop cleanly" not in out and "Traceback" not in out, out[-3000:]
    assert "stopped roles worker,maintenance" in out
    assert one(db_conn, "select count(*) from conductor.leaders(array['singleton:beacon'])") == 0


def test_retention_deletes_finished_runs_and_says_so(db_dsn: str, db_conn: Conn, serve: Any) -> None:
    db_conn.execute("update conductor.settings set retain_succeeded = interval '0'")
    proc = serve("--role", "worker,maintenance", "--retention-interval", "0.2s", "--retention-batch", "2")
    with Conductor(db_dsn) as app:
        for task_id in app.enqueue_many([("echo", {"n": n}) for n in range(5)]):
            with contextlib.suppress(NotFound):  # retention may delete a finished run before this reads it
                app.result(task_id, timeout=30)
    wait_until(lambda: one(db_conn, "select count(*) from conductor.tasks") == 0, timeout=30)

    def counted() -> float | None:
        value = metric(get(proc.endpoints + "/metrics")[1], 'conductor_retention_deleted_total{what="succeeded_runs"}')
        return value if value == 5.0 else None

    wait_until(counted, timeout=10)
    deleted = sum(int(n) for n in re.findall(r"retention: deleted (\d+) succeeded_runs", proc.output()))
    assert deleted == 5, proc.output()[-3000:]
    code, body = health(proc)
    assert code == 200 and body["roles"] == ["worker", "maintenance"] and "retention" in body["leader_locks"]
    assert "scheduler" not in body["leader_locks"]


# -- the fleet ---------------------------------------------------------------------


def test_a_singleton_fails_over_within_seconds_of_kill_9(db_conn: Conn, serve: Any) -> None:
    a, b = serve("--role", "maintenance"), serve("--role", "maintenance")
    first = wait_until(lambda: one(db_conn, "select to_regclass('beacon_runs') is not null")
                       and one(db_conn, "select pid from beacon_runs"), timeout=30)  # fmt: skip
    holder, other = (a, b) if first == a.pid else (b, a)
    assert first == holder.pid
    assert "singleton:beacon" in health(holder)[1]["leader_locks"]
    assert "singleton:beacon" not in health(other)[1]["leader_locks"]

    holder.kill9()
    took = wait_until(lambda: one(db_conn, "select pid from beacon_runs where pid = %s", (other.pid,)), timeout=10,
                      message="the other process runs the singleton within 10 s of kill -9")  # fmt: skip
    assert took == other.pid
    assert one(db_conn, "select count(*) from beacon_runs") == 2, "exactly one start per holder"
    wait_until(lambda: "singleton:beacon" in health(other)[1]["leader_locks"], timeout=10)


def test_health_is_503_while_no_scheduler_runs_and_a_schedule_is_overdue(db_conn: Conn, serve: Any) -> None:
    # A daily line due twelve hours from now (the database's clock), whatever the time of
    # day: its one catch-up fire below is the only fire the test can see (a fixed '0 3 * * *'
    # fired a second time when the suite ran near 03:00 UTC).
    cron = one(db_conn, "select format('%s %s * * *', extract(minute from t)::int, extract(hour from t)::int) "
                        "from (select conductor.now() at time zone 'UTC' + interval '12 hours' as t) x")  # fmt: skip
    db_conn.execute("select conductor.create_schedule(name => 'nightly', cron => %s, kind => 'echo')", (cron,))
    db_conn.execute("update conductor.schedules set next_due_at = conductor.now() - interval '5 minutes' "
                    "where name = 'nightly'")  # fmt: skip
    worker = serve("--role", "worker", "--schedule-grace", "1m")
    code, body = health(worker)
    assert code == 503 and body["status"] == "unhealthy", body
    assert body["roles"] == ["worker"] and body["leader_locks"] == []
    assert body["schedules"]["scheduler_leader"] is False
    assert [row["name"] for row in body["schedules"]["overdue"]] == ["nightly"]
    assert any("no process holds the scheduler lease" in p for p in body["problems"]), body["problems"]
    assert any("schedule nightly is overdue by" in p for p in body["problems"]), body["problems"]
    metrics = get(worker.endpoints + "/metrics")[1]
    assert metric(metrics, "conductor_schedules_overdue") == 1.0
    assert metric(metrics, "conductor_scheduler_leader") == 0.0

    # a scheduler comes: it fires the overdue schedule once (catch_up once) and leads
    serve("--role", "scheduler")
    wait_until(lambda: health(worker)[0] == 200, timeout=30, message=lambda: str(health(worker)))
    assert one(db_conn, "select count(*) from conductor.schedule_fires where schedule_name = 'nightly'") == 1
    assert one(db_conn, "select next_due_at > conductor.now() + interval '11 hours' from conductor.schedules "
                        "where name = 'nightly'"), "it continues from the next future time"  # fmt: skip


def test_health_is_degraded_and_names_a_session_outside_the_engine_that_holds_its_keys(
    db_dsn: str, db_conn: Conn, serve: Any
) -> None:
    """Issue 25: /health must say when a session outside the engine holds one of its
    advisory keys. A login with no grant at all holds v0.2.0's scheduler key and sits idle:
    /health answers 503 degraded, naming its pid, login and application_name
    (conductor.foreign_lock_holders), and `pyconductor status` lists it; once it is gone,
    200 ok again."""
    from squatter import Squatter

    worker = serve("--role", "worker,maintenance")
    wait_until(lambda: health(worker)[0] == 200, timeout=30, message=lambda: str(health(worker)))
    with Squatter(db_dsn, application_name="health-squatter") as squatter:
        assert squatter.grants() == []
        squatter.conn.execute("select pg_advisory_lock(hashtextextended('conductor.lead:scheduler', 0))")
        code, body = wait_until(lambda: (r := health(worker))[0] == 503 and r, timeout=10,
                                message=lambda: str(health(worker)))  # fmt: skip
        assert body["status"] == "degraded", body
        assert [(h["pid"], h["usename"], h["application_name"], h["key_space"], h["label"], h["idle"])
                for h in body["lock_holders"]] == [
            (squatter.pid, squatter.role, "health-squatter", "leader (v0.2.0)", "scheduler", True)], body  # fmt: skip
        status = subprocess.run([sys.executable, "-m", "pyconductor", "status", "--dsn", db_dsn],
                                capture_output=True, text=True, timeout=60, check=True,
                                env={**os.environ, "PYTHONPATH": str(REPO / "python")}).stdout  # fmt: skip
        holders = status.split("sessions outside the engine holding its locks: ")[1]
        assert holders.startswith("1\n") and str(squatter.pid) in holders and squatter.role in holders, status
        assert "health-squatter" in holders and "while idle" in holders, status
    wait_until(lambda: health(worker)[0] == 200, timeout=10, message=lambda: str(health(worker)))
    assert health(worker)[1]["lock_holders"] == []


# -- the retention loop itself ------------------------------------------------------


def finished_runs(conn: Conn, n: int) -> None:
    """``n`` succeeded one-task runs."""
    for _ in range(n):
        conn.execute("select conductor.enqueue('echo', '{}')")
        attempt = one(conn, "select attempt_id from conductor.claim('w-test', null, 1, interval '1 minute')")
        conn.execute("select conductor.complete(%s, '{}')", (attempt,))


def test_retention_loops_in_batches_under_one_leader(db_dsn: str, db_conn: Conn) -> None:
    db_conn.execute("update conductor.settings set retain_succeeded = interval '0'")
    finished_runs(db_conn, 5)
    db_conn.execute("select conductor.enqueue('echo', '{}')")  # unfinished: kept
    first, second = Retention(db_dsn, batch=2), Retention(db_dsn, batch=2)
    try:
        assert first.run_once() == {"succeeded_runs": 5}
        assert first.is_leader and first.deleted["succeeded_runs"] == 5
        assert second.run_once() == {} and not second.is_leader, "one process applies retention at a time"
        assert one(db_conn, "select count(*) from conductor.tasks") == 1
        assert one(db_conn, "select name from conductor.leaders(array['retention'])") == "retention"
        finished_runs(db_conn, 1)
        assert first.run_once() == {"succeeded_runs": 1}
    finally:
        first.stop()
        second.stop()
    assert one(db_conn, "select count(*) from conductor.leaders(array['retention'])") == 0


def test_the_web_role_alone_needs_no_app_and_the_others_say_why_they_do(db_dsn: str) -> None:
    """``serve --role web`` serves only the dashboard, which needs a DSN and no app; a role
    that runs the app's code, asked without one, is refused naming what of the app it runs."""
    pytest.importorskip("starlette")
    from pyconductor.serve import Node

    node = Node(None, "web", dsn=db_dsn)
    assert node.roles == ["web"] and node.worker is None and node.web is not None
    with pytest.raises(ValueError, match="the scheduler role runs the app's declared schedules: pass --app"):
        Node(None, "web,scheduler", dsn=db_dsn)
    with pytest.raises(ValueError, match="no database given"):
        Node(None, "web")
    env = {k: v for k, v in os.environ.items() if k != "CONDUCTOR_APP"}
    env.update(CONDUCTOR_DSN=db_dsn, PYTHONPATH=str(REPO / "python"))
    out = subprocess.run([sys.executable, "-m", "pyconductor", "serve", "--role", "worker"], cwd=TESTS, env=env,
                         capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert out.returncode == 1 and "no app given" in out.stderr, out.stderr


def test_every_lease_of_a_process_is_held_on_one_connection(db_dsn: str, db_conn: psycopg.Connection[Any]) -> None:
    """The scheduler, retention, the sampler and each singleton are duties of the process's one leader
    service: however many leases it holds, they cost one backend, outside any pool; a stop
    releases every one of them."""
    import threading

    from pyconductor.serve import Node

    app = Conductor(db_dsn)
    app.register("noop", lambda payload, ctx: None)
    for name in ("one", "two", "three"):
        app.singleton(name, failover=1.0)(lambda stop: stop.wait())
    node = Node(app, "worker,scheduler,maintenance", worker_options={"shutdown_grace": 5, "poll_interval": 0.2})
    names = {"scheduler", "retention", "samples", "singleton:one", "singleton:two", "singleton:three"}
    try:
        node.start()
        wait_until(lambda: node.leader_locks == dict.fromkeys(names, True), timeout=15,
                   message=lambda: f"{node.leader_locks}")  # fmt: skip
        rows = db_conn.execute("select name, pid, application_name from conductor.leaders()").fetchall()
        assert {r[0] for r in rows} == names
        assert len({(r[1], r[2]) for r in rows}) == 1, rows  # one backend renews them all
        assert rows[0][2] == f"pyconductor leader {node.worker_id}"
    finally:
        node.stop()
        app.close()
    assert db_conn.execute("select count(*) from conductor.leaders()").fetchone() == (0,)
    assert not [t for t in threading.enumerate() if t.name.startswith("singleton ")], "a singleton still runs"
