"""The lifecycle contract (python/tests/lifecycle/scenario.json) run against the
Python and the Node worker, as real processes on a real PostgreSQL: tasks that
succeed, fail and retry, fail for good, one cancelled while running, a durable
run resumed after kill -9 without re-running its finished steps, and a SIGTERM
that hands a running task back and deregisters. Both must pass the same checks.
And a time limit reads the same whichever worker reports it (issue 28).

The Node case fails (never skips) when node or workers/node/node_modules is
missing: CI installs both (scripts/install-deps.sh).
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from helpers import wait_until
from lifecycle.runner import SCENARIO, assert_scenario_kept, node_problem, run_scenario, starter
from psycopg.types.json import Jsonb


@pytest.mark.parametrize("language", ["python", "node"])
def test_the_lifecycle_scenario(language: str, db_dsn: str, tmp_path: Path) -> None:
    if language == "node" and (problem := node_problem()):
        pytest.fail(f"the Node worker cannot run: {problem}")
    with starter(language, db_dsn, tmp_path) as start:
        counts = run_scenario(start, db_dsn, label=language)

    assert_scenario_kept(counts)


@pytest.mark.parametrize("language", ["python", "node"])
def test_a_30_day_time_limit_reads_the_same_whichever_worker_reports_it(
    language: str, db_dsn: str, tmp_path: Path
) -> None:
    """A limit of 2,592,000 s (30 days), where C's %g and a plain number part
    (2.592e+06, 2592000): the running attempt is moved 30 days back, the next
    heartbeat answers timed_out, and the worker reports the reason
    (fail(timed_out => true)); the database writes the text, so both workers'
    attempts read 'timed out after 2.592e+06 s' and are recorded as timed out. The
    lease (60 s) outlives the test: reap() does not write it for them."""
    if language == "node" and (problem := node_problem()):
        pytest.fail(f"the Node worker cannot run: {problem}")
    with psycopg.connect(db_dsn, autocommit=True) as conn, starter(language, db_dsn, tmp_path, "--lease", "60") as start:
        conn.execute(SCENARIO["side_table"])
        row = conn.execute("select conductor.enqueue(kind => 'lifecycle.wait', payload => %s, timeout => '30 days')",
                           (Jsonb({"seconds": 60}),)).fetchone()  # fmt: skip
        assert row is not None
        task_id = row[0]

        def status() -> object:
            found = conn.execute("select status::text from conductor.tasks where id = %s", (task_id,)).fetchone()
            return None if found is None else found[0]

        start(f"{language}-30-days")
        wait_until(lambda: status() == "running", timeout=30)
        conn.execute("update conductor.attempts set claimed_at = claimed_at - interval '30 days' where task_id = %s",
                     (task_id,))  # fmt: skip
        wait_until(lambda: status() == "failed", timeout=30)
        reported = conn.execute(
            "select t.error, a.error, a.timed_out from conductor.tasks t join conductor.attempts a on a.id = t.attempt_id"
            " where t.id = %s", (task_id,)).fetchone()  # fmt: skip
    assert reported == ("timed out after 2.592e+06 s", "timed out after 2.592e+06 s", True)
