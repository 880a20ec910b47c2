"""pyconductor.statuses names the statuses the deployed schema names: the enum
conductor.task_status, and conductor.unfinished_statuses() and
conductor.finished_statuses(), the lists other languages read."""

from __future__ import annotations

import psycopg

from pyconductor import statuses


def _texts(conn: psycopg.Connection[tuple[object, ...]], query: str) -> tuple[str, ...]:
    row = conn.execute(query).fetchone()
    assert row is not None
    return tuple(row[0])  # type: ignore[call-overload]


def test_all_is_the_enum_in_its_order(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    assert statuses.ALL == _texts(conn, "select enum_range(null::conductor.task_status)::text[]")


def test_unfinished_and_finished_are_the_schemas_lists(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    assert statuses.UNFINISHED == _texts(conn, "select conductor.unfinished_statuses()::text[]")
    assert statuses.FINISHED == _texts(conn, "select conductor.finished_statuses()::text[]")


def test_retryable_is_what_retry_takes(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """retry() requeues a task in each RETRYABLE status and refuses every other status (QC204)."""
    taken = []
    for status in statuses.ALL:
        with conn.transaction(force_rollback=True):
            task_id = conn.execute("select conductor.enqueue(kind => 'statuses.k', queue => 'statuses')").fetchone()
            assert task_id is not None
            finished = "now()" if status in statuses.FINISHED else "null"
            conn.execute(f"update conductor.tasks set status = %s, finished_at = {finished},"
                         " lease_expires_at = case when %s = 'running' then now() end,"
                         " attempt_id = case when %s = 'running' then 1 end where id = %s",
                         (status, status, status, task_id[0]))  # fmt: skip
            try:
                with conn.transaction():
                    conn.execute("select conductor.retry(task_id => %s)", task_id)
                taken.append(status)
            except psycopg.Error as exc:
                assert exc.sqlstate == "QC204", exc
    assert tuple(taken) == statuses.RETRYABLE
