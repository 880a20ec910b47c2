"""Singletons: a function run on exactly one process of the fleet under the
leader lock 'singleton:' || name (pyconductor.singleton.SingletonRunner).

Two real processes run a SingletonRunner for the same name whose function
writes heartbeats; only one writes at a time; kill -9 of the holder hands the
lock to the other within seconds. In-process: stop() hands it over, a function
that returns releases it, and app.singleton / run_singletons."""

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


def test_stop_hands_the_lock_to_another_runner(db_dsn: str, runners: list[SingletonRunner]) -> None:
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


def test_a_function_that_returns_releases_the_lock_and_runs_again(db_dsn: str, runners: list[SingletonRunner]) -> None:
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
