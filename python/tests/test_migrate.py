"""pyconductor.migrate: plan parsing, and deploying for real (temporary plans and the real one)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest
from helpers import REPO
from hypothesis import given
from hypothesis import strategies as st

if TYPE_CHECKING:
    from conftest import Cluster

from pyconductor.migrate import (
    Change,
    DriftError,
    MigrateError,
    PlanError,
    applied_changes,
    migrate,
    parse_plan,
    sql_root,
    status,
    strip_transaction,
)

HEADER = "%syntax-version=1.0.0\n%project=demo\n%uri=https://demo.invalid/\n\n"
STAMP = "2026-01-01T00:00:00Z Tester <t@example.invalid>"


def quiet(line: str) -> None:
    pass


# -- plan parsing (no database) ----------------------------------------------------


def test_parse_plan_reads_changes_and_skips_the_rest() -> None:
    plan = parse_plan(
        HEADER
        + "# a comment line\n"
        + f"schema/base {STAMP} # The base schema\n"
        + "\n"
        + f"functions/x [schema/base !functions/old other:thing] {STAMP} # Notes may hold # and [brackets]\n"
        + f"@v1.0 {STAMP} # a tag\n"
        + f"plain {STAMP}\n"
    )
    assert plan.project == "demo"
    assert [c.name for c in plan.changes] == ["schema/base", "functions/x", "plain"]
    base, x, plain = plan.changes
    assert base.note == "The base schema" and base.requires == ()
    assert x.requires == ("schema/base", "other:thing")
    assert x.conflicts == ("functions/old",)
    assert x.note == "Notes may hold # and [brackets]"
    assert x.planner == "Tester" and x.planned_at == "2026-01-01T00:00:00Z"
    assert plain.note == "" and plain.script_name == "plain"


def test_parse_plan_names_reworked_scripts_by_the_following_tag() -> None:
    plan = parse_plan(
        HEADER
        + f"a {STAMP}\n"
        + f"f [a] {STAMP}\n"
        + f"@v0.1 {STAMP}\n"
        + f"g {STAMP}\n"
        + f"@v0.2 {STAMP}\n"
        + f"f [f@v0.1] {STAMP} # reworked\n"
    )
    f_old, f_new = plan.changes[1], plan.changes[3]
    assert (f_old.name, f_old.occurrence, f_old.script_name) == ("f", 1, "released/f@v0.1")
    assert (f_new.name, f_new.occurrence, f_new.script_name) == ("f", 2, "f")
    assert [f_old.script(k) for k in ("deploy", "revert", "verify")] == [
        "released/f@v0.1.sql", "released/revert/f@v0.1.sql", "released/verify/f@v0.1.sql"]
    assert [f_new.script(k) for k in ("deploy", "revert", "verify")] == ["f.sql", "revert/f.sql", "verify/f.sql"]
    assert f_new.key == "f#2"


def test_parse_plan_rejects_garbage_with_the_line_number() -> None:
    with pytest.raises(PlanError, match="line 5"):
        parse_plan(HEADER + "this is not a change\n")


def test_the_real_plan_parses_and_its_scripts_exist() -> None:
    plan = parse_plan((REPO / "sqitch.plan").read_text())
    assert plan.project == "conductor"
    assert plan.changes, "sqitch.plan lists no changes"
    names = [c.name for c in plan.changes]
    for position, change in enumerate(plan.changes):
        for dep in change.requires:
            assert dep.split("@")[0] in names[:position], f"{change.key} requires {dep} first"
        for kind in ("deploy", "revert", "verify"):
            assert (REPO / "sql" / change.script(kind)).is_file(), f"no {kind} script for {change.key}"
    assert {"v0.1.0", "v0.2.0"} <= set(plan.tags), "the released v0.1.0 and v0.2.0 are tagged in the plan"
    current = {c.script() for c in plan.changes if not c.script_name.startswith("released/")}
    on_disk = {str(p.relative_to(REPO / "sql")) for d in ("schema", "functions") for p in (REPO / "sql" / d).glob("*.sql")}
    assert on_disk == current, "sql/schema and sql/functions hold the current scripts and nothing else"
    assert sql_root() in (REPO, Path(__import__("pyconductor").__file__).parent / "_sql")


def test_strip_transaction_removes_only_the_outer_pair() -> None:
    script = (
        "-- Deploy demo:f to pg\n\n"
        "BEGIN;\n\n"
        "create procedure p() language plpgsql as $$\nbegin\n  commit;\nend $$;\n\n"
        "COMMIT;\n-- trailing comment\n"
    )
    out = strip_transaction(script)
    assert "BEGIN;" not in out and "COMMIT;" not in out
    assert "  commit;" in out  # inside the procedure body: untouched
    assert out.count("\n") == script.count("\n")  # line numbers in errors stay right


def test_strip_transaction_leaves_scripts_without_a_transaction_alone() -> None:
    script = "create table t (x int);\ncommit;\ncreate table u (x int);\n"
    assert strip_transaction(script) == script


@given(st.lists(st.sampled_from(["create table t (x int);", "-- c", "", "select 1;"]), max_size=6))
def test_strip_transaction_is_identity_on_wrapped_bodies(body: list[str]) -> None:
    inner = "\n".join(body)
    wrapped = strip_transaction(f"BEGIN;\n{inner}\nCOMMIT;\n")
    assert wrapped.splitlines()[1 : 1 + len(body)] == body


# -- deploying temporary plans ---------------------------------------------------------


def write_plan(root: Path, scripts: dict[str, str]) -> Path:
    """A plan with one change per script, in order; scripts written sqitch-style."""
    lines = [HEADER]
    for name, body in scripts.items():
        path = root / "sql" / f"{name}.sql"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"-- Deploy demo:{name} to pg\n\nBEGIN;\n\n{body}\n\nCOMMIT;\n")
        lines.append(f"{name} {STAMP} # {name}\n")
    plan = root / "sqitch.plan"
    plan.write_text("".join(lines))
    return plan


SCRIPTS = {
    "schema/demo": "create schema demo;",
    "schema/items": "create table demo.items (id int primary key, label text default '100%');",
    "functions/count": "create function demo.count_items() returns bigint language sql\n"
    "as $$ select count(*) from demo.items $$;",
}


def test_migrate_applies_in_order_and_is_idempotent(empty_dsn: str, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, SCRIPTS)
    lines: list[str] = []
    applied = migrate(empty_dsn, plan_path=plan, sql_dir=tmp_path / "sql", progress=lines.append)
    assert [c.name for c in applied] == list(SCRIPTS)
    assert lines[:3] == [f"  + {name}" for name in SCRIPTS]
    with psycopg.connect(empty_dsn) as conn:
        assert conn.execute("select demo.count_items()").fetchone() == (0,)
        recorded = conn.execute(
            "select change, script_sha256, applied_at is not null from conductor_registry.changes"
            " where project = 'demo' order by applied_at"
        ).fetchall()
    assert [r[0] for r in recorded] == list(SCRIPTS)
    assert all(len(str(r[1])) == 64 and r[2] for r in recorded)

    assert migrate(empty_dsn, plan_path=plan, sql_dir=tmp_path / "sql", progress=quiet) == []


def test_migrate_applies_only_new_changes(empty_dsn: str, tmp_path: Path) -> None:
    first = dict(list(SCRIPTS.items())[:2])
    migrate(empty_dsn, plan_path=write_plan(tmp_path, first), sql_dir=tmp_path / "sql", progress=quiet)
    applied = migrate(empty_dsn, plan_path=write_plan(tmp_path, SCRIPTS), sql_dir=tmp_path / "sql", progress=quiet)
    assert [c.name for c in applied] == ["functions/count"]


def test_a_failing_change_rolls_back_and_names_itself(empty_dsn: str, tmp_path: Path) -> None:
    scripts = {**SCRIPTS, "schema/broken": "create table demo.half (x int);\nselect no_such_function();"}
    plan = write_plan(tmp_path, scripts)
    with pytest.raises(MigrateError, match="schema/broken"):
        migrate(empty_dsn, plan_path=plan, sql_dir=tmp_path / "sql", progress=quiet)
    with psycopg.connect(empty_dsn) as conn:
        assert conn.execute("select to_regclass('demo.half')").fetchone() == (None,)
        assert set(applied_changes(conn, "demo")) == {(name, 1) for name in SCRIPTS}


def test_a_missing_script_fails_before_anything_is_applied(empty_dsn: str, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, SCRIPTS)
    (tmp_path / "sql" / "functions" / "count.sql").unlink()
    with pytest.raises(MigrateError, match="functions/count.*not found"):
        migrate(empty_dsn, plan_path=plan, sql_dir=tmp_path / "sql", progress=quiet)
    with psycopg.connect(empty_dsn) as conn:
        assert conn.execute("select to_regnamespace('demo')").fetchone() == (None,)


def test_drift_refuses_and_applies_nothing(empty_dsn: str, tmp_path: Path) -> None:
    first = dict(list(SCRIPTS.items())[:2])
    migrate(empty_dsn, plan_path=write_plan(tmp_path, first), sql_dir=tmp_path / "sql", progress=quiet)
    plan = write_plan(tmp_path, SCRIPTS)  # the third change is pending
    edited = tmp_path / "sql" / "schema" / "items.sql"
    edited.write_text(edited.read_text().replace("100%", "edited after release"))
    with pytest.raises(DriftError, match="schema/items") as raised:
        migrate(empty_dsn, plan_path=plan, sql_dir=tmp_path / "sql", progress=quiet)
    assert [c.name for c in raised.value.drifted] == ["schema/items"]
    with psycopg.connect(empty_dsn) as conn:
        assert set(applied_changes(conn, "demo")) == {("schema/demo", 1), ("schema/items", 1)}
    state = status(empty_dsn, plan_path=plan, sql_dir=tmp_path / "sql")
    assert [c.name for c in state.drifted] == ["schema/items"]
    assert [c.name for c in state.pending] == ["functions/count"]


def test_cli_migrate_check_answers_by_exit_code(empty_dsn: str, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, SCRIPTS)
    env = {**os.environ, "CONDUCTOR_DSN": empty_dsn, "CONDUCTOR_PLAN": str(plan), "CONDUCTOR_SQL_DIR": str(tmp_path / "sql")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pyconductor", "migrate", *args], capture_output=True,
                              text=True, env=env, timeout=120, check=False)  # fmt: skip

    pending = run("--check")
    assert pending.returncode == 3 and "pending: 3 change(s)" in pending.stdout, pending
    assert run().returncode == 0
    current = run("--check")
    assert current.returncode == 0 and current.stdout.strip().endswith("up to date"), current
    count = tmp_path / "sql" / "functions" / "count.sql"
    count.write_text(count.read_text().replace("count(*)", "count(1)"))
    drifted = run("--check")
    assert drifted.returncode == 4 and "! functions/count" in drifted.stdout, drifted
    refused = run()
    assert refused.returncode == 4, refused
    assert "drift" in refused.stderr and "functions/count" in refused.stderr and "nothing was applied" in refused.stderr


def test_cli_migrate_keeps_the_password_out_of_its_error(tmp_path: Path) -> None:
    env = {**os.environ, "CONDUCTOR_DSN": "postgresql://nobody:s3cret-pw@127.0.0.1:1/none"}
    run = subprocess.run([sys.executable, "-m", "pyconductor", "migrate"], capture_output=True, text=True, env=env,
                         timeout=60, check=False)  # fmt: skip
    assert run.returncode == 1 and "cannot migrate" in run.stderr
    assert "s3cret-pw" not in run.stderr + run.stdout


def test_concurrent_migrations_serialise(empty_dsn: str, tmp_path: Path) -> None:
    scripts = {**SCRIPTS, "slow": "select pg_sleep(0.3);"}
    plan = write_plan(tmp_path, scripts)
    results: list[list[Change]] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(migrate(empty_dsn, plan_path=plan, sql_dir=tmp_path / "sql", progress=quiet))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert sorted(len(r) for r in results) == [0, 0, len(scripts)]


def test_cli_migrate(empty_dsn: str, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, SCRIPTS)
    env = {**os.environ, "CONDUCTOR_DSN": empty_dsn, "CONDUCTOR_PLAN": str(plan), "CONDUCTOR_SQL_DIR": str(tmp_path / "sql")}
    cmd = [sys.executable, "-m", "pyconductor", "migrate"]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert first.returncode == 0, first.stderr
    assert [line for line in first.stdout.splitlines() if line.startswith("  + ")] == [f"  + {n}" for n in SCRIPTS]
    second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert second.returncode == 0 and "0 change(s) applied" in second.stdout


def test_cli_migrate_reports_a_bad_dsn_in_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "CONDUCTOR_DSN": "postgresql://nobody@127.0.0.1:1/none"}
    run = subprocess.run(
        [sys.executable, "-m", "pyconductor", "migrate"], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert run.returncode == 1
    assert run.stderr.startswith("pyconductor: error: cannot migrate")


# -- the real schema --------------------------------------------------------------------


def test_real_plan_migrate_is_idempotent(db_dsn: str) -> None:
    # db_dsn is a clone of the template, which migrate() already deployed.
    assert migrate(db_dsn, progress=quiet) == []
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("select to_regnamespace('conductor') is not null").fetchone() == (True,)
        plan = parse_plan((sql_root() / "sqitch.plan").read_text())
        assert set(applied_changes(conn)) == {(c.name, c.occurrence) for c in plan.changes}


@pytest.mark.skipif(shutil.which("sqitch") is None, reason="sqitch is not installed (scripts/install-deps.sh installs it)")
def test_migrate_and_sqitch_deploy_the_same_schema(cluster: Cluster, empty_dsn: str, db_dsn: str, tmp_path: Path) -> None:
    sqitch_db = str(psycopg.conninfo.conninfo_to_dict(empty_dsn)["dbname"])
    migrate_db = str(psycopg.conninfo.conninfo_to_dict(db_dsn)["dbname"])
    deploy = cluster.sqitch(sqitch_db, "deploy", "--verify", home=tmp_path)
    assert deploy.returncode == 0, deploy.stdout + deploy.stderr
    assert cluster.schema_dump(migrate_db) == cluster.schema_dump(sqitch_db)
