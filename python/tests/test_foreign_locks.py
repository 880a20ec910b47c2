"""Issue 25, "a login with no grants at all stops the engine": real processes.

A login with no Conductor grant (nothing but LOGIN, and the CONNECT PUBLIC has)
takes the advisory locks v0.2.0 coordinated with: the keys computable from its
source (leaders, concurrency keys, events, exclusive() names, the enqueue
in-flight keys) and, in a loop, every advisory lock it sees in ``pg_locks``.
A ``pyconductor serve`` process (worker, scheduler, maintenance) and a client
must go on regardless, each within a few seconds:

- claim: tasks staged before, plain and keyed, are claimed and finish;
- leadership: the scheduler, retention and the app's singleton lead;
- a schedule fires (tick() enqueues its task) and its task finishes;
- the reaper takes back a lease that a dead worker left and the task finishes;
- a client's enqueue and emit_event return, and the task finishes.

The first test is the whole of it. The second holds back the enqueue in-flight
keys and the event keys (functions/notify and functions/runs, fixed apart from
leadership and claim) and checks leadership, keyed claims and exclusive().
"""

from __future__ import annotations

import os
import secrets
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from helpers import wait_until
from processes import TESTS, ChildProcess
from squatter import Squatter

APP = "apps.serve_app:app"  # echo, the schedule every-second, the singleton beacon
Conn = psycopg.Connection[tuple[Any, ...]]


def one(conn: Conn, sql: str, params: Any = None) -> Any:
    row = conn.execute(sql, params).fetchone()
    return row[0] if row else None


@pytest.fixture
def serve(db_dsn: str, tmp_path: Path) -> Iterator[Callable[..., ChildProcess]]:
    procs: list[ChildProcess] = []

    def start(*args: str) -> ChildProcess:
        env = {**os.environ, "CONDUCTOR_DSN": db_dsn, "PYTHONUNBUFFERED": "1"}
        env.pop("CONDUCTOR_ROLES", None)
        proc = ChildProcess([sys.executable, "-m", "pyconductor", "serve", "--app", APP, "--log-level", "INFO",
                             "--poll", "1", "--tick-interval", "1", *args],
                            env=env, cwd=TESTS, log=tmp_path / f"serve{len(procs)}.log")  # fmt: skip
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.close()


@pytest.fixture
def client_dsn(db_dsn: str) -> Iterator[str]:
    """A login granted conductor_client, as an application's."""
    role = f"t_client_{secrets.token_hex(4)}"
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(f"create role {role} login in role conductor_client")
    yield make_conninfo(db_dsn, user=role)
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("select pg_terminate_backend(pid) from pg_stat_activity where usename = %s", [role])
        for _ in range(100):
            if not one(conn, "select count(*) from pg_stat_activity where usename = %s", [role]):
                break
            time.sleep(0.05)
        conn.execute(f"drop role {role}")


def stage(conn: Conn) -> dict[str, Any]:
    """Tasks queued before the squatter comes: one leased to a worker that died (its lease
    ends in 3 s), plain ones, and keyed ones (two of key acct-1, one of acct-2)."""
    ghost = one(conn, "select conductor.enqueue('echo', '{\"ghost\": true}')")
    assert one(conn, "select task_id from conductor.claim('ghost', array['default'], 1, interval '3 seconds')") == ghost
    plain = [one(conn, "select conductor.enqueue('echo', jsonb_build_object('n', %s))", [n]) for n in range(3)]
    keyed = [one(conn, "select conductor.enqueue('echo', '{}', concurrency_key => %s)", [k])
             for k in ("acct-1", "acct-1", "acct-2")]  # fmt: skip
    return {"ghost": ghost, "tasks": plain + keyed}


def succeeded(conn: Conn, ids: list[int]) -> bool:
    return one(conn, "select count(*) from conductor.tasks where id = any(%s) and status = 'succeeded'", [ids]) == len(ids)


def leaders(conn: Conn, pid: int) -> set[str]:
    """The leases held by the process pid (pyconductor's holder: host-pid-random)."""
    return {r[0] for r in conn.execute("select name from conductor.leaders() where holder like %s",
                                       [f"%-{pid}-%"]).fetchall()}  # fmt: skip


class Checks:
    """Each check awaited with its own deadline; the failures are collected, so one report
    says every part that did not go on."""

    def __init__(self) -> None:
        self.failed: list[str] = []
        self.passed: list[str] = []

    def check(self, what: str, fn: Callable[[], Any], timeout: float = 15.0) -> None:
        try:
            wait_until(fn, timeout=timeout, interval=0.05, message=what)
        except Exception as exc:  # noqa: BLE001 - reported below, with the others
            self.failed.append(f"{what}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
        else:
            self.passed.append(what)


def client_call(dsn: str, sql: str, params: Any = None) -> Any:
    """One call as the client, which may wait at most 5 s (statement_timeout)."""
    with psycopg.connect(dsn, autocommit=True, options="-c statement_timeout=5000") as conn:
        return one(conn, sql, params)


def test_a_login_without_grants_that_takes_every_advisory_lock_stops_no_enqueue_claim_schedule_or_reaper(
    db_dsn: str, db_conn: Conn, client_dsn: str, serve: Callable[..., ChildProcess]
) -> None:
    staged = stage(db_conn)
    with Squatter(db_dsn) as squatter:
        assert squatter.grants() == [], "the squatter has no grant at all"
        taken = squatter.take_v020_keys(queues=["default"], singletons=["beacon"], keys=["acct-1", "acct-2"],
                                        events=["acceptance-event"], exclusive=["acceptance"])  # fmt: skip
        assert taken == 10, "every key v0.2.0's source computes for these names"
        squatter.sweep_in_background()  # and every advisory lock anyone holds from now on
        squatter.queue_behind("conductor:enqueue:any")  # and an exclusive request in the queue
        proc = serve("--role", "worker,scheduler,maintenance")
        checks = Checks()

        checks.check("claim: the staged plain and keyed tasks finish", lambda: succeeded(db_conn, staged["tasks"]))
        checks.check("leadership: the scheduler, retention and the singleton lead",
                     lambda: {"scheduler", "retention", "singleton:beacon"} <= leaders(db_conn, proc.pid), timeout=10)  # fmt: skip
        checks.check("a schedule fires and its task finishes", lambda: one(
            db_conn, "select count(*) from conductor.tasks t join conductor.schedule_fires f on f.task_id = t.id"
                     " where f.schedule_name = 'every-second' and t.status = 'succeeded'") >= 2)  # fmt: skip
        checks.check("the reaper takes back the dead worker's lease and the task finishes", lambda: one(
            db_conn, "select status = 'succeeded' and recoveries = 1 from conductor.tasks where id = %s",
            [staged["ghost"]]))  # fmt: skip

        enqueued: list[int] = []

        def enqueue() -> bool:
            enqueued.append(client_call(client_dsn, "select conductor.enqueue('echo', '{\"late\": true}')"))
            return True

        checks.check("a client's enqueue returns", enqueue, timeout=6)
        if enqueued:
            checks.check("the client's task finishes", lambda: succeeded(db_conn, enqueued))
        checks.check("a client's emit_event returns", lambda: client_call(
            client_dsn, "select conductor.emit_event('acceptance-event', '{}')") is not None, timeout=6)  # fmt: skip

        holders = db_conn.execute("select key_space from conductor.foreign_lock_holders() where pid = %s",
                                  [squatter.pid]).fetchall()  # fmt: skip
        print(f"squatter: {squatter.taken} advisory locks taken; named by foreign_lock_holders() in "
              f"{sorted({h[0] for h in holders})}; went on: {checks.passed}")
        assert proc.alive(), proc.output()[-3000:]
    assert not checks.failed, "stopped by a login without grants:\n  " + "\n  ".join(checks.failed)


def test_a_login_without_grants_stops_no_leader_no_keyed_claim_and_no_exclusive(
    db_dsn: str, db_conn: Conn, client_dsn: str, serve: Callable[..., ChildProcess]
) -> None:
    """Leadership, concurrency keys and exclusive() alone: the squatter holds v0.2.0's keys
    for the leaders, the concurrency keys and an exclusive() name, and every 64-bit advisory
    lock it sees, but not the enqueue in-flight keys or the event keys. On v0.2.0 no
    schedule fired, the singleton never ran, the keyed tasks were never claimed and the
    client's exclusive() waited."""
    staged = stage(db_conn)
    with Squatter(db_dsn) as squatter:
        assert squatter.grants() == []
        assert squatter.take_v020_keys(singletons=["beacon"], keys=["acct-1", "acct-2"], exclusive=["acceptance"]) == 8
        squatter.conn.execute("select pg_advisory_unlock(hashtext('conductor:enqueue:any'), 0)")
        squatter.sweep_in_background(bigint_keys_only=True)
        proc = serve("--role", "worker,scheduler,maintenance")

        wait_until(lambda: succeeded(db_conn, staged["tasks"]), timeout=15, message="the keyed and plain tasks finish")
        wait_until(lambda: {"scheduler", "retention", "singleton:beacon"} <= leaders(db_conn, proc.pid), timeout=10,
                   message="the scheduler, retention and the singleton lead")  # fmt: skip
        wait_until(lambda: one(db_conn, "select count(*) from beacon_runs") == 1, timeout=10,
                   message="the singleton runs, once")  # fmt: skip
        wait_until(lambda: one(db_conn, "select count(*) from conductor.schedule_fires where schedule_name = 'every-second'")
                   >= 2, timeout=15, message="the schedule fires")  # fmt: skip
        with psycopg.connect(client_dsn, options="-c lock_timeout=2000") as conn:
            conn.execute("select conductor.exclusive('acceptance')")  # v0.2.0: lock timeout
            conn.commit()  # its row stays: the engine knows the name now
        keyed = db_conn.execute("select concurrency_key, count(*) from conductor.tasks where concurrency_key is not null"
                                " group by 1 order by 1").fetchall()  # fmt: skip
        assert keyed == [("acct-1", 2), ("acct-2", 1)]
        named = {r[0] for r in db_conn.execute("select key_space from conductor.foreign_lock_holders()"
                                               " where pid = %s", [squatter.pid]).fetchall()}  # fmt: skip
        # named for what the engine knows the names of (its keyed tasks all finished: no key is known now)
        assert named == {"leader (v0.2.0)", "exclusive() (v0.2.0)"}, named
        assert proc.alive(), proc.output()[-3000:]
