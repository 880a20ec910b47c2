"""``manage.py conductor_migrate``, ``conductor_health`` and ``conductor_prune`` as
real processes, on the database of the test project's settings."""

from __future__ import annotations

import psycopg
import pytest

from helpers import django_missing
from pyconductor import Conductor
from pyconductor.schema import SCHEMA_VERSION

if (missing := django_missing()) is not None:
    pytest.skip(missing, allow_module_level=True)

from django_project.harness import manage  # noqa: E402 - after the skip


def one(dsn: str, query: str, params: object = ()) -> object:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(query, params).fetchone()  # type: ignore[arg-type]
        return row[0] if row else None


# -- conductor_migrate -------------------------------------------------------------------


def test_migrate_deploys_the_schema_on_an_empty_database_then_has_nothing_to_do(empty_dsn: str) -> None:
    check = manage(empty_dsn, "conductor_migrate", "--check")
    assert check.returncode == 1
    assert "pending" in check.stdout and "run manage.py conductor_migrate" in check.stderr

    first = manage(empty_dsn, "conductor_migrate")
    assert first.returncode == 0, first.stderr
    assert "  + " in first.stdout and "change(s) applied, 0 already deployed" in first.stdout
    assert one(empty_dsn, "select conductor.version()") == SCHEMA_VERSION

    again = manage(empty_dsn, "conductor_migrate")
    assert again.returncode == 0, again.stderr
    assert "0 change(s) applied" in again.stdout
    assert manage(empty_dsn, "conductor_migrate", "--check").stdout.strip() == "up to date"


def test_migrate_names_an_unknown_database_alias(empty_dsn: str) -> None:
    out = manage(empty_dsn, "conductor_migrate", "--database", "replica")
    assert out.returncode == 1
    assert "no database 'replica' in settings.DATABASES" in out.stderr


# -- conductor_health --------------------------------------------------------------------


def register_worker(dsn: str, queues: list[str] | None, roles: tuple[str, ...] = ("worker",)) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("select conductor.register_worker(worker_id => %s, host => 'test', pid => 1, queues => %s, "
                     "concurrency => 1, roles => %s, version => 'test')",
                     [f"w-{queues}-{roles}", queues, list(roles)])  # fmt: skip


def test_health_on_an_empty_database_says_to_migrate(empty_dsn: str) -> None:
    out = manage(empty_dsn, "conductor_health")
    assert out.returncode == 1
    assert out.stdout.startswith("unhealthy: no conductor schema in database")
    assert "conductor_migrate" in out.stdout
    assert len(out.stdout.strip().splitlines()) == 1


def test_health_wants_a_live_worker_for_the_backends_queues(db_dsn: str) -> None:
    out = manage(db_dsn, "conductor_health")
    assert out.returncode == 1, out.stderr
    assert out.stdout.strip() == ("unhealthy: no live worker for queues default,emails,reports "
                                  "(none seen within 30s)")  # fmt: skip
    register_worker(db_dsn, ["elsewhere"])  # serves none of the backend's queues
    register_worker(db_dsn, None, roles=("scheduler",))  # runs no task
    # seen within an hour: a slow machine's manage.py start does not make them silent meanwhile
    assert manage(db_dsn, "conductor_health", "--seen-within", "1h").returncode == 1

    register_worker(db_dsn, ["emails"])
    ok = manage(db_dsn, "conductor_health", "--seen-within", "1h")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.strip() == (f"ok: schema {SCHEMA_VERSION} current; 1 live worker(s) for queues "
                                 "default,emails,reports; no overdue schedule")  # fmt: skip


def test_health_names_an_overdue_schedule(db_dsn: str) -> None:
    register_worker(db_dsn, None)
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("select conductor.create_schedule(name => 'nightly', cron => '0 3 * * *', kind => 'report')")
        conn.execute("update conductor.schedules set next_due_at = now() - interval '10 minutes' where name = 'nightly'")
    out = manage(db_dsn, "conductor_health", "--seen-within", "1h")
    assert out.returncode == 1
    assert out.stdout.startswith("unhealthy: 1 schedule(s) overdue: nightly (10m")
    assert manage(db_dsn, "conductor_health", "--seen-within", "1h", "--schedule-grace", "1h").returncode == 0


def test_health_of_an_unreachable_database_is_one_line_and_exit_1(db_dsn: str) -> None:
    dead = psycopg.conninfo.make_conninfo(db_dsn, port="1", host="127.0.0.1")
    out = manage(dead, "conductor_health")
    assert out.returncode == 1
    assert out.stdout.startswith("unhealthy: ") and len(out.stdout.strip().splitlines()) == 1


# -- conductor_prune ---------------------------------------------------------------------


@pytest.mark.parametrize(("value", "said"), [
    ("7x", "invalid duration '7x': use e.g. 30s, 5m, 1h, 7d or 1h30m"),
    ("7", "invalid duration '7': give a unit, e.g. 7d, 7h or 7m"),
    ("", "invalid duration ''"),
])  # fmt: skip
def test_prune_names_a_bad_duration(db_dsn: str, value: str, said: str) -> None:
    out = manage(db_dsn, "conductor_prune", "--older-than", value)
    assert out.returncode == 2
    assert f"argument --older-than: {said}" in out.stderr


def test_prune_deletes_finished_tasks_older_than_asked(db_dsn: str) -> None:
    with Conductor(db_dsn) as app:
        done = app.enqueue("report", {})
        waiting = app.enqueue("report", {})
        app.cancel(done)
    kept = manage(db_dsn, "conductor_prune", "--older-than", "7d")
    assert kept.returncode == 0, kept.stderr
    assert kept.stdout.strip() == "pruned 0 succeeded or cancelled task(s) and unawaited event(s) older than 7d00h"
    pruned = manage(db_dsn, "conductor_prune", "--older-than", "0s")
    assert pruned.returncode == 0, pruned.stderr
    assert pruned.stdout.startswith("pruned 1 succeeded or cancelled task(s)")
    assert one(db_dsn, "select array_agg(id order by id) from conductor.tasks") == [waiting]
