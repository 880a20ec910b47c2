"""Upgrading a v0.1.0 or a v0.2.0 database that holds work, with sqitch and with
pyconductor migrate.

Each test deploys the plan up to a release's tag (``@v0.1.0``, ``@v0.2.0``: the
frozen scripts, as users have them), fills it through that release's API with
tasks in every status, a held lease, steps, a run waiting for an event and one
waiting for its children, schedules, events, a worker and a kind policy (and,
from v0.2.0, a paused queue, a rate limit, a subscription, a sleeping worker, a
result waiter, handler logs, a code-declared schedule and a held concurrency
key); upgrades it to the head of the plan; and shows that

- the schema equals a fresh deploy of the head (``pg_dump --schema-only``),
- every row is still there, unchanged (columns the upgrade added aside),
- the held attempt can still complete its task,
- the waiting run still wakes on its event and resumes with its steps,
- what v0.2.0 stored still holds: the queue stays paused, the limit limits,
  the key excludes, the schedule fires, and an attempt failed at its time limit
  (in the Python or the Node worker's words) is recorded as timed out;
- none of the old work has a deadline to start, so none of it expires, while a
  task enqueued after the upgrade with one does.
"""

from __future__ import annotations

import re
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
V0_2_0 = "@v0.2.0"
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


def fill_v0_2_0(conn: Conn) -> dict[str, int]:
    """v0.1.0's work, and what v0.2.0 added, written through the v0.2.0 API."""
    ids = fill_v0_1_0(conn)

    def enqueue(queue: str, **extra: Any) -> int:
        options = "".join(f", {k} => %({k})s" for k in extra)
        return int(one(conn, f"select conductor.enqueue(kind => 'up.k2', queue => %(queue)s{options})",
                       {"queue": queue, **extra}))  # fmt: skip

    conn.execute("select conductor.register_worker(worker_id => 'up-w3', host => 'h', pid => 3,"
                 " queues => array['up-fleet'], kinds => array['up.k2'])")  # fmt: skip
    conn.execute("select conductor.configure_kind(kind => 'up.k2', queue => 'up-fleet', timeout => '1 hour',"
                 " retain_succeeded => '7 days', retain_failed => '30 days')")  # fmt: skip
    conn.execute("select conductor.pause_queue(queue => 'up-paused')")
    ids["paused"] = enqueue("up-paused")
    conn.execute("select conductor.set_rate_limit(queue => 'up-limited', per_second => 0.01, burst => 1)")
    for _ in range(3):
        enqueue("up-limited")
    ids["key_holder"] = enqueue("up-keyed", concurrency_key="up-key")
    ids["key_waiter"] = enqueue("up-keyed", concurrency_key="up-key")
    ids["key_attempt"] = int(one(conn, "select attempt_id from conductor.claim(worker_id => 'up-w3',"
                                       " queues => array['up-keyed'], max_tasks => 5, lease => interval '1 hour')"))  # fmt: skip
    ids["logged"] = enqueue("up-logged")
    logged_attempt = int(one(conn, "select attempt_id from conductor.claim(worker_id => 'up-w3',"
                                   " queues => array['up-logged'], max_tasks => 1, lease => interval '1 hour')"))  # fmt: skip
    conn.execute("select conductor.save_log(attempt_id => %s, lines => '[{\"msg\": \"hello\"}]')", [logged_attempt])
    conn.execute("select conductor.complete(attempt_id => %s, result => '{}')", [logged_attempt])
    # attempts failed at their time limit, in the words v0.2.0's Python worker (%g) and Node worker wrote
    for name, limit, error in (("timed_out_python", "1 second", "timed out after 1 s"),
                               ("timed_out_node", "30 days", "timed out after 2592000 s"),
                               ("timed_out_lookalike", "1 hour", "timed out after 5 s")):
        enqueue(f"up-{name}", timeout=limit)
        ids[name] = int(one(conn, "select attempt_id from conductor.claim(worker_id => 'up-w3',"
                                  " queues => array[%s], max_tasks => 1, lease => interval '1 hour')", [f"up-{name}"]))  # fmt: skip
        conn.execute("select conductor.fail(attempt_id => %s, error => %s)", [ids[name], error])
    conn.execute("select conductor.sleep(worker_id => 'up-w3', queues => array['up-fleet'])")
    conn.execute("select * from conductor.watch(task_id => %s)", [ids["queued"]])
    conn.execute("select conductor.subscribe(topics => array['up-topic'])")
    # a schedule declared from code: by a role without conductor_admin
    conn.execute("do $$ begin if not exists (select from pg_roles where rolname = 'up_code') then"
                 " create role up_code; grant conductor_worker to up_code; end if; end $$")  # fmt: skip
    conn.execute("set role up_code")
    conn.execute("select conductor.create_schedule(name => 'up-from-code', cron => '*/5 * * * *', kind => 'up.k2',"
                 " queue => 'up-cron2', replace => true)")  # fmt: skip
    conn.execute("reset role")

    counts = dict(conn.execute(
        "select 'paused', count(*) from conductor.paused_queues union all"
        " select 'limits', count(*) from conductor.rate_limits union all"
        " select 'subscriptions', count(*) from conductor.subscriptions union all"
        " select 'sleepers', count(*) from conductor.sleepers union all"
        " select 'waiters', count(*) from conductor.result_waiters union all"
        " select 'logs', count(*) from conductor.attempt_logs").fetchall())  # fmt: skip
    assert all(counts[k] >= 1 for k in counts), counts
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


def prove_v0_2_0_kept(conn: Conn, ids: dict[str, int]) -> None:
    """What v0.2.0 stored still governs the upgraded engine."""
    def claim(queue: str, n: int = 5) -> list[int]:
        return [int(r[0]) for r in conn.execute(
            "select task_id from conductor.claim(worker_id => 'up-w4', queues => array[%s], max_tasks => %s,"
            " lease => interval '1 minute')", [queue, n])]  # fmt: skip

    timed_out = dict(conn.execute("select id, timed_out from conductor.attempts where id = any(%s)", [[
        ids["timed_out_python"], ids["timed_out_node"], ids["timed_out_lookalike"]]]).fetchall())  # fmt: skip
    assert timed_out == {ids["timed_out_python"]: True, ids["timed_out_node"]: True, ids["timed_out_lookalike"]: False}, (
        "the upgrade marks the attempts failed at their limit (either worker's words), not one that only reads alike")
    assert claim("up-paused") == [], "the paused queue stays paused"
    conn.execute("select conductor.resume_queue(queue => 'up-paused')")
    assert claim("up-paused") == [ids["paused"]]
    assert len(claim("up-limited")) <= 1, "the rate limit still limits (burst 1)"
    assert claim("up-keyed") == [], "the running task still holds its concurrency key"
    conn.execute("select conductor.complete(attempt_id => %s, result => '{}')", [ids["key_attempt"]])
    assert claim("up-keyed") == [ids["key_waiter"]], "the key is free once its holder finished"
    conn.execute("update conductor.settings set fake_clock = true")
    conn.execute("set conductor.fake_now = '2999-06-01 00:00:00+00'")
    fired = [r[0] for r in conn.execute("select schedule_name from conductor.tick()")]
    assert fired.count("up-from-code") == 1, fired
    conn.execute("reset conductor.fake_now")


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
        prove_rewind(conn, ids["waiting"])

        assert one(conn, "select count(*) from conductor.claim(worker_id => 'up-w2', queues => array['up-queued'],"
                         " max_tasks => 1, lease => interval '1 minute')") == 1  # fmt: skip
        if "paused" in ids:
            prove_v0_2_0_kept(conn, ids)
        prove_expiry(conn)


def prove_rewind(conn: Conn, task_id: int) -> None:
    """Rewind (issue 31) of a run that was in flight across the upgrade: its step saved
    before (numbered by the backfill) comes before the one its wake-up saved after, so a
    rewind from the latter keeps the former."""
    attempt = one(conn, "select id from conductor.attempts where task_id = %s and outcome is null", [task_id])
    conn.execute("select conductor.complete(attempt_id => %s, result => '{}')", [attempt])
    assert one(conn, "select conductor.rewind(task_id => %s, from_step => 'approval')", [task_id]) == task_id
    kept = [r[0] for r in conn.execute("select name from conductor.steps where task_id = %s order by seq", [task_id])]
    assert kept == ["fetched"]


def prove_expiry(conn: Conn) -> None:
    """Expiry before start (issue 30) on the upgraded engine: nothing the old release
    queued has a deadline, so its reaper expires none of it; a task enqueued after the
    upgrade with one expires."""
    assert one(conn, "select count(*) from conductor.tasks where expires_at is not null") == 0
    old_queued = one(conn, "select count(*) from conductor.tasks where status = 'queued'")
    expiring = one(conn, "select conductor.enqueue(kind => 'up.exp', queue => 'up-exp',"
                         " run_at => now() - interval '1 hour', expires_in => interval '1 minute')")  # fmt: skip
    assert one(conn, "select tasks_expired from conductor.reap_report()") == 1
    assert one(conn, "select status::text from conductor.tasks where id = %s", [expiring]) == "expired"
    assert one(conn, "select count(*) from conductor.tasks where status = 'queued'") == old_queued


# (tag, the release's schema version, how to fill it, the first change after the tag)
RELEASES = [
    pytest.param(V0_1_0, "0.1.0", fill_v0_1_0, "schema/owner", id="v0.1.0"),
    pytest.param(V0_2_0, "0.2.0", fill_v0_2_0, "schema/coordination", id="v0.2.0"),
]


@pytest.mark.parametrize(("tag", "version", "fill", "first_change"), RELEASES)
def test_upgrade_with_pyconductor_migrate(cluster: Cluster, empty_dsn: str, db_dsn: str, tag: str, version: str,
                                          fill: Any, first_change: str) -> None:  # fmt: skip
    migrate(empty_dsn, to=tag, progress=quiet)
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        assert schema_version(conn) == version
        if version != SCHEMA_VERSION:
            with pytest.raises(SchemaMismatch, match=rf"holds conductor schema {re.escape(version)}.*pyconductor migrate"):
                check_schema(conn)
        ids = fill(conn)
        before = snapshot(conn)
    applied = migrate(empty_dsn, progress=quiet)
    assert applied and applied[0].name == first_change
    prove_upgraded(cluster, empty_dsn, db_dsn, ids, before)  # db_dsn: the template, migrated fresh


@pytest.mark.skipif(shutil.which("sqitch") is None, reason="sqitch is not installed (scripts/install-deps.sh installs it)")
@pytest.mark.parametrize(("tag", "version", "fill", "first_change"), RELEASES)
def test_upgrade_with_sqitch(cluster: Cluster, empty_dsn: str, tmp_path: Path, tag: str, version: str, fill: Any,
                             first_change: str) -> None:  # fmt: skip
    old = dbname(empty_dsn)
    deploy = cluster.sqitch(old, "deploy", "--verify", "--to", tag, home=tmp_path)
    assert deploy.returncode == 0, deploy.stdout + deploy.stderr
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        ids = fill(conn)
        before = snapshot(conn)
    upgrade = cluster.sqitch(old, "deploy", "--verify", home=tmp_path)
    assert upgrade.returncode == 0, upgrade.stdout + upgrade.stderr
    assert f"+ {first_change}" in upgrade.stdout

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
