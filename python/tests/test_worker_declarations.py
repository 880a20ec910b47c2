"""What an app declares in code reaches the database when its worker starts:
schedules (``@app.schedule``) and each kind's retry policy (``@app.task(max_attempts=...)``),
and the worker's roles (tasks, scheduler) switch on and off separately.

A declaration another login owns (issue 25: a kind's policy, a worker id, QC208) is
logged and kept as the database has it, and the worker runs; a retention under
``conductor.settings.min_retention`` from a worker login stops the start, as any
invalid declaration does."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from helpers import wait_until
from logins import worker_logins

from pyconductor import Conductor, InvalidArgument, InvalidCron, NotOwner, Worker

Conn = psycopg.Connection[tuple[object, ...]]


@pytest.fixture
def app(db_dsn: str) -> Iterator[Conductor]:
    with Conductor(db_dsn, pool_max=2) as app:
        yield app


def fast_worker(app: Conductor, **options: Any) -> Worker:
    defaults: dict[str, Any] = {
        "heartbeat_interval": 0.2, "poll_interval": 0.2, "reap_interval": 0.5, "shutdown_grace": 5, "tick_interval": 0.2,
    }  # fmt: skip
    return Worker(app, **{**defaults, **options})


def test_declared_schedule_is_created_and_fires(app: Conductor, db_conn: Conn) -> None:
    @app.schedule("* * * * * *", name="every-second", queue="ticks", payload={"n": 1})
    def heartbeat_job(payload: dict[str, int]) -> int:
        return payload["n"]

    with fast_worker(app) as worker:
        assert worker.roles == ["worker", "scheduler"]
        row = db_conn.execute(
            "select cron, kind, queue, payload, enabled from conductor.schedules where name = 'every-second'"
        ).fetchone()
        assert row == ("* * * * * *", heartbeat_job.kind, "ticks", {"n": 1}, True)
        wait_until(lambda: db_conn.execute(
            "select count(*) from conductor.tasks where kind = %s and status = 'succeeded'", (heartbeat_job.kind,)
        ).fetchone()[0] >= 2, timeout=10)  # fmt: skip
    fires, tasks = db_conn.execute(
        "select count(*), count(distinct task_id) from conductor.schedule_fires where schedule_name = 'every-second'"
    ).fetchone()
    assert fires == tasks, "one task per fire"


def test_an_operators_disable_survives_a_worker_restart(app: Conductor, db_conn: Conn) -> None:
    app.schedule("0 3 * * *", "nightly", name="nightly")
    with fast_worker(app):
        pass
    db_conn.execute("select conductor.enable_schedule('nightly', false)")
    with fast_worker(app):
        pass
    assert db_conn.execute("select enabled from conductor.schedules where name = 'nightly'").fetchone() == (False,)


def test_an_invalid_declared_cron_line_stops_the_start(app: Conductor) -> None:
    app.schedule("61 * * * *", "broken", name="broken")
    with pytest.raises(InvalidCron, match="minute field '61'"):
        fast_worker(app).start()


def test_a_kinds_policy_applies_to_tasks_enqueued_from_sql(app: Conductor, db_conn: Conn) -> None:
    @app.task("flaky", max_attempts=4, backoff_base=2)
    def flaky(payload: dict[str, Any]) -> None:
        raise RuntimeError("always")

    with fast_worker(app, run_scheduler=False):
        assert db_conn.execute(
            "select max_attempts, backoff_base from conductor.kinds where kind = 'flaky'"
        ).fetchone()[0] == 4
        task_id = db_conn.execute("select conductor.enqueue('flaky')").fetchone()[0]
        assert db_conn.execute("select max_attempts from conductor.tasks where id = %s", (task_id,)).fetchone() == (4,)


def test_scheduler_only_worker_claims_nothing(app: Conductor, db_conn: Conn) -> None:
    @app.schedule("* * * * * *", name="only-ticks")
    def ticked(payload: dict[str, Any]) -> None:
        return None

    with fast_worker(app, process_tasks=False) as worker:
        wait_until(lambda: db_conn.execute(
            "select roles from conductor.workers where id = %s", (worker.worker_id,)
        ).fetchone() == (["scheduler"],))  # fmt: skip
        wait_until(lambda: db_conn.execute(
            "select count(*) from conductor.tasks where kind = %s", (ticked.kind,)
        ).fetchone()[0] >= 2, timeout=10)  # fmt: skip
        assert db_conn.execute(
            "select count(*) from conductor.tasks where kind = %s and status <> 'queued'", (ticked.kind,)
        ).fetchone() == (0,), "the scheduler enqueued them; nothing claimed them"


def test_a_worker_needs_a_role(app: Conductor) -> None:
    with pytest.raises(ValueError, match="nothing to do"):
        Worker(app, process_tasks=False, run_scheduler=False)


def test_a_kind_another_login_declared_is_logged_kept_and_the_worker_runs(
    db_dsn: str, db_conn: Conn, caplog: pytest.LogCaptureFixture
) -> None:
    # v0.2.0: the second login's worker replaced the billing application's policy at start
    with worker_logins(db_dsn, "billing", "other") as [(billing, billing_dsn), (other, other_dsn)]:
        with psycopg.connect(billing_dsn, autocommit=True) as conn:
            conn.execute("select conductor.configure_kind('invoice', queue => 'billing', max_attempts => 2)")
        with Conductor(other_dsn, pool_max=2) as app:
            @app.task("invoice", queue="elsewhere", max_attempts=9)
            def invoice(payload: dict[str, Any]) -> str:
                return "theirs"

            @app.task("receipt", max_attempts=3)
            def receipt(payload: dict[str, Any]) -> str:
                return "mine"

            caplog.set_level(logging.WARNING, logger="pyconductor")
            with fast_worker(app, run_scheduler=False):
                task_id = receipt.enqueue({})
                wait_until(lambda: app.get(task_id).status == "succeeded", timeout=20)
        assert db_conn.execute("select kind, queue, max_attempts, owner from conductor.kinds order by kind").fetchall() == [
            ("invoice", "billing", 2, billing), ("receipt", None, 3, other)]  # fmt: skip
    warning = next(r for r in caplog.records if "kind invoice" in r.getMessage())
    assert warning.levelno == logging.WARNING
    assert "keeping the policy stored in the database" in warning.getMessage()
    assert f"declared by login '{billing}'" in warning.getMessage()


def test_a_worker_id_another_login_registered_refuses_to_start(db_dsn: str, db_conn: Conn) -> None:
    # v0.2.0: the second login replaced the registration (and its kinds, which the sweep reads);
    # now every heartbeat and report under that id would be refused (QC208), so it does not start
    with worker_logins(db_dsn, "first", "second") as [(first, first_dsn), (_, second_dsn)]:
        with psycopg.connect(first_dsn, autocommit=True) as conn:
            conn.execute("select conductor.register_worker('shared-w', host => 'theirs', kinds => '{theirs}')")
        with Conductor(second_dsn, pool_max=2) as app:
            @app.task("mine")
            def mine(payload: dict[str, Any]) -> str:
                return "ran"

            with pytest.raises(NotOwner, match=f"worker 'shared-w' was declared by login '{first}'"):
                fast_worker(app, run_scheduler=False, worker_id="shared-w").start()
        assert db_conn.execute("select host, kinds, owner from conductor.workers where id = 'shared-w'").fetchone() == (
            "theirs", ["theirs"], first), "the refused start left the registration as it was"  # fmt: skip


def test_a_retention_under_the_floor_stops_a_worker_logins_start(db_dsn: str, db_conn: Conn) -> None:
    with worker_logins(db_dsn, "short") as [(_, short_dsn)], Conductor(short_dsn, pool_max=2) as app:
        @app.task("brief", retain_succeeded=timedelta(hours=1))
        def brief(payload: dict[str, Any]) -> None:
            return None

        with pytest.raises(InvalidArgument, match="min_retention"):
            fast_worker(app, run_scheduler=False).start()
    assert db_conn.execute("select count(*) from conductor.kinds where kind = 'brief'").fetchone() == (0,)
