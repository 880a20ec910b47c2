"""The queue controls and Run now as an operator runs them: ``python -m
pyconductor pause|resume|rate-limit|schedules run`` against a real database,
checking what the database holds, the output and the exit codes."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import psycopg
import pytest

from helpers import REPO

ENV = {k: v for k, v in os.environ.items() if k not in ("CONDUCTOR_DSN", "DATABASE_URL")}
ENV["PYTHONPATH"] = str(REPO / "python")

Conn = psycopg.Connection[tuple[Any, ...]]


def cli(dsn: str | None, *args: str) -> subprocess.CompletedProcess[str]:
    extra = ["--dsn", dsn] if dsn else []
    return subprocess.run([sys.executable, "-m", "pyconductor", *args, *extra], capture_output=True, text=True,
                          env=ENV, cwd=REPO, timeout=60, check=False)  # fmt: skip


def one(conn: Conn, sql: str, params: Any = None) -> Any:
    row = conn.execute(sql, params).fetchone()
    return row[0] if row else None


def claimable(conn: Conn, queue: str) -> int:
    """How many tasks of ``queue`` a claim takes now (released again at once)."""
    rows = conn.execute("select attempt_id from conductor.claim('w-test', array[%s], 10, interval '1 minute')",
                        (queue,)).fetchall()  # fmt: skip
    for (attempt_id,) in rows:
        conn.execute("select conductor.release(%s)", (attempt_id,))
    return len(rows)


# -- pause and resume ------------------------------------------------------------------


def test_pause_and_resume_a_queue(db_dsn: str, db_conn: Conn) -> None:
    db_conn.execute("select conductor.enqueue('k', '{}', queue => 'emails')")
    out = cli(db_dsn, "pause", "emails")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("queue emails paused")
    assert one(db_conn, "select count(*) from conductor.paused_queues where queue = 'emails'") == 1
    assert claimable(db_conn, "emails") == 0, "a paused queue is not claimed"
    assert one(db_conn, "select status from conductor.tasks") == "queued"

    again = cli(db_dsn, "pause", "emails")
    assert again.returncode == 0 and again.stdout.strip() == "queue emails was paused already"

    out = cli(db_dsn, "resume", "emails")
    assert out.returncode == 0 and out.stdout.strip() == "queue emails resumed"
    assert one(db_conn, "select count(*) from conductor.paused_queues") == 0
    assert claimable(db_conn, "emails") == 1
    again = cli(db_dsn, "resume", "emails")
    assert again.returncode == 0 and again.stdout.strip() == "queue emails was not paused"


def test_pause_refuses_an_invalid_queue_name(db_dsn: str, db_conn: Conn) -> None:
    out = cli(db_dsn, "pause", "bad queue")
    assert out.returncode == 1
    assert out.stderr.startswith("pyconductor: error: ") and "[QC104]" in out.stderr
    assert one(db_conn, "select count(*) from conductor.paused_queues") == 0


def test_pause_without_a_database_says_so() -> None:
    out = subprocess.run([sys.executable, "-m", "pyconductor", "pause", "emails", "--dsn",
                          "postgresql://nobody:secret@127.0.0.1:1/none"], capture_output=True, text=True,
                         env=ENV, cwd=REPO, timeout=60, check=False)  # fmt: skip
    assert out.returncode == 1
    assert "cannot connect to the database" in out.stderr and "secret" not in out.stderr


# -- rate limits -----------------------------------------------------------------------


def limits(conn: Conn) -> list[tuple[Any, ...]]:
    return conn.execute("select scope, name, per_second, burst from conductor.rate_limits order by scope, name").fetchall()


def test_rate_limit_a_queue_and_a_kind_then_remove_them(db_dsn: str, db_conn: Conn) -> None:
    out = cli(db_dsn, "rate-limit", "--queue", "emails", "10")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "queue emails: at most 10 task starts per second across the fleet"
    out = cli(db_dsn, "rate-limit", "--kind", "send_sms", "0.5", "--burst", "3")
    assert out.returncode == 0, out.stderr
    assert "kind send_sms: at most 0.5 task starts per second" in out.stdout and "bursts of up to 3" in out.stdout
    assert limits(db_conn) == [("kind", "send_sms", 0.5, 3.0), ("queue", "emails", 10.0, 10.0)]

    out = cli(db_dsn, "rate-limit", "--queue", "emails", "off")
    assert out.returncode == 0 and out.stdout.strip() == "queue emails: no rate limit"
    assert limits(db_conn) == [("kind", "send_sms", 0.5, 3.0)]
    assert cli(db_dsn, "rate-limit", "--kind", "send_sms", "OFF").returncode == 0
    assert limits(db_conn) == []


def test_a_rate_limit_holds_at_claim(db_dsn: str, db_conn: Conn) -> None:
    for _ in range(5):
        db_conn.execute("select conductor.enqueue('k', '{}', queue => 'slow')")
    assert cli(db_dsn, "rate-limit", "--queue", "slow", "0.001", "--burst", "2").returncode == 0
    assert claimable(db_conn, "slow") == 2, "the burst, then nothing until a token comes"


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (("--queue", "q", "fast"), 2, "expected a number of task starts per second or 'off'"),
        (("--queue", "q", "--kind", "k", "1"), 2, "not allowed with argument"),
        (("1",), 2, "one of the arguments --queue --kind is required"),
        (("--queue", "q", "0"), 1, "[QC106]"),
        (("--queue", "q", "-3"), 1, "[QC106]"),
        (("--queue", "q", "off", "--burst", "2"), 1, "[QC106]"),
        (("--queue", "q", "1", "--burst", "0.5"), 1, "[QC106]"),
        (("--kind", " padded", "1"), 1, "[QC101]"),
        (("--queue", "bad queue", "1"), 1, "[QC104]"),
    ],
)
def test_rate_limit_refuses_what_makes_no_sense(db_dsn: str, db_conn: Conn, args: tuple[str, ...], code: int,
                                                says: str) -> None:  # fmt: skip
    out = cli(db_dsn, "rate-limit", *args)
    assert out.returncode == code, out.stderr
    assert says in out.stderr
    assert limits(db_conn) == []


# -- schedules run NAME ---------------------------------------------------------------


def test_schedules_run_fires_one_task_now_and_keeps_the_next_due_time(db_dsn: str, db_conn: Conn) -> None:
    db_conn.execute("select conductor.create_schedule(name => 'nightly', cron => '0 3 * * *', kind => 'report', "
                    "payload => '{\"full\": true}')")  # fmt: skip
    due = one(db_conn, "select next_due_at from conductor.schedules where name = 'nightly'")
    out = cli(db_dsn, "schedules", "run", "nightly")
    assert out.returncode == 0, out.stderr
    task_id = int(out.stdout.strip())
    assert f"schedule nightly fired now as task {task_id}" in out.stderr
    task = db_conn.execute("select kind, payload, status from conductor.tasks where id = %s", (task_id,)).fetchone()
    assert task == ("report", {"full": True}, "queued")
    assert db_conn.execute("select task_id, manual from conductor.schedule_fires where schedule_name = 'nightly'"
                           ).fetchall() == [(task_id, True)]  # fmt: skip
    assert one(db_conn, "select next_due_at from conductor.schedules where name = 'nightly'") == due

    second = cli(db_dsn, "schedules", "run", "nightly")
    assert second.returncode == 0 and int(second.stdout) != task_id, "each Run now is a task of its own"
    listing = cli(db_dsn, "schedules")
    assert listing.returncode == 0 and "nightly" in listing.stdout, "schedules alone still lists"


def test_schedules_run_an_unknown_schedule_or_a_wrong_action(db_dsn: str) -> None:
    out = cli(db_dsn, "schedules", "run", "nope")
    assert out.returncode == 1 and "[QC203]" in out.stderr
    out = cli(db_dsn, "schedules", "start", "nightly")
    assert out.returncode == 1 and "expected `schedules` or `schedules run NAME`" in out.stderr
