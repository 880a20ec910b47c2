"""``pyconductor worker --processes N``: real supervisor and child processes, real signals."""

from __future__ import annotations

import json
import os
import re
import signal
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import wait_until
from processes import Spawn, WorkerProcess, spawner

from pyconductor import Conductor

Conn = psycopg.Connection[tuple[Any, ...]]
APP = "apps.supervisor_app:app"
FAST = ("--heartbeat", "0.5", "--poll", "1", "--reap", "1")


@pytest.fixture
def spawn(db_dsn: str, tmp_path: Path) -> Iterator[Spawn]:
    """Start supervisors; at the end, their children are killed with them (a child
    whose supervisor was killed would otherwise drain on its own, after the test)."""
    started: list[WorkerProcess] = []

    with spawner(db_dsn, tmp_path, APP, *FAST, named=False) as start:

        def spawn(*args: str) -> WorkerProcess:
            started.append(start(*args))
            return started[-1]

        try:
            yield spawn
        finally:
            for sup in started:
                for pid in children(sup.pid) if sup.alive() else ():
                    os.kill(pid, signal.SIGKILL)


@pytest.fixture
def side_table(db_conn: Conn) -> Conn:
    db_conn.execute("create table executions (task_id bigint, attempt_id bigint, pid integer)")
    return db_conn


@pytest.fixture
def app(db_dsn: str) -> Iterator[Conductor]:
    with Conductor(db_dsn) as conductor:
        yield conductor


def children(pid: int) -> set[int]:
    """The live (not zombie) child processes of ``pid``."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == pid and state != "Z":
            found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def ready(conn: Conn, sup: WorkerProcess, n: int) -> set[int] | None:
    """The supervisor's n children once each has registered as a worker, else None."""
    assert sup.alive(), sup.output()[-3000:]
    kids = children(sup.pid)
    registered = {row[0] for row in conn.execute("select pid from conductor.workers").fetchall()}
    return kids if len(kids) == n and kids <= registered else None


def wait_ready(conn: Conn, sup: WorkerProcess, n: int) -> set[int]:
    return wait_until(lambda: ready(conn, sup, n), timeout=30, interval=0.05,
                      message=lambda: sup.output()[-3000:])  # fmt: skip


def ran(conn: Conn) -> int:
    return int(conn.execute("select count(*) from executions").fetchone()[0])


def test_children_claim_and_run_tasks_and_a_sigterm_stops_them_all(side_table: Conn, spawn: Spawn, app: Conductor) -> None:
    sup = spawn("--processes", "3", "--concurrency", "4")
    kids = wait_ready(side_table, sup, 3)
    workers = side_table.execute("select id, pid from conductor.workers").fetchall()
    assert len({worker_id for worker_id, _ in workers}) == 3, "each child has its own worker id"
    assert {pid for _, pid in workers} == kids

    ids = app.enqueue_many([("record", {}) for _ in range(300)])
    wait_until(lambda: side_table.execute("select count(*) = 300 from conductor.tasks where status = 'succeeded'")
               .fetchone()[0], timeout=60, interval=0.05)  # fmt: skip
    assert side_table.execute("select count(*), count(distinct task_id) from executions").fetchone() == (300, 300)
    pids = {row[0] for row in side_table.execute("select distinct pid from executions").fetchall()}
    assert pids <= kids and len(pids) >= 2, pids
    assert len(ids) == 300

    sup.signal(signal.SIGTERM)
    assert sup.wait(30) == 0, sup.output()
    assert not any(alive(pid) for pid in kids)
    assert side_table.execute("select count(*) from conductor.workers").fetchone() == (0,), "every child deregistered"


def test_a_killed_child_is_replaced_and_its_task_recovered_through_its_lease(side_table: Conn, spawn: Spawn,
                                                                              app: Conductor) -> None:  # fmt: skip
    sup = spawn("--processes", "2", "--lease", "2")
    kids = wait_ready(side_table, sup, 2)
    task_id = app.enqueue("block_once", {})
    victim = wait_until(lambda: side_table.execute("select pid from executions where task_id = %s",
                                                   (task_id,)).fetchone(), timeout=30)[0]  # fmt: skip
    assert victim in kids
    os.kill(victim, signal.SIGKILL)

    replaced = wait_until(lambda: (k := ready(side_table, sup, 2)) and victim not in k and k, timeout=30,
                          interval=0.05, message=lambda: sup.output()[-3000:])  # fmt: skip
    assert len(replaced - kids) == 1
    info = wait_until(lambda: (t := app.get(task_id)).status == "succeeded" and t, timeout=30,
                      message=lambda: f"{app.get(task_id)}\n{sup.output()[-3000:]}")  # fmt: skip
    assert info.recoveries == 1 and info.attempt == 1  # a loss is not a failed attempt
    assert info.attempts[-1].outcome == "succeeded" and info.attempts[-1].pid != victim
    assert re.search(rf"child \d \(pid {victim}\) exited after [\d.]+ s \(killed by SIGKILL\); restarting in 0\.5 s",
                     sup.output())  # fmt: skip

    sup.signal(signal.SIGTERM)
    assert sup.wait(30) == 0, sup.output()


def test_sigterm_lets_the_childrens_tasks_finish_and_exits_0(side_table: Conn, spawn: Spawn, app: Conductor) -> None:
    sup = spawn("--processes", "2", "--shutdown-grace", "20")
    kids = wait_ready(side_table, sup, 2)
    ids = app.enqueue_many([("sleep", {"seconds": 1.5}) for _ in range(4)])
    wait_until(lambda: ran(side_table) == 4, timeout=30)
    sup.signal(signal.SIGTERM)
    assert sup.wait(30) == 0, sup.output()
    assert [app.get(i).status for i in ids] == ["succeeded"] * 4
    assert not any(alive(pid) for pid in kids)
    assert "supervisor: SIGTERM: stopping 2 children" in sup.output()
    assert sup.output().count("stop requested") == 2, "each child drained as a worker does"


def test_a_second_sigint_kills_the_children_and_exits_130(side_table: Conn, spawn: Spawn, app: Conductor) -> None:
    sup = spawn("--processes", "2", "--shutdown-grace", "600")
    kids = wait_ready(side_table, sup, 2)
    ids = app.enqueue_many([("sleep", {"seconds": 600}) for _ in range(2)])
    wait_until(lambda: ran(side_table) == 2, timeout=30)
    sup.signal(signal.SIGINT)
    wait_until(lambda: sup.output().count("stop requested") == 2, timeout=10, message=lambda: sup.output()[-3000:])
    sup.signal(signal.SIGINT)
    assert sup.wait(10) == 130, sup.output()
    assert not any(alive(pid) for pid in kids)
    # nothing was handed back: the leases and the reaper take them
    assert [app.get(i).status for i in ids] == ["running", "running"]


def test_a_child_that_fails_at_start_stops_the_supervisor(db_dsn: str, tmp_path: Path) -> None:
    with spawner(db_dsn, tmp_path, "apps.supervisor_no_such_app:app", "--processes", "2", named=False) as start:
        sup = start()
        assert sup.wait(30) == 1, sup.output()
    out = sup.output()
    assert "cannot load app" in out and "failed at start" in out and "restarting" not in out


def test_children_stop_when_the_supervisor_is_killed(side_table: Conn, spawn: Spawn) -> None:
    sup = spawn("--processes", "2")
    kids = wait_ready(side_table, sup, 2)
    sup.kill9()
    wait_until(lambda: not any(alive(pid) for pid in kids), timeout=30)
    assert side_table.execute("select count(*) from conductor.workers").fetchone() == (0,), "they stopped cleanly"


def get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            body = response.read().decode()
            status = response.status
    except urllib.error.HTTPError as exc:
        body, status = exc.read().decode(), exc.code
    return status, json.loads(body) if body.startswith("{") else body


def sample(text: str, name: str, **labels: str) -> float:
    """The sum of the samples ``name`` with ``labels`` in a Prometheus text page."""
    from prometheus_client.parser import text_string_to_metric_families

    return sum(s.value for family in text_string_to_metric_families(text) for s in family.samples
               if s.name == name and labels.items() <= s.labels.items())  # fmt: skip


def test_one_health_and_metrics_for_all_children(side_table: Conn, spawn: Spawn, app: Conductor) -> None:
    sup = spawn("--processes", "2", "--concurrency", "3", "--http", "127.0.0.1:0")
    port = wait_until(lambda: re.search(r"endpoints on http://127\.0\.0\.1:(\d+)", sup.output()), timeout=30)[1]
    base = f"http://127.0.0.1:{port}"
    kids = wait_ready(side_table, sup, 2)

    def health() -> dict[str, Any]:
        return get(base + "/health")[1]

    body = wait_until(lambda: (b := health())["status"] == "ok" and b, timeout=10)
    assert body["concurrency"] == 6 and body["processes"] == 2
    assert {child["pid"] for child in body["children"]} == kids
    assert all(child["state"] == "running" for child in body["children"])

    app.enqueue_many([("record", {}) for _ in range(20)])
    wait_until(lambda: ran(side_table) == 20, timeout=30)
    wait_until(lambda: sample(get(base + "/metrics")[1], "conductor_handler_runs_total", kind="record",
                              outcome="succeeded") == 20, timeout=10)  # fmt: skip
    metrics = get(base + "/metrics")[1]
    assert sample(metrics, "conductor_worker_concurrency") == 6
    assert sample(metrics, "conductor_handler_duration_seconds_count", kind="record") == 20
    assert sample(metrics, "conductor_worker_tasks_total", event="succeeded") == 20
    # the children's missed notifications, summed (issue 27): none, their notifications arrive
    assert sample(metrics, "conductor_worker_missed_notifications_total") == 0
    assert health()["missed_notifications"] == {"total": 0, "in_a_row": 0, "warning": None}

    victim = sorted(kids)[0]
    os.kill(victim, signal.SIGKILL)
    degraded = wait_until(lambda: (b := health())["status"] == "degraded" and b, timeout=10, interval=0.005)
    assert {child["state"] for child in degraded["children"]} & {"restarting", "starting"}
    body = wait_until(lambda: (b := health())["status"] == "ok" and b, timeout=30)
    assert victim not in {child["pid"] for child in body["children"]}
    assert sorted(child["restarts"] for child in body["children"]) == [0, 1]

    sup.signal(signal.SIGTERM)
    assert sup.wait(30) == 0, sup.output()


def test_a_child_with_a_stuck_handler_exits_3_and_is_replaced(side_table: Conn, spawn: Spawn, app: Conductor) -> None:
    """The hard time limit: a handler past its timeout is failed as timed out; its
    thread cannot be killed, so its child stops (exit 3) and a new one takes the slot."""
    sup = spawn("--processes", "2", "--concurrency", "2")
    kids = wait_ready(side_table, sup, 2)
    hung = app.enqueue("hang", {})
    info = wait_until(lambda: (t := app.get(hung)).finished and t, timeout=30, message=lambda: sup.output()[-3000:])
    assert info.status == "failed" and info.error is not None and "timed out after 2 s" in info.error
    victim = side_table.execute("select pid from executions where task_id = %s", (hung,)).fetchone()[0]
    wait_until(lambda: not alive(victim), timeout=60, message=lambda: sup.output()[-3000:])
    new = wait_until(lambda: (k := ready(side_table, sup, 2)) and victim not in k and k, timeout=30,
                     message=lambda: sup.output()[-3000:])  # fmt: skip
    assert new - kids and victim in kids
    assert re.search(rf"child \d \(pid {victim}\) exited .*exit code 3: a handler thread was stuck", sup.output())
    done = app.enqueue("record", {})
    wait_until(lambda: app.get(done).status == "succeeded", timeout=30)

    sup.signal(signal.SIGTERM)
    assert sup.wait(30) == 0, sup.output()
