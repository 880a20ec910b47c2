"""The demo workload end to end: a real Worker against a fresh migrated database."""

from __future__ import annotations

import io

import psycopg

from pyconductor.dev.demo import run_demo


def test_demo_summary_adds_up(dsn: str) -> None:
    bar = io.StringIO()
    summary = run_demo(dsn, 300, seed=7, concurrency=8, rate=1000, progress=bar, timeout=60)

    assert summary.total == 300
    assert summary.succeeded + summary.failed == summary.total
    assert summary.other == 0
    assert summary.succeeded == summary.expected_succeeded
    assert summary.failed == summary.expected_failed > 0
    assert summary.retries == summary.expected_retries > 0
    assert summary.attempts == summary.total + summary.retries
    assert summary.tasks_retried > 0
    assert summary.consistent
    assert sum(sum(c.values()) for c in summary.by_kind.values()) == summary.total
    assert summary.throughput > 0
    assert 0 <= summary.pickup_p50_ms <= summary.pickup_p99_ms
    assert "300/300" in bar.getvalue()
    assert "counts add up: yes" in summary.render()


def test_demo_runs_twice_without_mixing(dsn: str) -> None:
    first = run_demo(dsn, 60, seed=1, progress=None, timeout=60)
    second = run_demo(dsn, 60, seed=1, progress=None, timeout=60)
    assert first.prefix != second.prefix
    assert first.consistent and second.consistent
    assert second.total == 60
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "select count(*) from conductor.tasks where queue like %s", [second.prefix + ".%"]
        ).fetchone()
    assert row is not None and row[0] == 60
