"""The scheduler against a real PostgreSQL: real processes, real seconds.

tick() is exactly-once by itself; these tests check that the Python side keeps
every due second firing while processes come and go: one leader at a time (a
lease, conductor.try_lead), a new one within seconds of kill -9, no gap and no
duplicate in the fires; a leader that cannot renew its lease stops ticking;
a login without grants cannot keep the scheduler from leading.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from helpers import REPO, wait_until
from squatter import Squatter

from pyconductor.scheduler import ScheduleSpec, Scheduler

ENV = {**os.environ, "PYTHONPATH": str(REPO / "python")}


def query(dsn: str, sql: str, params: Any = None) -> list[dict[str, Any]]:
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
        return conn.execute(sql, params).fetchall()


def scheduler_leader(dsn: str) -> dict[str, Any] | None:
    rows = query(dsn, "select * from conductor.leaders(array['scheduler'])")
    return rows[0] if rows else None


def fire_count(dsn: str, name: str) -> int:
    return int(query(dsn, "select count(*) as n from conductor.schedule_fires where schedule_name = %s", [name])[0]["n"])


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Any]:
    """Start ``pyconductor scheduler`` processes; kill any left at the end."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(dsn: str, *extra: str) -> subprocess.Popen[bytes]:
        log = open(tmp_path / f"scheduler-{len(procs)}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            [sys.executable, "-m", "pyconductor", "scheduler", "--dsn", dsn, "--tick-interval", "1", *extra],
            stdout=log, stderr=subprocess.STDOUT, env=ENV, cwd=REPO,
        )  # fmt: skip
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_every_second_fires_once_across_processes_and_a_leader_kill(db_dsn: str, spawn: Any) -> None:
    name = "every-second"
    created = query(db_dsn, "select * from conductor.create_schedule(name => %s, cron => '* * * * * *', kind => %s)",
                    [name, "tick.second"])[0]  # fmt: skip
    procs = {p.pid: p for p in (spawn(db_dsn) for _ in range(3))}

    def leader_proc() -> subprocess.Popen[bytes] | None:
        row = scheduler_leader(db_dsn)
        if not row or not (row["application_name"] or "").startswith("pyconductor-scheduler-"):
            return None
        return procs.get(int(row["application_name"].rsplit("-", 1)[1]))

    first = wait_until(leader_proc, timeout=15, message="one of the three schedulers leads")
    # about 20 s of per-second fires in all: ten under the first leader, ten after its kill
    wait_until(lambda: fire_count(db_dsn, name) >= 10, timeout=20, message="ten fires under the first leader")

    first.kill()  # kill -9: no chance to release the lock; its connection dies with it
    first.wait()
    killed_at = query(db_dsn, "select conductor.now() as t")[0]["t"]
    second = wait_until(lambda: (p := leader_proc()) is not None and p is not first and p, timeout=5,
                        message="another scheduler leads within 5 s of kill -9")  # fmt: skip
    assert second.poll() is None
    wait_until(
        lambda: query(db_dsn, "select count(*) as n from conductor.schedule_fires where due_at > %s", [killed_at])[0]["n"]
        >= 10,
        timeout=20, message="ten fires after the kill",
    )  # fmt: skip

    stopped_at = query(db_dsn, "select conductor.now() as t")[0]["t"]
    for proc in procs.values():
        if proc is not first:
            proc.send_signal(signal.SIGTERM)
    for proc in procs.values():
        if proc is not first:
            assert proc.wait(timeout=15) == 0, "SIGTERM stops a scheduler with exit code 0"

    fires = query(db_dsn, "select due_at, task_id from conductor.schedule_fires where schedule_name = %s order by due_at",
                  [name])  # fmt: skip
    dues = [f["due_at"] for f in fires]
    assert dues[0] == created["next_due_at"], "the first fire is the first due second after creation"
    gaps = [(a, b) for a, b in zip(dues, dues[1:]) if b - a != timedelta(seconds=1)]
    assert not gaps, f"every second from the first fire to the last fired once, no gap: {gaps}"
    assert dues[-1] >= stopped_at - timedelta(seconds=2), "none missed while a scheduler ran"
    assert dues[0] < killed_at < dues[-1]

    tasks = query(db_dsn, "select id from conductor.tasks where kind = 'tick.second' order by id")
    assert len(tasks) == len(fires), "exactly one task per fire"
    assert sorted(t["id"] for t in tasks) == sorted(f["task_id"] for f in fires)
    assert scheduler_leader(db_dsn) is None, "stopped schedulers hold no lock"


def test_one_of_two_leads_and_a_lost_connection_is_survived(db_dsn: str) -> None:
    query(db_dsn, "select conductor.create_schedule(name => 'hb', cron => '* * * * * *', kind => 'hb')")
    a = Scheduler(db_dsn, tick_interval=0.5).start()
    b = Scheduler(db_dsn, tick_interval=0.5).start()
    try:
        wait_until(lambda: a.is_leader or b.is_leader, timeout=5)
        assert not (a.is_leader and b.is_leader), "one leader at a time"
        leader, other = (a, b) if a.is_leader else (b, a)
        old_pid = scheduler_leader(db_dsn)["pid"]  # type: ignore[index]
        query(db_dsn, "select pg_terminate_backend(%s)", [old_pid])
        wait_until(lambda: (row := scheduler_leader(db_dsn)) is not None and row["pid"] != old_pid, timeout=5,
                   message="a scheduler leads again on a new connection")  # fmt: skip
        before = fire_count(db_dsn, "hb")
        wait_until(lambda: fire_count(db_dsn, "hb") >= before + 2, timeout=5, message="fires go on")
        assert leader.is_leader or other.is_leader
    finally:
        a.stop()
        b.stop()
    dues = [r["due_at"] for r in query(db_dsn, "select due_at from conductor.schedule_fires order by due_at")]
    assert all(b - a == timedelta(seconds=1) for a, b in zip(dues, dues[1:])), "no gap across the lost connection"


def test_a_leader_that_cannot_renew_its_lease_stops_ticking_and_another_takes_over(db_dsn: str) -> None:
    """The leader's lease row is locked (by the test, as superuser: no application role can),
    so its renewals answer false: once its lease has run out it no longer counts itself leader;
    when the row is free again the lease, expired, goes to whichever scheduler tries first."""
    query(db_dsn, "select conductor.create_schedule(name => 'hb', cron => '* * * * * *', kind => 'hb')")
    a = Scheduler(db_dsn, tick_interval=0.3).start()
    b = Scheduler(db_dsn, tick_interval=0.3).start()
    try:
        leader = wait_until(lambda: a if a.is_leader else b if b.is_leader else None, timeout=5)
        row = scheduler_leader(db_dsn)
        assert row is not None and row["holder"] == leader.lease.holder
        assert row["expires_at"] - row["renewed_at"] == timedelta(seconds=leader.lease.ttl)
        with psycopg.connect(db_dsn) as blocker:
            blocker.execute("select * from conductor.leader_leases where name = 'scheduler' for update")
            wait_until(lambda: not leader.is_leader, timeout=leader.lease.ttl + 2,
                       message="the leader stops counting itself leader when its lease runs out")  # fmt: skip
            assert not (a.is_leader or b.is_leader)
        wait_until(lambda: a.is_leader or b.is_leader, timeout=5, message="one leads again")
        assert not (a.is_leader and b.is_leader), "one leader at a time"
    finally:
        a.stop()
        b.stop()
    assert scheduler_leader(db_dsn) is None, "a clean stop releases the lease"


def test_a_login_without_grants_cannot_keep_the_scheduler_from_leading(db_dsn: str) -> None:
    """Issue 25: v0.2.0's scheduler led while it held pg_advisory_lock(hashtextextended(
    'conductor.lead:scheduler', 0)); a login with no grant at all that took it first meant no
    scheduler ever led, and no schedule fired. The squatter holds that key (and every advisory
    lock it sees); a scheduler leads and fires anyway."""
    query(db_dsn, "select conductor.create_schedule(name => 'squatted', cron => '* * * * * *', kind => 'sq')")
    with Squatter(db_dsn) as squatter:
        assert squatter.grants() == []
        assert squatter.take_v020_keys() == 4  # the leaders' keys, and the enqueue key:
        # a fire enqueues, and the enqueue in-flight keys are another part of the fix (functions/notify)
        squatter.conn.execute("select pg_advisory_unlock(hashtext('conductor:enqueue:any'), 0)")
        squatter.sweep_in_background(bigint_keys_only=True)
        s = Scheduler(db_dsn, tick_interval=0.3).start()
        try:
            wait_until(lambda: s.is_leader, timeout=5, message="the scheduler leads")
            wait_until(lambda: fire_count(db_dsn, "squatted") >= 2, timeout=10, message="the schedule fires")
        finally:
            s.stop()


def test_without_the_lock_several_schedulers_still_fire_once(db_dsn: str) -> None:
    query(db_dsn, "select conductor.create_schedule(name => 'nl', cron => '* * * * * *', kind => 'nl')")
    schedulers = [Scheduler(db_dsn, tick_interval=0.5, use_leader_lock=False).start() for _ in range(3)]
    try:
        wait_until(lambda: fire_count(db_dsn, "nl") >= 3, timeout=10)
    finally:
        for s in schedulers:
            s.stop()
    assert not any(s.is_leader for s in schedulers)
    assert scheduler_leader(db_dsn) is None
    n = query(db_dsn, "select count(*) as fires, count(distinct task_id) as tasks, "
                      "(select count(*) from conductor.tasks where kind = 'nl') as enqueued "
                      "from conductor.schedule_fires")[0]  # fmt: skip
    assert n["fires"] == n["tasks"] == n["enqueued"]


def test_sync_schedules_declares_and_keeps_place(db_dsn: str) -> None:
    s = Scheduler(db_dsn)
    spec = ScheduleSpec(name="nightly", cron="0 3 * * *", kind="report", payload={"a": 1}, timezone="Europe/Berlin")
    first = s.sync_schedules([spec])[0]
    again = s.sync_schedules([{"name": "nightly", "cron": "0 3 * * *", "kind": "report", "payload": {"a": 1},
                               "timezone": "Europe/Berlin"}])[0]  # fmt: skip
    assert again["next_due_at"] == first["next_due_at"]
    assert again["updated_at"] == first["updated_at"], "an identical declaration changes nothing"
    from pyconductor.errors import InvalidCron

    with pytest.raises(InvalidCron):
        s.sync_schedules([ScheduleSpec(name="bad", cron="61 * * * *", kind="k")])


def test_a_declared_schedule_carries_expires_in_and_rate_key(db_dsn: str) -> None:
    s = Scheduler(db_dsn)
    spec = ScheduleSpec(name="digest", cron="0 * * * *", kind="digest", expires_in=timedelta(minutes=10),
                        rate_key="tenant-1")  # fmt: skip
    (row,) = s.sync_schedules([spec])
    assert (row["expires_in"], row["rate_key"]) == (timedelta(minutes=10), "tenant-1")
    (again,) = s.sync_schedules([ScheduleSpec(name="digest", cron="0 * * * *", kind="digest", expires_in=600,
                                              rate_key="tenant-1")])  # fmt: skip
    assert again["updated_at"] == row["updated_at"], "600 seconds is the same declaration"
    (fired,) = query(db_dsn, "select conductor.fire_schedule('digest') as id")
    task = query(db_dsn, "select expires_in, rate_key from conductor.tasks where id = %s", (fired["id"],))
    assert task == [{"expires_in": timedelta(minutes=10), "rate_key": "tenant-1"}]


def test_sync_schedules_keeps_an_operators_schedule(db_dsn: str) -> None:
    # An operator (this superuser counts as conductor_admin) made 'ops-owned'; a worker's
    # login declares it differently in code: the operator's version stays, the rest syncs.
    query(db_dsn, "select conductor.create_schedule(name => 'ops-owned', cron => '0 4 * * *', kind => 'k')")
    role = f"t_sync_worker_{os.getpid()}"
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(f"create role {role} login in role conductor_worker")
    try:
        worker_dsn = psycopg.conninfo.make_conninfo(db_dsn, user=role)
        rows = Scheduler(worker_dsn).sync_schedules([
            ScheduleSpec(name="ops-owned", cron="* * * * *", kind="k"),
            ScheduleSpec(name="code-owned", cron="0 5 * * *", kind="k"),
        ])  # fmt: skip
    finally:
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            conn.execute(f"drop role {role}")
    assert [r["name"] for r in rows] == ["code-owned"]
    kept = query(db_dsn, "select cron, declared_by from conductor.schedules where name = 'ops-owned'")
    assert kept == [{"cron": "0 4 * * *", "declared_by": "admin"}]


def test_sync_schedules_keeps_another_logins_schedule(db_dsn: str, caplog: pytest.LogCaptureFixture) -> None:
    # Two applications, two worker logins: billing declares 'billing-close' in code; the
    # other login declares the same name differently. Its sync logs the refusal (QC208)
    # and keeps billing's version (v0.2.0 replaced and disabled it), and writes the rest.
    billing, other = f"t_sync_billing_{os.getpid()}", f"t_sync_other_{os.getpid()}"
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        for role in (billing, other):
            conn.execute(f"create role {role} login in role conductor_worker")
    try:
        Scheduler(psycopg.conninfo.make_conninfo(db_dsn, user=billing)).sync_schedules([
            ScheduleSpec(name="billing-close", cron="0 2 * * *", kind="billing.close", queue="billing"),
        ])  # fmt: skip
        with caplog.at_level("WARNING", logger="pyconductor"):
            rows = Scheduler(psycopg.conninfo.make_conninfo(db_dsn, user=other)).sync_schedules([
                ScheduleSpec(name="billing-close", cron="* * * * *", kind="other.kind", enabled=False),
                ScheduleSpec(name="other-own", cron="0 5 * * *", kind="other.kind"),
            ])  # fmt: skip
        kept = query(db_dsn, "select name, cron, kind, enabled, to_jsonb(s) ->> 'owner' as owner "
                             "from conductor.schedules s order by name")
    finally:
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            for role in (billing, other):
                conn.execute(f"drop role {role}")
    assert [r["name"] for r in rows] == ["other-own"]
    assert kept == [
        {"name": "billing-close", "cron": "0 2 * * *", "kind": "billing.close", "enabled": True, "owner": billing},
        {"name": "other-own", "cron": "0 5 * * *", "kind": "other.kind", "enabled": True, "owner": other},
    ]
    assert any(r.levelname == "WARNING" and "billing-close" in r.getMessage() for r in caplog.records), caplog.text


def test_schedules_cli_lists_a_schedule(db_dsn: str) -> None:
    query(db_dsn, "select conductor.create_schedule(name => 'cli-listed', cron => '*/5 * * * *', kind => 'cli.kind', "
                  "queue => 'cliq', timezone => 'America/New_York')")  # fmt: skip
    cmd = [sys.executable, "-m", "pyconductor", "schedules", "--dsn", db_dsn]
    out = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=REPO, timeout=30, check=True).stdout
    line = next(line for line in out.splitlines() if line.startswith("cli-listed"))
    for word in ("*/5 * * * *", "America/New_York", "cli.kind", "cliq", "True", "admin"):
        assert word in line
    query(db_dsn, "update conductor.schedules set last_error = 'QC101: invalid kind " + "x" * 200 + "'"
                  " where name = 'cli-listed' returning name")  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=REPO, timeout=30, check=True).stdout
    line = next(line for line in out.splitlines() if line.startswith("cli-listed"))
    assert "QC101: invalid kind" in line and "x" * 100 not in line, "the error is shown, cut"
    rows = json.loads(subprocess.run([*cmd, "--json"], capture_output=True, text=True, env=ENV, cwd=REPO,
                                     timeout=30, check=True).stdout)  # fmt: skip
    assert [(r["name"], r["enabled"], r["last_due_at"]) for r in rows] == [("cli-listed", True, None)]
    assert rows[0]["next_due_at"]
