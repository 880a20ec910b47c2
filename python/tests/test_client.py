"""Conductor (the client) against a real PostgreSQL: enqueue, read, cancel, retry, errors."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import psycopg
import pytest

from pyconductor import (
    Conductor,
    ConductorError,
    DedupeConflict,
    InvalidArgument,
    InvalidKind,
    InvalidPayload,
    InvalidQueue,
    InvalidState,
    NotFound,
    PayloadTooLarge,
    TaskInfo,
)
from pyconductor import queries
from pyconductor.registry import KIND_OPTIONS, RETENTION_OPTIONS


@pytest.fixture
def app(dsn: str) -> Iterator[Conductor]:
    with Conductor(dsn, pool_max=2) as app:
        yield app


def test_construction_opens_no_connection(dsn: str) -> None:
    app = Conductor(dsn)
    assert app._pool is None
    app.close()


def test_enqueue_returns_the_id_and_stores_the_task(app: Conductor) -> None:
    task_id = app.enqueue("demo.add", {"a": 1, "b": 2}, queue="math", priority=5, max_attempts=3)
    info = app.get(task_id)
    assert isinstance(info, TaskInfo)
    assert (info.id, info.kind, info.queue, info.status) == (task_id, "demo.add", "math", "queued")
    assert info.payload == {"a": 1, "b": 2}
    assert (info.priority, info.max_attempts, info.attempt) == (5, 3, 0)
    assert info.attempts == [] and not info.finished


def test_enqueue_leaves_defaults_to_the_database(app: Conductor) -> None:
    info = app.get(app.enqueue("demo.plain"))
    assert info.payload == {}
    assert (info.queue, info.priority, info.max_attempts, info.max_recoveries) == ("default", 0, 1, 3)


def test_enqueue_passes_every_option(app: Conductor, conn: psycopg.Connection[tuple[object, ...]]) -> None:
    parent = app.enqueue("demo.parent")
    task_id = app.enqueue("demo.child", {"x": [1, "two"]}, queue="q1", priority=-2, max_attempts=4,
                          dedupe_key="d-1", concurrency_key="c-1", parent_id=parent, max_recoveries=0,
                          backoff_factor=1.5)  # fmt: skip
    row = conn.execute(
        "select payload, queue, priority, max_attempts, dedupe_key, concurrency_key, parent_id, root_id,"
        " max_recoveries, backoff_factor from conductor.tasks where id = %s", (task_id,)).fetchone()  # fmt: skip
    assert row == ({"x": [1, "two"]}, "q1", -2, 4, "d-1", "c-1", parent, parent, 0, 1.5)
    with pytest.raises(InvalidArgument, match="JSON-serialisable"):
        app.enqueue("demo.child", {"when": object()})


def test_enqueue_run_at_and_backoff(app: Conductor, conn: psycopg.Connection[tuple[object, ...]]) -> None:
    due = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    task_id = app.enqueue("demo.later", run_at=due, backoff_base=timedelta(seconds=5), backoff_max=60)
    assert app.get(task_id).run_at == due
    row = conn.execute("select backoff_base, backoff_max from conductor.tasks where id = %s", (task_id,)).fetchone()
    assert row == (timedelta(seconds=5), timedelta(minutes=1))
    with pytest.raises(InvalidArgument, match="time zone"):
        app.enqueue("demo.later", run_at=datetime(2030, 1, 1))


def test_enqueue_many_keeps_input_order(app: Conductor) -> None:
    ids = app.enqueue_many([
        ("demo.a", {"n": 1}),
        {"kind": "demo.b", "payload": {"n": 2}, "queue": "other", "priority": 9},
        {"kind": "demo.c"},
    ])  # fmt: skip
    assert len(ids) == 3 and ids == sorted(ids)
    infos = [app.get(i) for i in ids]
    assert [(t.kind, t.payload, t.queue) for t in infos] == [
        ("demo.a", {"n": 1}, "default"), ("demo.b", {"n": 2}, "other"), ("demo.c", {}, "default"),
    ]  # fmt: skip
    assert app.enqueue_many([]) == []


def test_enqueue_many_is_all_or_nothing(app: Conductor, conn: psycopg.Connection[tuple[object, ...]]) -> None:
    before = conn.execute("select count(*) from conductor.tasks").fetchone()
    with pytest.raises(InvalidQueue):
        app.enqueue_many([("demo.ok", {}), {"kind": "demo.bad", "queue": "no spaces allowed"}])
    assert conn.execute("select count(*) from conductor.tasks").fetchone() == before


def test_dedupe_key_returns_the_holder(app: Conductor) -> None:
    first = app.enqueue("demo.once", {"v": 1}, dedupe_key="once-1")
    assert app.enqueue("demo.once", {"v": 2}, dedupe_key="once-1") == first
    assert app.get(first).payload == {"v": 1}
    a, b, c = app.enqueue_many([
        {"kind": "demo.once", "dedupe_key": "once-2"}, {"kind": "demo.once", "dedupe_key": "once-2"},
        {"kind": "demo.once", "dedupe_key": "once-1"},
    ])  # fmt: skip
    assert a == b and c == first


@pytest.mark.parametrize(
    ("kwargs", "cls", "code"),
    [
        ({"kind": " padded "}, InvalidKind, "QC101"),
        ({"kind": "demo.x", "payload": [1, 2]}, InvalidPayload, "QC102"),
        ({"kind": "demo.x", "payload": {"blob": "x" * 2_000_000}}, PayloadTooLarge, "QC103"),
        ({"kind": "demo.x", "queue": "bad queue"}, InvalidQueue, "QC104"),
        ({"kind": "demo.x", "max_attempts": 0}, InvalidArgument, "QC106"),
        ({"kind": "demo.x", "parent_id": 987654321}, NotFound, "QC203"),
    ],
)
def test_server_errors_map_to_classes(app: Conductor, kwargs: dict[str, object], cls: type, code: str) -> None:
    with pytest.raises(cls) as info:
        app.enqueue(**kwargs)  # type: ignore[arg-type]
    err = info.value
    assert isinstance(err, ConductorError)
    assert err.sqlstate == code
    assert isinstance(err.__cause__, psycopg.Error) and err.__cause__.sqlstate == code
    assert str(err) == err.__cause__.diag.message_primary


def test_non_json_payload_is_rejected_before_the_database(app: Conductor) -> None:
    with pytest.raises(InvalidArgument, match="JSON"):
        app.enqueue("demo.x", {"when": object()})
    with pytest.raises(InvalidArgument, match="JSON"):
        app.enqueue("demo.x", {"nan": float("nan")})


def test_get_missing_task_raises_not_found(app: Conductor) -> None:
    with pytest.raises(NotFound, match="does not exist") as info:
        app.get(123456789)
    assert info.value.sqlstate == "QC203"


def test_cancel_and_retry(app: Conductor) -> None:
    parent = app.enqueue("demo.parent")
    child = app.enqueue("demo.child", parent_id=parent)
    assert app.get(child).root_id == parent
    assert app.cancel(parent) == 2
    assert app.get(child).status == "cancelled"
    assert app.cancel(parent) == 0
    with pytest.raises(InvalidState):
        app.retry(app.enqueue("demo.fresh"))
    assert app.retry(parent) == parent
    info = app.get(parent)
    assert (info.status, info.attempt, info.error) == ("queued", 0, None)
    with pytest.raises(NotFound):
        app.cancel(123456789)


def test_retry_refuses_a_taken_dedupe_key(app: Conductor) -> None:
    old = app.enqueue("demo.d", dedupe_key="dk")
    app.cancel(old)
    app.enqueue("demo.d", dedupe_key="dk")
    with pytest.raises(DedupeConflict):
        app.retry(old)


def test_registered_defaults_apply_to_app_enqueue(app: Conductor) -> None:
    @app.task("demo.registered", queue="reg", max_attempts=4, priority=2)
    def handler(payload: dict[str, object]) -> int:
        return 1

    info = app.get(app.enqueue("demo.registered", {"x": 1}))
    assert (info.queue, info.max_attempts, info.priority) == ("reg", 4, 2)
    info = app.get(handler.enqueue({"x": 2}, priority=7))
    assert (info.queue, info.max_attempts, info.priority) == ("reg", 4, 7)
    assert handler({"x": 1}) == 1


def task_row(conn: psycopg.Connection[tuple[object, ...]], task_id: int) -> tuple[object, ...]:
    row = conn.execute("select queue, priority, concurrency_key, max_attempts, timeout from conductor.tasks"
                       " where id = %s", (task_id,)).fetchone()  # fmt: skip
    assert row is not None
    return row


def test_kind_options_are_configure_kinds_parameters(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """What a worker writes at start (Task.configuration) is configure_kind's whole row."""
    row = conn.execute("select proargnames from pg_proc where oid = 'conductor.configure_kind'::regproc").fetchone()
    assert row is not None
    assert sorted(row[0][1:]) == sorted((*KIND_OPTIONS, *RETENTION_OPTIONS)) and row[0][0] == "kind"


def test_enqueue_without_a_registry_takes_the_kinds_configuration_in_sql(
    app: Conductor, conn: psycopg.Connection[tuple[object, ...]]
) -> None:
    conn.execute("select conductor.configure_kind('cfg.sql', queue => 'q', priority => 5, concurrency_key => 'ck',"
                 " max_attempts => 4, timeout => '2 s')")  # fmt: skip
    assert "cfg.sql" not in app.registry
    expected = ("q", 5, "ck", 4, timedelta(seconds=2))
    assert task_row(conn, app.enqueue("cfg.sql")) == expected
    assert [task_row(conn, i) for i in app.enqueue_many([("cfg.sql", {}), {"kind": "cfg.sql"}])] == [expected] * 2
    # as psql, a trigger or another language would
    sql_id = conn.execute("select conductor.enqueue('cfg.sql', '{}')").fetchone()
    assert sql_id is not None and task_row(conn, int(sql_id[0])) == expected  # type: ignore[call-overload]


def test_explicit_arguments_win_over_the_kinds_configuration(
    app: Conductor, conn: psycopg.Connection[tuple[object, ...]]
) -> None:
    conn.execute("select conductor.configure_kind('cfg.given', queue => 'q', priority => 5, timeout => '2 s')")
    given = {"queue": "other", "priority": -1, "concurrency_key": "mine", "max_attempts": 2}
    expected = ("other", -1, "mine", 2, timedelta(seconds=7))
    assert task_row(conn, app.enqueue("cfg.given", **given, timeout=7)) == expected  # type: ignore[arg-type]
    ids = app.enqueue_many([{"kind": "cfg.given", **given, "timeout": timedelta(seconds=7)}])
    assert task_row(conn, ids[0]) == expected


def test_registered_options_win_over_the_kinds_configuration_in_sql(
    app: Conductor, conn: psycopg.Connection[tuple[object, ...]]
) -> None:
    """This app registered a queue and a timeout; the rest comes from the kind's row."""
    conn.execute("select conductor.configure_kind('cfg.reg', queue => 'q', priority => 5, timeout => '2 s')")
    app.register("cfg.reg", lambda payload: None, queue="registered", timeout=timedelta(minutes=1))
    assert task_row(conn, app.enqueue("cfg.reg")) == ("registered", 5, None, 1, timedelta(minutes=1))
    assert task_row(conn, app.enqueue("cfg.reg", queue="given", timeout=3)) == ("given", 5, None, 1,
                                                                                  timedelta(seconds=3))  # fmt: skip


def test_what_a_worker_writes_at_start_is_what_any_client_then_gets(
    dsn: str, conn: psycopg.Connection[tuple[object, ...]]
) -> None:
    """The registry's configurations through queries.CONFIGURE_KIND, then an
    enqueue from SQL and one from an app that registers nothing."""
    declaring = Conductor(dsn)
    declaring.register("cfg.declared", lambda payload: None, queue="decl", priority=3, concurrency_key="one",
                       max_attempts=6, backoff_base=2, timeout=timedelta(seconds=90))  # fmt: skip
    for params in declaring.registry.configurations():
        conn.execute(queries.CONFIGURE_KIND, params)
    expected = ("decl", 3, "one", 6, timedelta(seconds=90))
    sql_id = conn.execute("select conductor.enqueue('cfg.declared')").fetchone()
    assert sql_id is not None and task_row(conn, int(sql_id[0])) == expected  # type: ignore[call-overload]
    with Conductor(dsn) as plain:
        assert task_row(conn, plain.enqueue("cfg.declared")) == expected
    backoff = conn.execute("select backoff_base from conductor.kinds where kind = 'cfg.declared'").fetchone()
    assert backoff == (timedelta(seconds=2),)


def test_a_timeout_is_stored_per_task(app: Conductor, conn: psycopg.Connection[tuple[object, ...]]) -> None:
    timed = app.enqueue("demo.timed", timeout=1.5)
    assert task_row(conn, timed)[4] == timedelta(seconds=1.5) == app.get(timed).timeout
    assert task_row(conn, app.enqueue("demo.timed", timeout="90 seconds"))[4] == timedelta(seconds=90)
    untimed = app.enqueue("demo.untimed")
    assert task_row(conn, untimed)[4] is None and app.get(untimed).timeout is None, "no timeout: no limit"
    for bad in (0, -1, timedelta(days=31)):
        with pytest.raises(InvalidArgument, match="invalid timeout") as info:
            app.enqueue("demo.timed", timeout=bad)
        assert info.value.sqlstate == "QC106"


def test_cli_enqueue_prints_the_id(dsn: str, app: Conductor) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "CONDUCTOR_DSN": dsn}
    run = subprocess.run(
        [sys.executable, "-m", "pyconductor", "enqueue", "demo.cli", "--payload", '{"k": 1}', "--queue", "cli",
         "--priority", "3", "--max-attempts", "2"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    info = app.get(int(run.stdout.strip()))
    assert (info.kind, info.payload, info.queue, info.priority, info.max_attempts) == ("demo.cli", {"k": 1}, "cli", 3, 2)
    bad = subprocess.run(
        [sys.executable, "-m", "pyconductor", "enqueue", "demo.cli", "--queue", "bad queue"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert bad.returncode == 1 and "QC104" in bad.stderr
