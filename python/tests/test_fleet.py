"""A rolling deploy: two releases of one app on one queue (issue 15).

Release 1 has kind fleet.a; release 2 adds fleet.b. v0.1.0's worker claimed
every kind of its queues, so release 1's workers killed release 2's new tasks
('dead', unknown kind) whatever their max_attempts. Now a worker claims only
the kinds it has handlers for: B waits for a worker that serves it, and is
dead-lettered only when no live worker has served it for unknown_kind_after
(a typo still dies, visibly, later).

Real worker processes (``python -m pyconductor worker``); the dead-lettering is
shown with the fake clock on the connection that calls reap().

A registration is its login's (issue 25): v0.2.0 let any worker login replace a
running worker's row (``register_worker('billing-w', kinds => '{nothing}')``), and
the sweep then dead-lettered the billing application's backlog; now the call is
refused (QC208) and the backlog is worked off.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import wait_until
from logins import worker_logins
from processes import Spawn, spawner

from pyconductor import Conductor, NotOwner
from pyconductor.errors import mapped_errors

Conn = psycopg.Connection[Any]  # rows as tuples; Any so the tests index them freely
OPTIONS = ("--queues", "fleet", "--heartbeat", "0.5", "--reap", "0.5", "--poll", "5", "--concurrency", "8")


@pytest.fixture
def releases(db_dsn: str, tmp_path: Path) -> Iterator[tuple[Spawn, Spawn]]:
    with ExitStack() as stack:
        v1 = stack.enter_context(spawner(db_dsn, tmp_path, "apps.fleet_v1:app", *OPTIONS))
        v2 = stack.enter_context(spawner(db_dsn, tmp_path, "apps.fleet_v2:app", *OPTIONS))
        yield v1, v2


def counts(conn: Conn, kind: str) -> dict[str, int]:
    return dict(conn.execute("select status::text, count(*) from conductor.tasks where kind = %s group by status",
                             (kind,)).fetchall())  # fmt: skip


def reap_at(conn: Conn, at: datetime) -> int:
    conn.execute("select set_config('conductor.fake_now', %s, false)", (at.isoformat(),))
    try:
        return int(conn.execute("select conductor.reap()").fetchone()[0])
    finally:
        conn.execute("reset conductor.fake_now")


def test_a_rolling_deploy_kills_nothing_and_an_unserved_kind_dies_only_after_unknown_kind_after(
    db_dsn: str, db_conn: Conn, releases: tuple[Spawn, Spawn]
) -> None:
    v1, v2 = releases
    old = v1(name="old")
    new = v2(name="new")
    wait_until(lambda: db_conn.execute("select id, kinds from conductor.workers order by id").fetchall()
               == [("new", ["fleet.a", "fleet.b"]), ("old", ["fleet.a"])], timeout=30)  # fmt: skip

    # 1. a drain of A and B while both releases run
    with Conductor(db_dsn) as app:
        ids = app.enqueue_many([("fleet.a" if n % 2 else "fleet.b", {"n": n}) for n in range(400)])
        wait_until(lambda: db_conn.execute(
            "select count(*) = 400 from conductor.tasks where status = 'succeeded' and id = any(%s)",
            (ids,)).fetchone()[0], timeout=60, interval=0.1,
            message=lambda: f"A {counts(db_conn, 'fleet.a')}, B {counts(db_conn, 'fleet.b')}")  # fmt: skip
    assert db_conn.execute("select count(*) from conductor.attempts where outcome is distinct from 'succeeded'"
                           ).fetchone() == (0,), "no attempt failed, was lost or dead"  # fmt: skip
    by_worker = dict(db_conn.execute(
        "select t.kind || ' on ' || a.worker_id, count(*) from conductor.attempts a"
        "  join conductor.tasks t on t.id = a.task_id group by 1").fetchall())  # fmt: skip
    assert by_worker.get("fleet.b on new") == 200 and "fleet.b on old" not in by_worker, by_worker

    # 2. the newer release stops: B waits, the older worker still runs A
    new.signal(signal.SIGTERM)
    assert new.wait(30) == 0, new.output()
    with Conductor(db_dsn) as app:
        waiting = app.enqueue_many([("fleet.b", {"n": n}) for n in range(20)])
        probe = app.enqueue("fleet.a", {})
        wait_until(lambda: app.get(probe).status == "succeeded", timeout=30, message="the older worker claims A")
    assert counts(db_conn, "fleet.b") == {"succeeded": 200, "queued": 20}
    assert db_conn.execute("select count(*) from conductor.attempts where task_id = any(%s)",
                           (waiting,)).fetchone() == (0,), "nobody claimed B"  # fmt: skip

    # 3. with the clock moved on: dead-lettered after unknown_kind_after, not before
    after, served_until, due_since = db_conn.execute(
        "select s.unknown_kind_after, (select last_served_at from conductor.served_kinds where kind = 'fleet.b'),"
        "       (select max(run_at) from conductor.tasks where id = any(%s))"
        "  from conductor.settings s", (waiting,)).fetchone()  # fmt: skip
    assert isinstance(after, timedelta) and served_until is not None, "the deregistration recorded when B was served"
    base = max(served_until, due_since)
    db_conn.execute("update conductor.settings set fake_clock = true")
    reap_at(db_conn, base + after - timedelta(seconds=1))
    assert counts(db_conn, "fleet.b") == {"succeeded": 200, "queued": 20}, "not before unknown_kind_after"
    # the sweep runs once a minute at most: the throttle is not what this test is about
    db_conn.execute("update conductor.maintenance set unknown_kinds_swept_at = null")
    # the older worker must count as live at the later time: seen within unknown_kind_after of it
    wait_until(lambda: db_conn.execute("select last_seen_at > %s from conductor.workers where id = 'old'",
                                       (base + timedelta(seconds=1),)).fetchone() == (True,))  # fmt: skip
    assert reap_at(db_conn, base + after + timedelta(seconds=1)) >= 20
    assert counts(db_conn, "fleet.b") == {"succeeded": 200, "dead": 20}
    (error,) = {row[0] for row in db_conn.execute("select error from conductor.tasks where id = any(%s)", (waiting,))}
    assert "'fleet.b'" in error and f"{after.total_seconds():g} s" in error, error
    assert counts(db_conn, "fleet.a") == {"succeeded": 201}, "A is served: none of it dies"
    assert old.alive()



def test_another_worker_login_cannot_replace_a_running_workers_registration(db_dsn: str, db_conn: Conn,
                                                                             tmp_path: Path) -> None:  # fmt: skip
    # a sweep as eager as it goes (1 s), so the attack's effect, if it lands, shows at once
    db_conn.execute("update conductor.settings set unknown_kind_after = interval '1 second'")
    with worker_logins(db_dsn, "billing", "other") as [(billing, billing_dsn), (_, other_dsn)], \
            spawner(billing_dsn, tmp_path, "apps.ownership_app:app", "--queues", "own", "--concurrency", "1",
                    "--heartbeat", "0.2", "--reap", "0.3", "--poll", "5") as spawn:  # fmt: skip
        billing_w = spawn(name="billing-w")
        wait_until(lambda: db_conn.execute("select kinds from conductor.workers where id = 'billing-w'").fetchone()
                   == (["own.busy", "own.work"],), timeout=30, message=billing_w.output)  # fmt: skip
        # a backlog behind one long task: the worker is alive (it heartbeats) and busy
        with Conductor(db_dsn) as app:
            busy = app.enqueue("own.busy", {"s": 5})
            wait_until(lambda: app.get(busy).status == "running", timeout=30, message=billing_w.output)
            backlog = app.enqueue_many([("own.work", {"n": n}) for n in range(5)])
            refused = []
            with psycopg.connect(other_dsn, autocommit=True) as attacker:
                try:
                    with mapped_errors():
                        attacker.execute("select conductor.register_worker('billing-w', kinds => '{nothing}')")
                except NotOwner as exc:
                    refused.append(str(exc))
                # the backlog has been due for longer than unknown_kind_after: a sweep now
                # dead-letters it if the attack replaced the kinds the worker serves
                wait_until(lambda: db_conn.execute(
                    "select min(run_at) < conductor.now() - interval '1.5 seconds' from conductor.tasks"
                    " where id = any(%s)", (backlog,)).fetchone()[0], timeout=10)  # fmt: skip
                db_conn.execute("update conductor.maintenance set unknown_kinds_swept_at = null")
                db_conn.execute("select conductor.reap()")
                wait_until(lambda: all(app.get(i).finished for i in [busy, *backlog]), timeout=30,
                           message=lambda: str([app.get(i).status for i in [busy, *backlog]]))  # fmt: skip
                assert [app.get(i).status for i in [busy, *backlog]] == ["succeeded"] * 6, "nothing was dead-lettered"
                try:
                    with mapped_errors():
                        attacker.execute("select conductor.deregister_worker('billing-w')")
                except NotOwner as exc:
                    refused.append(str(exc))
            assert len(refused) == 2 and all(f"declared by login '{billing}'" in r for r in refused), refused
        assert db_conn.execute("select owner, kinds from conductor.workers where id = 'billing-w'").fetchone() == (
            billing, ["own.busy", "own.work"])  # fmt: skip
        assert billing_w.alive()
