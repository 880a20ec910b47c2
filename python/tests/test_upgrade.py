"""Upgrading a v0.1.0 database that holds work, with sqitch and with pyconductor migrate.

Each test deploys the plan up to its tag ``@v0.1.0`` (the frozen scripts, as
users have them), fills it through the v0.1.0 API with tasks in every status,
a held lease, steps, a run waiting for an event, schedules, events, a worker
and a kind policy; upgrades it to the head of the plan; and shows that

- the schema equals a fresh deploy of the head (``pg_dump --schema-only``),
- every row is still there, unchanged,
- the held attempt can still complete its task,
- the waiting run still wakes on its event and resumes with its steps.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from pyconductor.errors import SchemaMismatch
from pyconductor.migrate import migrate
from pyconductor.schema import SCHEMA_VERSION, check_schema, schema_version

if TYPE_CHECKING:
    from conftest import Cluster

V0_1_0 = "@v0.1.0"
Conn = psycopg.Connection[Any]


def quiet(line: str) -> None:
    pass


def dbname(dsn: str) -> str:
    return str(conninfo_to_dict(dsn)["dbname"])


def one(conn: Conn, query: str, params: Any = None) -> Any:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0]


def fill_v0_1_0(conn: Conn) -> dict[str, int]:
    """Work in every state, written through the v0.1.0 API; returns the ids the checks need."""
    ids: dict[str, int] = {}

    def enqueue(queue: str, **extra: Any) -> int:
        options = "".join(f", {k} => %({k})s" for k in extra)
        return int(one(conn, f"select conductor.enqueue(kind => 'up.k', queue => %(queue)s{options})",
                       {"queue": queue, **extra}))  # fmt: skip

    def claim(queue: str, lease: str = "1 hour") -> int:
        return int(one(conn, "select attempt_id from conductor.claim(worker_id => 'up-w', queues => array[%s],"
                             " max_tasks => 1, lease => %s::interval)", [queue, lease]))  # fmt: skip

    conn.execute("select conductor.register_worker(worker_id => 'up-w', host => 'h', pid => 1, queues => array['up'])")
    conn.execute("select conductor.configure_kind(kind => 'up.k', max_attempts => 3)")
    ids["queued"] = enqueue("up-queued", payload=psycopg.types.json.Jsonb({"n": 1}))
    ids["scheduled"] = enqueue("up-later", run_at="2999-01-01T00:00:00Z")
    ids["running"] = enqueue("up-held")
    ids["held_attempt"] = claim("up-held")
    enqueue("up-done")
    conn.execute("select conductor.complete(attempt_id => %s, result => '{\"ok\": true}')", [claim("up-done")])
    enqueue("up-failed", max_attempts=1)
    conn.execute("select conductor.fail(attempt_id => %s, error => 'boom')", [claim("up-failed")])
    enqueue("up-dead")
    conn.execute("select conductor.fail(attempt_id => %s, error => 'no handler', unknown_kind => true)", [claim("up-dead")])
    conn.execute("select conductor.cancel(task_id => %s)", [enqueue("up-cancelled")])
    ids["retried"] = enqueue("up-retry", max_attempts=2)
    conn.execute("select conductor.fail(attempt_id => %s, error => 'again')", [claim("up-retry")])

    ids["waiting"] = enqueue("up-run")
    run_attempt = claim("up-run")
    conn.execute("select conductor.save_step(attempt_id => %s, name => 'fetched', result => '{\"rows\": 3}')", [run_attempt])
    conn.execute("select conductor.suspend(attempt_id => %s, step => 'approval', wait_for => 'event',"
                 " event => 'up-approved')", [run_attempt])  # fmt: skip
    ids["parent"] = enqueue("up-parent")
    parent_attempt = claim("up-parent")
    conn.execute("select conductor.spawn(attempt_id => %s, step => 'child', kind => 'up.k', queue => 'up-child')",
                 [parent_attempt])  # fmt: skip
    conn.execute("select conductor.suspend(attempt_id => %s, step => 'children', wait_for => 'children_all')",
                 [parent_attempt])  # fmt: skip

    conn.execute("select conductor.emit_event(name => 'up-other', payload => '{\"x\": 1}')")
    conn.execute("select conductor.create_schedule(name => 'up-every-minute', cron => '* * * * *', kind => 'up.k',"
                 " queue => 'up-cron')")  # fmt: skip
    conn.execute("select conductor.tick()")

    statuses = {row[0] for row in conn.execute("select status::text from conductor.tasks")}
    assert {"queued", "running", "waiting", "succeeded", "failed", "dead", "cancelled"} <= statuses
    return ids


Snapshot = dict[str, tuple[list[str], list[str]]]


def snapshot(conn: Conn, like: Snapshot | None = None) -> Snapshot:
    """Every row of every table, as text, sorted; with ``like``, only its tables
    and columns (an upgrade may add columns, which must not change the rest)."""
    if like is None:
        tables = [str(row[0]) for row in conn.execute(
            "select c.relname from pg_class c where c.relnamespace = 'conductor'::regnamespace and c.relkind = 'r'"
            " order by 1")]  # fmt: skip
        like = {
            table: ([str(row[0]) for row in conn.execute(
                "select attname from pg_attribute where attrelid = %s::regclass and attnum > 0 and not attisdropped"
                " order by attnum", [f"conductor.{table}"])], [])  # fmt: skip
            for table in tables
        }
    out: Snapshot = {}
    for table, (columns, _) in like.items():
        cols = sql.SQL(", ").join(sql.Identifier(c) for c in columns)
        query = sql.SQL("select row({}) ::text from conductor.{}").format(cols, sql.Identifier(table))
        out[table] = (columns, sorted(str(row[0]) for row in conn.execute(query)))
    return out


def prove_upgraded(cluster: Cluster, upgraded: str, fresh: str, ids: dict[str, int], before: Snapshot) -> None:
    assert cluster.schema_dump(dbname(upgraded)) == cluster.schema_dump(dbname(fresh))
    with psycopg.connect(upgraded, autocommit=True) as conn:
        assert check_schema(conn) == SCHEMA_VERSION
        after = snapshot(conn, like=before)
        for table in before:
            assert after[table] == before[table], f"conductor.{table} changed in the upgrade"

        conn.execute("select conductor.complete(attempt_id => %s, result => '{\"after\": \"upgrade\"}')",
                     [ids["held_attempt"]])  # fmt: skip
        assert one(conn, "select status::text from conductor.tasks where id = %s", [ids["running"]]) == "succeeded"

        conn.execute("select conductor.emit_event(name => 'up-approved', payload => '{\"by\": \"ops\"}')")
        assert one(conn, "select status::text from conductor.tasks where id = %s", [ids["waiting"]]) == "queued"
        resumed = conn.execute(
            "select task_id, steps from conductor.claim(worker_id => 'up-w2', queues => array['up-run'],"
            " max_tasks => 1, lease => interval '1 minute')").fetchone()  # fmt: skip
        assert resumed is not None and resumed[0] == ids["waiting"]
        assert resumed[1]["fetched"] == {"rows": 3}

        assert one(conn, "select count(*) from conductor.claim(worker_id => 'up-w2', queues => array['up-queued'],"
                         " max_tasks => 1, lease => interval '1 minute')") == 1  # fmt: skip


def test_upgrade_from_v0_1_0_with_pyconductor_migrate(cluster: Cluster, empty_dsn: str, db_dsn: str) -> None:
    migrate(empty_dsn, to=V0_1_0, progress=quiet)
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        assert schema_version(conn) == "0.1.0"
        with pytest.raises(SchemaMismatch, match=r"holds conductor schema 0\.1\.0.*pyconductor migrate"):
            check_schema(conn)
        ids = fill_v0_1_0(conn)
        before = snapshot(conn)
    applied = migrate(empty_dsn, progress=quiet)
    assert applied and applied[0].name == "schema/owner"
    prove_upgraded(cluster, empty_dsn, db_dsn, ids, before)  # db_dsn: the template, migrated fresh


@pytest.mark.skipif(shutil.which("sqitch") is None, reason="sqitch is not installed (scripts/install-deps.sh installs it)")
def test_upgrade_from_v0_1_0_with_sqitch(cluster: Cluster, empty_dsn: str, tmp_path: Path) -> None:
    old = dbname(empty_dsn)
    deploy = cluster.sqitch(old, "deploy", "--verify", "--to", V0_1_0, home=tmp_path)
    assert deploy.returncode == 0, deploy.stdout + deploy.stderr
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        ids = fill_v0_1_0(conn)
        before = snapshot(conn)
    upgrade = cluster.sqitch(old, "deploy", "--verify", home=tmp_path)
    assert upgrade.returncode == 0, upgrade.stdout + upgrade.stderr
    assert "+ schema/owner" in upgrade.stdout

    fresh_name = f"{old}_fresh"[:63]
    fresh = cluster.create_database(fresh_name)
    try:
        deploy = cluster.sqitch(fresh_name, "deploy", home=tmp_path)
        assert deploy.returncode == 0, deploy.stdout + deploy.stderr
        prove_upgraded(cluster, empty_dsn, fresh, ids, before)
    finally:
        cluster.drop_database(fresh_name)


def test_a_database_without_the_schema_is_refused(empty_dsn: str) -> None:
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        assert schema_version(conn) is None
        with pytest.raises(SchemaMismatch, match="no conductor schema"):
            check_schema(conn)
