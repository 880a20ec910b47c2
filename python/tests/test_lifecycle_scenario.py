"""The lifecycle contract (python/tests/lifecycle/scenario.json) run against the
Python and the Node worker, as real processes on a real PostgreSQL: tasks that
succeed, fail and retry, fail for good, one cancelled while running, a durable
run resumed after kill -9 without re-running its finished steps, and a SIGTERM
that hands a running task back and deregisters. Both must pass the same checks.

The Node case fails (never skips) when node or workers/node/node_modules is
missing: CI installs both (scripts/install-deps.sh).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lifecycle.runner import assert_scenario_kept, node_problem, run_scenario, starter


@pytest.mark.parametrize("language", ["python", "node"])
def test_the_lifecycle_scenario(language: str, db_dsn: str, tmp_path: Path) -> None:
    if language == "node" and (problem := node_problem()):
        pytest.fail(f"the Node worker cannot run: {problem}")
    with starter(language, db_dsn, tmp_path) as start:
        counts = run_scenario(start, db_dsn, label=language)

    assert_scenario_kept(counts)
