"""app.exclusive(name): a lock held for the caller's transaction (conductor.exclusive:
a row of conductor.exclusive_locks, which only the engine's functions lock).

Two real processes loop on ``with app.exclusive("x"):`` and record, inside
each section, when they entered and left it (the database's clock); no two
sections overlap. Both start together behind an advisory-lock barrier the
test holds, so they contend from the first section. A login without grants
holding v0.2.0's advisory key of a name makes no exclusive() of it wait."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from helpers import wait_until
from squatter import Squatter

from pyconductor import Conductor, InvalidArgument

SECTIONS = 100  # per process
BARRIER = 731_017  # an advisory key the test holds until both children wait on it

CHILD = r"""
import sys
import psycopg
from pyconductor import Conductor

dsn, who, n, barrier = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with psycopg.connect(dsn, autocommit=True) as c:  # wait for the start
    c.execute("select pg_advisory_lock_shared(%s)", [barrier])
    c.execute("select pg_advisory_unlock_shared(%s)", [barrier])
with Conductor(dsn, pool_max=2) as app:
    for i in range(n):
        with app.exclusive("x") as conn:
            conn.execute("insert into sections (who, i, entered) values (%s, %s, clock_timestamp())", [who, i])
            conn.execute("select pg_sleep(0.002)")  # some work inside the section
            conn.execute("update sections set exited = clock_timestamp() where who = %s and i = %s", [who, i])
"""


@pytest.fixture
def app(db_dsn: str) -> Iterator[Conductor]:
    with Conductor(db_dsn, pool_max=4) as a:
        yield a


def test_two_processes_never_overlap_in_an_exclusive_section(db_dsn: str, db_conn: psycopg.Connection[Any]) -> None:
    db_conn.execute("create table sections (who text, i int, entered timestamptz, exited timestamptz,"
                    " primary key (who, i))")  # fmt: skip
    db_conn.execute("select pg_advisory_lock(%s)", [BARRIER])
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, db_dsn, who, str(SECTIONS), str(BARRIER)])
             for who in ("p1", "p2")]  # fmt: skip
    try:
        wait_until(lambda: db_conn.execute(
            "select count(*) from pg_locks where locktype = 'advisory' and objid = %s and not granted",
            [BARRIER]).fetchone() == (2,), timeout=30, message="both children wait at the barrier")  # fmt: skip
        db_conn.execute("select pg_advisory_unlock(%s)", [BARRIER])
        for p in procs:
            assert p.wait(120) == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()

    rows = db_conn.execute("select who, entered, exited from sections order by entered").fetchall()
    assert len(rows) == 2 * SECTIONS
    assert all(exited is not None for _, _, exited in rows)
    overlaps = [(a, b) for a, b in zip(rows, rows[1:]) if b[1] < a[2]]
    assert overlaps == [], f"{len(overlaps)} sections began before the previous one ended: {overlaps[:3]}"
    # they contended: each process's sections are spread across the other's
    switches = sum(1 for a, b in zip(rows, rows[1:]) if a[0] != b[0])
    assert switches > 1


def test_on_the_callers_connection_the_lock_lasts_until_its_transaction_ends(
    app: Conductor, db_dsn: str, db_conn: psycopg.Connection[Any]
) -> None:
    def holders() -> int:
        """1 while another transaction's exclusive('order:7') waits (it gives up after 0.1 s), else 0."""
        try:
            with db_conn.transaction():
                db_conn.execute("set local lock_timeout = '100ms'")
                db_conn.execute("select conductor.exclusive('order:7')")
            return 0
        except psycopg.errors.LockNotAvailable:
            return 1

    with psycopg.connect(db_dsn) as conn:
        with app.exclusive("order:7", conn=conn) as held:
            assert held is conn
            assert holders() == 1
        assert holders() == 1  # the caller's transaction is still open
        conn.commit()
        assert holders() == 0

    with app.exclusive("order:7") as pooled:
        assert holders() == 1
        assert pooled.execute("select 1").fetchone() == (1,)
    assert holders() == 0

    with pytest.raises(RuntimeError), app.exclusive("order:7"):
        raise RuntimeError("the body failed")
    assert holders() == 0  # rolled back, released


def test_exclusive_refuses_an_empty_name_and_an_autocommit_connection_outside_a_transaction(
    app: Conductor, db_dsn: str
) -> None:
    with pytest.raises(InvalidArgument), app.exclusive(""):
        pass
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        with pytest.raises(InvalidArgument, match="needs a transaction"), app.exclusive("x", conn=conn):
            pass
        with conn.transaction(), app.exclusive("x", conn=conn):
            pass


def test_a_login_without_grants_holding_v020s_key_makes_no_exclusive_wait(app: Conductor, db_dsn: str) -> None:
    """v0.2.0's exclusive(name) waited for pg_advisory_xact_lock(hashtextextended('conductor.exclusive:'
    || name, 0)), which any login could hold for ever. Now the squatter's key changes nothing."""
    with Squatter(db_dsn) as squatter:
        assert squatter.grants() == []
        assert squatter.take_v020_keys(exclusive=["order:8"]) >= 1
        with psycopg.connect(db_dsn) as conn:
            conn.execute("set lock_timeout = '2s'")
            with app.exclusive("order:8", conn=conn):
                pass  # on v0.2.0: canceling statement due to lock timeout
            conn.commit()
