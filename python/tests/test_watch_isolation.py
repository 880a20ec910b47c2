"""A client's open transaction freezes no worker (issue 25), with a real worker process.

v0.2.0: ``watch()`` read the task FOR SHARE and kept the lock to the caller's
commit, so a conductor_client login that did ``begin; select
conductor.watch(a); select conductor.watch(b);`` and stayed open (a web
request waiting for a result inside its own transaction) hid b from every
claim (SKIP LOCKED) and made the worker's complete_many of a, and its
heartbeat, wait for as long as the transaction stayed open: six finished
tasks stayed ``running`` for the 15 s it did. Likewise a client's
``cancel()`` (or ``emit_event()``) left open locks task rows, and one such
row stalled every report of the batch and after it.

Now watch() leaves no lock, and a report that meets a row another session
holds skips it ('locked'), stores the rest, and sends that one again once the
holder ends: nothing is lost, nothing else waits.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import wait_until
from lifecycle.runner import SCENARIO, node_problem, starter
from processes import Spawn, spawner
from psycopg.conninfo import make_conninfo

from pyconductor import Conductor

Conn = psycopg.Connection[Any]
ROLES = itertools.count()
FEW = 5.0  # seconds: every task finishes within this while the client's transaction stays open


@pytest.fixture
def spawn(db_dsn: str, tmp_path: Path) -> Iterator[Spawn]:
    with spawner(db_dsn, tmp_path, "apps.proc_app:app", "--heartbeat", "0.5", "--poll", "30", "--reap", "30",
                 named=False) as start:  # fmt: skip
        yield start


@pytest.fixture
def side_table(db_conn: Conn) -> Conn:
    db_conn.execute("create table executions (task_id bigint, attempt_id bigint, pid integer)")
    return db_conn


@pytest.fixture
def client(db_dsn: str, db_conn: Conn) -> Iterator[Conn]:
    """A connection as a login that holds conductor_client only, not autocommit."""
    role = f"t_watch_client_{os.getpid()}_{next(ROLES)}"
    db_conn.execute(f"create role {role} login in role conductor_client")
    try:
        with psycopg.connect(make_conninfo(db_dsn, user=role)) as conn:
            yield conn
            conn.rollback()
    finally:
        db_conn.execute(f"drop role {role}")


def status(conn: Conn, task_id: int) -> str:
    return str(conn.execute("select status from conductor.tasks where id = %s", (task_id,)).fetchone()[0])


def statuses(conn: Conn, ids: list[int]) -> list[str]:
    return [status(conn, i) for i in ids]


def test_a_client_holding_watch_open_hides_no_task_and_stalls_no_report(
    spawn: Spawn, side_table: Conn, client: Conn, db_dsn: str
) -> None:
    worker = spawn("--concurrency", "1")
    wait_until(lambda: side_table.execute("select count(*) from conductor.sleepers").fetchone()[0] == 1,
               timeout=30, message="the worker went idle")  # fmt: skip
    with Conductor(db_dsn, pool_max=1) as app:
        a = app.enqueue("sleep", {"seconds": 0.5})
        wait_until(lambda: status(side_table, a) == "running", message="the worker runs a")
        b = app.enqueue("record", {"n": 0})  # queued: the worker's one slot is busy
        # the client waits for both results inside its own transaction, and leaves it open
        assert client.execute("select status::text from conductor.watch(%s)", (a,)).fetchone()[0] == "running"
        assert client.execute("select status::text from conductor.watch(%s)", (b,)).fetchone()[0] == "queued"
        assert client.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        more = [app.enqueue("record", {"n": n}) for n in range(1, 6)]
        wait_until(lambda: statuses(side_table, [a, b, *more]) == ["succeeded"] * 7, timeout=FEW,
                   message=lambda: f"statuses {statuses(side_table, [a, b, *more])} while the client's "
                                   f"transaction stays open\n{worker.output()[-2000:]}")  # fmt: skip
        assert client.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS, "still open throughout"
        ran = side_table.execute("select task_id, count(*) from executions group by 1 order by 1").fetchall()
        assert ran == [(i, 1) for i in sorted([a, b, *more])], "each task ran once"
    client.rollback()


def test_a_client_holding_cancel_open_stalls_none_of_the_other_reports(
    spawn: Spawn, side_table: Conn, client: Conn, db_dsn: str
) -> None:
    worker = spawn("--concurrency", "4")
    wait_until(lambda: side_table.execute("select count(*) from conductor.sleepers").fetchone()[0] == 1,
               timeout=30, message="the worker went idle")  # fmt: skip
    with Conductor(db_dsn, pool_max=1) as app:
        ids = app.enqueue_many([("sleep", {"seconds": 1.0}) for _ in range(4)])
        wait_until(lambda: statuses(side_table, ids) == ["running"] * 4, message="all four run")
        held, others = ids[0], ids[1:]
        # the client cancels one running task in a transaction it leaves open: it holds that task's row
        assert client.execute("select conductor.cancel(%s)", (held,)).fetchone()[0] == 1
        wait_until(lambda: statuses(side_table, others) == ["succeeded"] * 3, timeout=FEW,
                   message=lambda: f"statuses {statuses(side_table, ids)} while the client's cancel stays open\n"
                                   f"{worker.output()[-2000:]}")  # fmt: skip
        wait_until(lambda: side_table.execute("select count(*) from executions").fetchone()[0] == 4)
        assert status(side_table, held) == "running", "the held task is as committed: running, its result unstored"
        # the held task's report met the open cancel's lock: the worker says it will send it again
        wait_until(lambda: "sending it again later" in worker.output(), timeout=FEW,
                   message=lambda: worker.output()[-2000:])  # fmt: skip
        # the client rolls back: the worker's result, kept, is stored at its next try
        client.rollback()
        wait_until(lambda: status(side_table, held) == "succeeded", timeout=FEW,
                   message=lambda: f"the held task's result was lost\n{worker.output()[-2000:]}")  # fmt: skip
        info = app.get(held)
        assert info.result == {"slept": 1.0} and len(info.attempts) == 1, "stored from the one run, not rerun"
        assert side_table.execute("select count(*) from executions where task_id = %s", (held,)).fetchone()[0] == 1


def test_a_client_committing_its_cancel_meanwhile_gets_the_task_cancelled(
    spawn: Spawn, side_table: Conn, client: Conn, db_dsn: str
) -> None:
    worker = spawn("--concurrency", "2")
    wait_until(lambda: side_table.execute("select count(*) from conductor.sleepers").fetchone()[0] == 1,
               timeout=30, message="the worker went idle")  # fmt: skip
    with Conductor(db_dsn, pool_max=1) as app:
        ids = app.enqueue_many([("sleep", {"seconds": 0.5}) for _ in range(2)])
        wait_until(lambda: statuses(side_table, ids) == ["running"] * 2, message="both run")
        held, other = ids
        assert client.execute("select conductor.cancel(%s)", (held,)).fetchone()[0] == 1
        wait_until(lambda: status(side_table, other) == "succeeded", timeout=FEW,
                   message=lambda: f"statuses {statuses(side_table, ids)}\n{worker.output()[-2000:]}")  # fmt: skip
        wait_until(lambda: "sending it again later" in worker.output(), timeout=FEW, message=worker.output)
        client.commit()
        assert status(side_table, held) == "cancelled"
        wait_until(lambda: "refused: cancelled" in worker.output(), timeout=FEW,
                   message=lambda: f"the worker never learnt of the cancel\n{worker.output()[-2000:]}")  # fmt: skip
        assert status(side_table, held) == "cancelled", "the result sent again did not overwrite the cancel"


@pytest.mark.parametrize("language", ["python", "node"])
def test_reports_that_meet_a_held_row_wait_their_turn_in_any_language(
    language: str, side_table: Conn, client: Conn, db_dsn: str, tmp_path: Path
) -> None:
    """The same with the lifecycle workers of both languages, for a result
    (complete_many for Python, complete for Node: 55P03) and a failure (fail,
    which waits 500 ms for the row, then 55P03): the client holds both rows,
    the third task's result is stored at once, and once the client rolls back
    the two reports kept are stored, each task having run once."""
    if language == "node" and (problem := node_problem()):
        pytest.skip(problem)
    side_table.execute(SCENARIO["side_table"])
    with starter(language, db_dsn, tmp_path, "--lease", "30") as start, Conductor(db_dsn, pool_max=1) as app:
        worker = start(f"{language}-held")
        done, other = app.enqueue_many([("lifecycle.wait", {"seconds": 1.0}), ("lifecycle.wait", {"seconds": 1.0})])
        slow = app.enqueue("lifecycle.wait", {"seconds": 60}, timeout=1.5)
        ids = [done, other, slow]
        wait_until(lambda: statuses(side_table, ids) == ["running"] * 3, timeout=30,
                   message=lambda: f"statuses {statuses(side_table, ids)}\n{worker.output()[-2000:]}")  # fmt: skip
        for held in (done, slow):
            assert client.execute("select conductor.cancel(%s)", (held,)).fetchone()[0] == 1
        wait_until(lambda: status(side_table, other) == "succeeded", timeout=FEW,
                   message=lambda: f"statuses {statuses(side_table, ids)}\n{worker.output()[-2000:]}")  # fmt: skip
        # the held task past its deadline: its worker stopped it and its fail waits its turn too
        wait_until(lambda: side_table.execute(
            "select count(*) from lifecycle_log where task_id = %s and event = 'observed'", (slow,)).fetchone()[0] == 1,
            timeout=FEW, message=lambda: f"the slow task was not stopped\n{worker.output()[-2000:]}")  # fmt: skip
        wait_until(lambda: worker.output().count("again") >= 2, timeout=FEW,
                   message=lambda: f"both reports met the held rows\n{worker.output()[-2000:]}")  # fmt: skip
        assert statuses(side_table, [done, slow]) == ["running", "running"], "as committed: nothing stored yet"
        client.rollback()
        wait_until(lambda: statuses(side_table, ids) == ["succeeded", "succeeded", "failed"], timeout=FEW,
                   message=lambda: f"statuses {statuses(side_table, ids)} after the rollback\n"
                                   f"{worker.output()[-2000:]}")  # fmt: skip
        assert app.get(done).result == {"cancelled": False}
        assert "timed out after 1.5 s" in (app.get(slow).error or ""), app.get(slow).error
        started = side_table.execute(
            "select task_id, count(*) from lifecycle_log where event = 'started' group by 1 order by 1").fetchall()
        assert started == [(i, 1) for i in sorted(ids)], "each task ran once"
