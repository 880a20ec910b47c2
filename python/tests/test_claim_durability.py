"""A claim that commits without waiting for its WAL flush (``durable => false``, as the
worker claims) never hands out a fencing token twice, on a real server that crashes.

Each test starts its own cluster, since it crashes it (``pg_ctl stop -m immediate``:
no shutdown checkpoint, WAL not yet written is lost, the next start recovers).
Crash recovery empties the unlogged ``conductor.claim_epoch``, and the first claim
after it moves the attempt ids 10^9 past the sequence's value; a clean restart keeps
the row and the ids go on.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from pyconductor.dev.devdb import DevDB, throwaway_cluster
from pyconductor.migrate import migrate

CLAIM = ("select task_id, attempt_id from conductor.claim(worker_id => %s, queues => array['durable'],"
         " max_tasks => 1, durable => false)")
JUMP = 1_000_000_000


@pytest.fixture
def server() -> Iterator[tuple[DevDB, str]]:
    with throwaway_cluster(dbname="durable") as db:
        url = db.url("durable")
        migrate(url, progress=lambda line: None)
        yield db, url


def enqueue(url: str, n: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("select conductor.enqueue('k', '{}', 'durable') from generate_series(1, %s)", [n])


def claim(url: str, worker: str) -> tuple[int, int]:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(CLAIM, [worker]).fetchone()
    assert row is not None, "nothing to claim"
    return int(row[0]), int(row[1])


def epoch_rows(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("select count(*) from conductor.claim_epoch").fetchone()
    assert row is not None
    return int(row[0])


def test_a_crash_moves_the_attempt_ids_past_any_a_lost_claim_held(server: tuple[DevDB, str]) -> None:
    db, url = server
    enqueue(url, 3)
    task, before = claim(url, "w-before")
    db.stop(mode="immediate")
    db.start("durable")

    assert epoch_rows(url) == 0, "crash recovery empties conductor.claim_epoch (unlogged)"
    with psycopg.connect(url, autocommit=True) as conn:
        survived = conn.execute(
            "select count(*) from conductor.tasks where id = %s and status = 'running' and attempt_id = %s",
            [task, before]).fetchone()  # fmt: skip
    _, after = claim(url, "w-after")
    assert after > before + JUMP - 1, "the first claim after recovery starts 10^9 past the sequence"
    assert epoch_rows(url) == 1
    _, next_one = claim(url, "w-after")
    assert next_one == after + 1, "one move only"

    with psycopg.connect(url, autocommit=True) as conn:
        answer = conn.execute("select attempt_id, state from conductor.complete_many(%s)", [[before]]).fetchall()
        held = conn.execute("select count(*) from conductor.attempts where id = %s", [before]).fetchone()
    if survived and survived[0]:
        # the claim's WAL reached disk before the crash: its holder still holds the task
        assert answer == [] and held == (1,)
    else:
        # the claim was lost: its holder's report is refused, and its token names nothing
        assert answer == [(before, "lost")] and held == (0,)


def test_a_clean_restart_keeps_the_ids_going(server: tuple[DevDB, str]) -> None:
    db, url = server
    enqueue(url, 2)
    _, before = claim(url, "w")
    db.restart()
    assert epoch_rows(url) == 1, "a clean shutdown keeps the unlogged row"
    _, after = claim(url, "w")
    assert after == before + 1
