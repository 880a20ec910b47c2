"""Singletons: a function run on exactly one process of the fleet under the
leader lease 'singleton:' || name (pyconductor.singleton.SingletonRunner).

Two real processes run a SingletonRunner for the same name whose function
writes heartbeats; only one writes at a time; kill -9 of the holder hands the
lease to the other within seconds. In-process: stop() hands it over, a function
that returns releases it, a holder that cannot renew stops its function before
its lease runs out, a login without grants cannot keep a singleton from
running, and app.singleton / run_singletons."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from helpers import wait_until
from squatter import Squatter

from pyconductor import Conductor
from pyconductor.singleton import SingletonRunner

CHILD = r"""
import sys, threading
import psycopg
from pyconductor.singleton import SingletonRunner

dsn, name, who = sys.argv[1], sys.argv[2], sys.argv[3]

def beat(stop):
    with psycopg.connect(dsn, autocommit=True) as c:
        while not stop.is_set():
            c.execute("insert into beats (who, at) values (%s, clock_timestamp())", [who])
            stop.wait(0.05)

SingletonRunner(dsn, name, beat).start()  # failover: the default 2 s
threading.Event().wait()  # until killed
"""


def lock_holder(conn: psycopg.Connection[Any], name: str) -> list[tuple[Any, ...]]:
    return conn.execute("select name, pid, application_name from conductor.leaders(%s)",
                        [[f"singleton:{name}"]]).fetchall()  # fmt: skip


def beats_by(conn: psycopg.Connection[Any]) -> dict[str, int]:
    return dict(conn.execute("select who, count(*) from beats group by who").fetchall())


def test_one_process_runs_the_singleton_and_the_other_takes_over_when_it_is_killed(
    db_dsn: str, db_conn: psycopg.Connection[Any]
) -> None:
    db_conn.execute("create table beats (who text, at timestamptz)")
    procs = {who: subprocess.Popen([sys.executable, "-c", CHILD, db_dsn, "feed", who]) for who in ("p1", "p2")}
    try:
        wait_until(lambda: sum(beats_by(db_conn).values()) >= 20, timeout=30, message="heartbeats")
        counts = beats_by(db_conn)
        assert len(counts) == 1, f"both ran: {counts}"
        (holder,) = counts
        other = "p2" if holder == "p1" else "p1"
        [(name, _pid, application)] = lock_holder(db_conn, "feed")
        assert name == "singleton:feed"
        assert application.endswith(f"feed {procs[holder].pid}")  # the holder's own connection

        procs[holder].send_signal(signal.SIGKILL)
        procs[holder].wait(10)
        killed_at = db_conn.execute("select clock_timestamp()").fetchone()[0]
        wait_until(lambda: beats_by(db_conn).get(other), timeout=10, message="the other process takes over")
        first_other = db_conn.execute("select min(at) from beats where who = %s", [other]).fetchone()[0]
        last_holder = db_conn.execute("select max(at) from beats where who = %s", [holder]).fetchone()[0]
        assert (first_other - killed_at).total_seconds() < 5
        assert last_holder < first_other, "the two ran at the same time"
        [(_, _, application)] = lock_holder(db_conn, "feed")
        assert application.endswith(f"feed {procs[other].pid}")
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()


@pytest.fixture
def runners() -> Iterator[list[SingletonRunner]]:
    started: list[SingletonRunner] = []
    yield started
    for r in started:
        r.stop(10)


def test_stop_hands_the_lease_to_another_runner(db_dsn: str, runners: list[SingletonRunner]) -> None:
    running: dict[str, threading.Event] = {}

    def fn_of(label: str):  # type: ignore[no-untyped-def]
        def fn(stop: threading.Event) -> None:
            running[label] = stop
            stop.wait()

        return fn

    first = SingletonRunner(db_dsn, "handover", fn_of("first"), failover=0.2).start()
    runners.append(first)
    wait_until(lambda: first.is_leader, message="the first runner leads")
    second = SingletonRunner(db_dsn, "handover", fn_of("second"), failover=0.2).start()
    runners.append(second)
    assert not second.is_leader
    assert first.stop(10)
    assert running["first"].is_set()  # its function was told to stop
    assert not first.is_leader
    wait_until(lambda: second.is_leader, message="the second runner takes over")


def test_a_function_that_returns_releases_the_lease_and_runs_again(db_dsn: str, runners: list[SingletonRunner]) -> None:
    runs: list[float] = []

    def once(stop: threading.Event) -> None:
        runs.append(time.monotonic())

    runners.append(SingletonRunner(db_dsn, "again", once, failover=0.1).start())
    wait_until(lambda: len(runs) >= 3, message="fn runs again after it returned")


def test_app_singleton_registers_and_run_singletons_starts_them(db_dsn: str, db_conn: psycopg.Connection[Any]) -> None:
    app = Conductor(db_dsn)
    started = threading.Event()

    @app.singleton("reporter", failover=0.2)
    def reporter(stop: threading.Event) -> None:
        started.set()
        stop.wait()

    assert app.singletons == {"reporter": (reporter, 0.2)}
    runners = app.run_singletons()
    try:
        assert started.wait(10)
        assert [r.name for r in runners] == ["reporter"]
        assert runners[0].is_leader
        assert lock_holder(db_conn, "reporter")[0][0] == "singleton:reporter"
    finally:
        for r in runners:
            assert r.stop(10)
    assert lock_holder(db_conn, "reporter") == []


def test_a_holder_that_cannot_renew_stops_its_function_before_its_lease_runs_out(
    db_dsn: str, db_conn: psycopg.Connection[Any], runners: list[SingletonRunner]
) -> None:
    """While the lease row is locked (here by the test, as superuser: no application role
    can), every renewal answers false; the holder tells its function to stop half a lease
    after its last renewal, so it has stopped before anyone else could take the lease.
    Once renewals work again it leads again."""
    stops: list[Any] = []

    def fn(stop: threading.Event) -> None:
        stop.wait()
        stops.append(db_conn.execute("select clock_timestamp()").fetchone()[0])

    runner = SingletonRunner(db_dsn, "renewal", fn, failover=1.0).start()
    runners.append(runner)
    wait_until(lambda: runner.is_leader, message="the runner leads")
    with psycopg.connect(db_dsn) as blocker:  # a transaction that holds the lease row
        blocker.execute("select * from conductor.leader_leases where name = 'singleton:renewal' for update")
        wait_until(lambda: stops, timeout=5, message="the function is told to stop")
        expires = db_conn.execute("select expires_at from conductor.leader_leases where name = 'singleton:renewal'"
                                  ).fetchone()[0]  # fmt: skip
        assert stops[0] < expires, "it stopped while its lease still ran: no other process could have led yet"
        assert not runner.is_leader
        blocker.rollback()
    wait_until(lambda: runner.is_leader, timeout=5, message="it leads again once it can renew")


def test_a_login_without_grants_cannot_keep_a_singleton_from_running(
    db_dsn: str, db_conn: psycopg.Connection[Any], runners: list[SingletonRunner]
) -> None:
    """Issue 25: v0.2.0's singleton lock was pg_try_advisory_lock(hashtextextended(
    'conductor.lead:singleton:' || name, 0)): a login with no grant at all that held it kept
    the singleton from ever running. The squatter holds that key, and every advisory lock
    it sees; the singleton runs anyway."""
    started = threading.Event()
    with Squatter(db_dsn) as squatter:
        assert squatter.grants() == []
        assert squatter.take_v020_keys(singletons=["feed"]) >= 1
        squatter.sweep_in_background()
        runners.append(SingletonRunner(db_dsn, "feed", lambda stop: (started.set(), stop.wait()), failover=0.5).start())
        assert started.wait(10), "the singleton runs"
        [(name, _pid, _app)] = lock_holder(db_conn, "feed")
        assert name == "singleton:feed"
