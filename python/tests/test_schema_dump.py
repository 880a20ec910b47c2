"""sql/schema.dump.sql is what a fresh deploy of sqitch.plan leaves (issue 28).

The schema comes from about fifty sqitch changes, a table from several of them;
the dump shows what they add up to, so a reviewer reads a schema change as a
diff of one file. It is PostgreSQL 15's pg_dump: another server prints the
same schema differently, so the comparison runs on 15 only.
"""

from __future__ import annotations

import psycopg
import pytest
from conftest import Cluster
from helpers import assert_generated, load_script

dump = load_script("schema_dump")


def test_the_committed_dump_is_a_fresh_deploy(cluster: Cluster, dsn: str) -> None:
    if dump.server_major(dsn) != dump.MAJOR:
        pytest.skip(f"sql/schema.dump.sql is PostgreSQL {dump.MAJOR}'s dump")
    assert_generated(dump.OUTPUT, dump.generate(dsn, cluster.bindir / "pg_dump"), "a fresh deploy")


def test_the_dump_leaves_out_what_varies_between_machines(dsn: str) -> None:
    text = dump.normalize("\\restrict AbC\n-- Dumped from database version 15.15\nCREATE SCHEMA conductor;\n"
                          "-- Dumped by pg_dump version 15.15\n\\unrestrict AbC\n")  # fmt: skip
    assert text == dump.HEADER + "CREATE SCHEMA conductor;\n"
    # and the file holds what it says: the engine's tables and functions, with their grants
    committed = dump.OUTPUT.read_text()
    for needle in ("CREATE TABLE conductor.tasks (", "CREATE FUNCTION conductor.claim(",
                   "GRANT SELECT ON TABLE conductor.tasks TO conductor_client;"):  # fmt: skip
        assert needle in committed
    with psycopg.connect(dsn) as conn:
        row = conn.execute("select count(*) from pg_proc where pronamespace = 'conductor'::regnamespace").fetchone()
    assert row is not None and row[0] == committed.count("CREATE FUNCTION conductor.")
