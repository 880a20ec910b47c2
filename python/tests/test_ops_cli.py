"""The operator's commands as an operator runs them: ``python -m pyconductor ...``
subprocesses against a real database, checking output and exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from typing import Any

import psycopg
import pytest

from helpers import REPO

ENV = {k: v for k, v in os.environ.items() if k not in ("CONDUCTOR_DSN", "DATABASE_URL")}
ENV["PYTHONPATH"] = str(REPO / "python")

Conn = psycopg.Connection[tuple[Any, ...]]


def cli(dsn: str | None, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    extra = ["--dsn", dsn] if dsn else []
    return subprocess.run([sys.executable, "-m", "pyconductor", *args, *extra], capture_output=True, text=True,
                          env={**ENV, **(env or {})}, cwd=REPO, timeout=60, check=False)  # fmt: skip


def enqueue(conn: Conn, queue: str, kind: str = "k", **options: Any) -> int:
    spec = json.dumps([{"kind": kind, "queue": queue, **options}])
    return int(conn.execute("select id from conductor.enqueue_many(%s::jsonb) as id", (spec,)).fetchone()[0])


def claim(conn: Conn, queue: str) -> int:
    return int(conn.execute("select attempt_id from conductor.claim('w-test', array[%s], 1, interval '1 minute')",
                            (queue,)).fetchone()[0])  # fmt: skip


def finish(conn: Conn, queue: str, ok: bool = True, traceback: str | None = None) -> int:
    """Enqueue one task, claim the first ready one of the queue and finish it; its id."""
    enqueue(conn, queue)
    attempt = claim(conn, queue)
    task = int(conn.execute("select task_id from conductor.attempts where id = %s", (attempt,)).fetchone()[0])
    if ok:
        conn.execute("select conductor.complete(%s, '{\"done\": true}')", (attempt,))
    else:
        conn.execute("select conductor.fail(attempt_id => %s, error => 'ValueError: boom', traceback => %s)",
                     (attempt, traceback))  # fmt: skip
    return task


@pytest.fixture
def busy(db_conn: Conn) -> dict[str, int]:
    """Two queues: 'mail' with 5 ready, 1 scheduled, 1 running, 2 succeeded, 1 failed
    (10 tasks); 'img' with 1 ready."""
    ids = {"ready": enqueue(db_conn, "mail")}
    enqueue(db_conn, "mail")
    enqueue(db_conn, "mail", run_at="2999-01-01T00:00:00Z")
    ids["ok1"] = finish(db_conn, "mail")
    ids["ok2"] = finish(db_conn, "mail")
    ids["failed"] = finish(db_conn, "mail", ok=False, traceback="Traceback (most recent call last):\n  File \"h.py\"\nValueError: boom")
    ids["running"] = enqueue(db_conn, "mail")
    claim(db_conn, "mail")
    enqueue(db_conn, "mail")
    enqueue(db_conn, "mail")
    enqueue(db_conn, "mail")
    ids["img"] = enqueue(db_conn, "img")
    return ids


def test_stats_table_and_json(db_dsn: str, busy: dict[str, int]) -> None:
    out = cli(db_dsn, "stats")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split()[:7] == ["QUEUE", "READY", "SCHED", "RUNNING", "WAITING", "UNRUNNABLE", "BACKLOG"]
    assert [line.split()[0] for line in lines[1:]] == ["img", "mail"]
    data = json.loads(cli(db_dsn, "stats", "--json").stdout)
    mail = next(r for r in data if r["queue"] == "mail")
    assert (mail["ready"], mail["scheduled"], mail["running"], mail["waiting"]) == (5, 1, 1, 0)
    assert (mail["succeeded_15m"], mail["failed_15m"]) == (2, 1)
    assert mail["failure_rate"] == pytest.approx(1 / 3)
    assert isinstance(mail["oldest_ready_age"], float) and mail["oldest_ready_age"] >= 0
    only = json.loads(cli(db_dsn, "stats", "--json", "--queue", "img").stdout)
    assert [r["queue"] for r in only] == ["img"]


def test_stats_shows_the_queued_tasks_no_live_worker_can_run(db_dsn: str, db_conn: Conn) -> None:
    db_conn.execute("select conductor.register_worker(worker_id => 'w', queues => array['mail'], kinds => array['k'])")
    enqueue(db_conn, "mail", "k")
    enqueue(db_conn, "mail", "typo")
    enqueue(db_conn, "img", "k")  # no worker serves the queue
    out = cli(db_dsn, "stats")
    assert out.returncode == 0, out.stderr
    header, *rows = out.stdout.splitlines()
    at = header.split().index("UNRUNNABLE")
    assert {row.split()[0]: row.split()[at] for row in rows} == {"img": "1", "mail": "1"}
    data = json.loads(cli(db_dsn, "stats", "--json").stdout)
    assert {r["queue"]: r["unrunnable"] for r in data} == {"img": 1, "mail": 1}


def test_stats_shows_expired_tasks_and_the_queues_cap(db_dsn: str, db_conn: Conn) -> None:
    db_conn.execute("select conductor.set_queue_limit('mail', 4)")
    db_conn.execute("select conductor.enqueue('k', '{}', 'mail', run_at => now() - interval '2 hours', "
                    "expires_in => '1 hour')")  # fmt: skip
    enqueue(db_conn, "img", "k")
    assert db_conn.execute("select tasks_expired from conductor.reap_report()").fetchone() == (1,)
    out = cli(db_dsn, "stats")
    assert out.returncode == 0, out.stderr
    header, *rows = out.stdout.splitlines()
    expired, cap = header.split().index("EXPIRED/15M"), header.split().index("CAP")
    assert {row.split()[0]: (row.split()[expired], row.split()[cap]) for row in rows} == {
        "img": ("0", "-"), "mail": ("1", "4")}
    data = json.loads(cli(db_dsn, "stats", "--json").stdout)
    assert {r["queue"]: (r["expired_15m"], r["max_running"]) for r in data} == {"img": (0, None), "mail": (1, 4)}


def test_enqueue_without_app_takes_the_kinds_configuration_from_sql(db_dsn: str, db_conn: Conn) -> None:
    db_conn.execute("select conductor.configure_kind('k', queue => 'q', priority => 5)")
    out = cli(db_dsn, "enqueue", "k", "--payload", '{"a": 1}')
    assert out.returncode == 0, out.stderr
    row = db_conn.execute("select queue, priority, payload from conductor.tasks where id = %s", (int(out.stdout),))
    assert row.fetchone() == ("q", 5, {"a": 1})
    out = cli(db_dsn, "enqueue", "k", "--queue", "other", "--priority", "1")
    row = db_conn.execute("select queue, priority from conductor.tasks where id = %s", (int(out.stdout),))
    assert row.fetchone() == ("other", 1), "what the command line says wins"


def test_enqueue_takes_every_option_of_the_sql_api(db_dsn: str, db_conn: Conn) -> None:
    parent = enqueue(db_conn, "runs")
    out = cli(db_dsn, "enqueue", "k", "--concurrency-key", "acct-7", "--parent", str(parent), "--timeout", "90",
              "--max-recoveries", "1", "--backoff-base", "5 seconds", "--backoff-factor", "3",
              "--backoff-max", "10 minutes", "--max-attempts", "4")  # fmt: skip
    assert out.returncode == 0, out.stderr
    row = db_conn.execute(
        "select concurrency_key, parent_id, root_id, timeout, max_recoveries, backoff_base, backoff_factor,"
        " backoff_max, max_attempts from conductor.tasks where id = %s", (int(out.stdout),)).fetchone()  # fmt: skip
    assert row is not None
    assert (row[0], row[1], row[2], row[4], row[6], row[8]) == ("acct-7", parent, parent, 1, 3.0, 4)
    assert [d.total_seconds() for d in (row[3], row[5], row[7])] == [90, 5, 600]
    bad = cli(db_dsn, "enqueue", "k", "--timeout", "0")
    assert bad.returncode == 1 and "invalid timeout" in bad.stderr and "QC106" in bad.stderr


def test_emit_event_wakes_the_tasks_waiting_for_it(db_dsn: str, db_conn: Conn) -> None:
    task = enqueue(db_conn, "approvals")
    attempt = claim(db_conn, "approvals")
    state = db_conn.execute("select state from conductor.suspend(%s, 'wait-approval', 'event', event => 'order-7')",
                            (attempt,)).fetchone()  # fmt: skip
    assert state == ("waiting",)
    out = cli(db_dsn, "emit-event", "order-7", "--payload", '{"approved_by": "ann"}')
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "event order-7: woke 1 waiting task(s)"
    row = db_conn.execute("select status from conductor.tasks where id = %s", (task,)).fetchone()
    assert row == ("queued",)
    assert cli(db_dsn, "emit-event", "order-8").stdout.strip() == "event order-8: woke 0 waiting task(s)"
    bad = cli(db_dsn, "emit-event", "order-9", "--payload", "[1]")
    assert bad.returncode == 1 and "QC102" in bad.stderr
    assert cli(db_dsn, "emit-event", "order-9", "--payload", "{nope").returncode == 1


def test_stats_of_an_empty_database(db_dsn: str) -> None:
    out = cli(db_dsn, "stats")
    assert out.returncode == 0 and "no queues" in out.stdout
    assert json.loads(cli(db_dsn, "stats", "--json").stdout) == []


def test_health_ok_and_each_threshold(db_dsn: str, busy: dict[str, int]) -> None:
    ok = cli(db_dsn, "health", "--max-depth", "10", "--max-age", "1h", "--max-failure-rate", "0.5")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.startswith("ok: 2 queue(s), depth 6,") and len(ok.stdout.splitlines()) == 1

    deep = cli(db_dsn, "health", "--max-depth", "2")
    assert deep.returncode == 1
    assert deep.stdout.strip() == "unhealthy: queue mail: depth 5 > 2"

    failing = cli(db_dsn, "health", "--max-failure-rate", "0.2")
    assert failing.returncode == 1 and "queue mail: failure rate 0.33 > 0.2 (1 of 3 in 15m)" in failing.stdout

    old = cli(db_dsn, "health", "--max-age", "0s")
    assert old.returncode == 1 and "backlog age" in old.stdout

    assert cli(db_dsn, "health", "--max-depth", "2", "--queue", "img").returncode == 0


def test_health_thresholds_from_the_environment(db_dsn: str, busy: dict[str, int]) -> None:
    out = cli(db_dsn, "health", env={"CONDUCTOR_HEALTH_MAX_DEPTH": "1"})
    assert out.returncode == 1 and "depth 5 > 1" in out.stdout


def test_health_unreachable_database_exits_2(tmp_path: Any) -> None:
    out = cli(f"postgresql://nobody@/postgres?host={tmp_path}&port=1", "health", "--max-depth", "1")
    assert out.returncode == 2
    assert out.stderr.startswith("pyconductor: error: cannot connect to the database:")
    assert len(out.stderr.strip().splitlines()) == 1


def test_health_rejects_a_bad_duration(db_dsn: str) -> None:
    out = cli(db_dsn, "health", "--max-age", "5 parsecs")
    assert out.returncode == 2 and "invalid duration" in out.stderr  # argparse's usage error


def test_prune_loops_in_batches_with_progress(db_dsn: str, db_conn: Conn) -> None:
    db_conn.execute("update conductor.settings set fake_clock = true")  # a test database's admin allows it
    db_conn.execute("set conductor.fake_now = '2020-01-01 00:00:00+00'")
    done = [finish(db_conn, "old") for _ in range(5)]
    failed = finish(db_conn, "old", ok=False)
    keep = enqueue(db_conn, "old")
    out = cli(db_dsn, "prune", "--older-than", "7d", "--batch", "2")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "pruned 5 succeeded or cancelled task(s) and unawaited event(s) older than 7d00h"
    progress = out.stderr.strip().splitlines()
    assert progress == ["prune: batch 1: 2 row(s), 2 so far", "prune: batch 2: 2 row(s), 4 so far",
                        "prune: batch 3: 1 row(s), 5 so far"]  # fmt: skip
    left = {r[0] for r in db_conn.execute("select id from conductor.tasks where queue = 'old'")}
    assert left == {failed, keep} and not left & set(done)
    out = cli(db_dsn, "prune", "--older-than", "7d", "--include-failed")
    assert out.returncode == 0 and out.stdout.startswith("pruned 1 finished task(s) and unawaited event(s)")


def test_prune_needs_older_than(db_dsn: str) -> None:
    out = cli(db_dsn, "prune")
    assert out.returncode == 2 and "--older-than" in out.stderr


def test_prune_refused_input_is_a_clear_error(db_dsn: str) -> None:
    out = cli(db_dsn, "prune", "--older-than", "1d", "--batch", "2000000")
    assert out.returncode == 1
    assert out.stderr.startswith("pyconductor: error: invalid batch 2000000") and "[QC106]" in out.stderr


def test_tasks_list_filters_and_show(db_dsn: str, db_conn: Conn, busy: dict[str, int]) -> None:
    out = cli(db_dsn, "tasks")
    assert out.returncode == 0, out.stderr
    ids = [int(line.split()[0]) for line in out.stdout.splitlines()[1:]]
    assert ids == sorted(ids, reverse=True) and len(ids) == 11
    failed = cli(db_dsn, "tasks", "--status", "failed")
    rows = failed.stdout.splitlines()[1:]
    assert len(rows) == 1 and rows[0].split()[:2] == [str(busy["failed"]), "failed"] and "ValueError: boom" in rows[0]
    assert len(cli(db_dsn, "tasks", "--queue", "img").stdout.splitlines()) == 2
    assert len(cli(db_dsn, "tasks", "--limit", "3").stdout.splitlines()) == 4
    assert json.loads(cli(db_dsn, "tasks", "--kind", "nope", "--json").stdout) == []
    assert cli(db_dsn, "tasks", "--kind", "nope").stdout.strip() == "no tasks"

    show = cli(db_dsn, "tasks", "show", str(busy["failed"]))
    assert show.returncode == 0, show.stderr
    text = show.stdout
    assert text.startswith(f"task {busy['failed']}  failed  kind k  queue mail")
    assert "attempts (1):" in text and "worker w-test" in text
    assert "    error: ValueError: boom" in text and '    File "h.py"' in text
    assert "timeout:" not in text  # none was given
    with_limit = enqueue(db_conn, "mail", timeout="90 seconds")
    assert "  timeout:         1m30s" in cli(db_dsn, "tasks", "show", str(with_limit)).stdout
    assert "code_version:" not in text and "graph:" not in text  # none recorded
    # the code version its run started on and its graph (issue 31)
    graph = db_conn.execute("select min(graph_id) from conductor.enqueue_graph("
                            "'[{\"name\": \"a\", \"kind\": \"k\", \"queue\": \"cv-show\"}]')").fetchone()[0]
    member = db_conn.execute("select task_id from conductor.claim('w-test', array['cv-show'], 1, "
                             "code_versions => array['2026.12', '2026.11'])").fetchone()[0]  # fmt: skip
    shown = cli(db_dsn, "tasks", "show", str(member)).stdout
    assert "  code_version:    2026.12" in shown and f"  graph:           {graph}" in shown, shown


def test_tasks_search_pages_and_says_when_a_page_was_cut_short(db_dsn: str, db_conn: Conn) -> None:
    """``tasks search`` (conductor.search_tasks): the matches newest first, the cursor of the next page,
    and a page that examined --scan tasks without filling says so."""
    ids = [int(db_conn.execute("select conductor.enqueue(kind => %s, payload => %s::jsonb, queue => 'srch', "
                               "dedupe_key => %s)", (kind, json.dumps({"n": n}), f"d-{n}")).fetchone()[0])
           for n, kind in enumerate(["s.a", "s.b", "s.a", "s.b", "s.b"])]  # fmt: skip
    out = cli(db_dsn, "tasks", "search", "--kind", "s.a")
    assert out.returncode == 0, out.stderr
    assert [int(line.split()[0]) for line in out.stdout.splitlines()[1:]] == [ids[2], ids[0]]
    found = json.loads(cli(db_dsn, "tasks", "search", "--payload", '{"n": 3}', "--json").stdout)
    assert [t["id"] for t in found["tasks"]] == [ids[3]] and found["next_before_id"] is None
    paged = cli(db_dsn, "tasks", "search", "--kind", "s.b", "--limit", "1").stdout
    assert paged.splitlines()[-1] == f"older: --before {ids[4]}"
    short = cli(db_dsn, "tasks", "search", "--kind", "s.a", "--scan", "2").stdout
    assert short.splitlines()[0] == "no tasks match in the tasks examined"
    assert f"search further with --before {ids[3]}" in short
    assert [t["id"] for t in json.loads(cli(db_dsn, "tasks", "search", "--dedupe-key", "d-1", "--json").stdout)["tasks"]] \
        == [ids[1]]  # fmt: skip
    bad = cli(db_dsn, "tasks", "search", "--enqueued-after", "yesterday")
    assert bad.returncode != 0 and "not a time" in bad.stderr
    refused = cli(db_dsn, "tasks", "search", "--payload", "[1]")
    assert refused.returncode != 0 and "invalid payload_contains [1]" in refused.stderr


def test_tasks_show_lists_steps_children_and_handler_logs(db_dsn: str, db_conn: Conn) -> None:
    db_conn.execute("select conductor.register_worker(worker_id => 'w-test', queues => array['runs'])")
    parent = enqueue(db_conn, "runs")
    attempt = claim(db_conn, "runs")
    db_conn.execute("select conductor.save_step(%s, 'fetch', '{\"rows\": 3}')", (attempt,))
    child = db_conn.execute("select conductor.spawn(%s, 'child-1', 'k', '{}')", (attempt,)).fetchone()
    line = {"at": "2030-01-01T00:00:00.000Z", "level": "INFO", "logger": "app.billing", "message": "charged 3"}
    db_conn.execute("select conductor.save_log(%s, %s::jsonb)", (attempt, json.dumps([line])))
    out = cli(db_dsn, "tasks", "show", str(parent))
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "    log (1 line(s)):" in text
    assert "      2030-01-01T00:00:00.000Z INFO app.billing: charged 3" in text
    assert "steps (" in text and '  fetch  saved ' in text and '{"rows": 3}' in text
    assert child is not None and f"children (1):\n  task {child[0]}  queued  kind k  queue " in text


def test_tasks_errors(db_dsn: str) -> None:
    bad = cli(db_dsn, "tasks", "--status", "sleepy")
    assert bad.returncode == 1 and "[QC105]" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    missing = cli(db_dsn, "tasks", "show", "999999")
    assert missing.returncode == 1
    assert missing.stderr.strip() == "pyconductor: error: task 999999 does not exist [QC203]"
    assert cli(db_dsn, "tasks", "shwo", "1").returncode == 1


def test_cancel_and_retry(db_dsn: str, db_conn: Conn, busy: dict[str, int]) -> None:
    task = busy["img"]
    out = cli(db_dsn, "cancel", str(task))
    assert out.returncode == 0 and out.stdout.startswith("cancelled 1 task(s)")
    assert cli(db_dsn, "cancel", str(task)).stdout.startswith(f"task {task} was already finished")
    out = cli(db_dsn, "retry", str(task))
    assert out.returncode == 0 and out.stdout.strip() == f"task {task} is queued again"
    assert db_conn.execute("select status::text from conductor.tasks where id = %s", (task,)).fetchone() == ("queued",)
    again = cli(db_dsn, "retry", str(task))
    assert again.returncode == 1 and "[QC204]" in again.stderr
    assert cli(db_dsn, "cancel", "999999").returncode == 1


def test_status_lists_live_workers_and_leaders(db_dsn: str, db_conn: Conn) -> None:
    db_conn.execute("select conductor.register_worker(worker_id => 'w-live', host => 'box', pid => 42, "
                    "roles => array['worker', 'scheduler'], queues => array['mail'], kinds => array['k1', 'k2'])")  # fmt: skip
    db_conn.execute("select conductor.register_worker(worker_id => 'w-gone')")
    db_conn.execute("update conductor.workers set last_seen_at = now() - interval '1 hour' where id = 'w-gone'")
    db_conn.execute("select conductor.register_worker(worker_id => 'w-killed')")  # kill -9 two minutes ago
    db_conn.execute("update conductor.workers set last_seen_at = now() - interval '2 minutes' where id = 'w-killed'")
    with psycopg.connect(db_dsn, autocommit=True) as leader:
        assert leader.execute("select conductor.try_lead('scheduler')").fetchone() == (True,)
        out = cli(db_dsn, "status")
        assert out.returncode == 0, out.stderr
        live, _, rest = out.stdout.partition("silent workers")
        assert "workers seen in the last 30s: 1" in live and "w-killed" not in live
        row = next(line for line in live.splitlines() if line.startswith("w-live"))
        assert "worker,scheduler" in row and "box" in row and "mail" in row and "k1,k2" in row and "ago" in row
        assert "w-killed" in rest.split("leader leases held")[0], "a silent worker is listed apart, not as live"
        assert "w-gone" not in out.stdout
        assert "leader leases held: 1" in out.stdout and "scheduler" in out.stdout.split("leader leases held")[1]
        data = json.loads(cli(db_dsn, "status", "--json", "--seen-within", "2h").stdout)
        assert {w["id"] for w in data["workers"]} == {"w-live", "w-gone", "w-killed"}
        data = json.loads(cli(db_dsn, "status", "--json").stdout)
        assert [w["id"] for w in data["workers"]] == ["w-live"] and [w["id"] for w in data["silent"]] == ["w-killed"]
        assert [x["name"] for x in data["leaders"]] == ["scheduler"]
        assert leader.execute("select conductor.try_lead('retention'), conductor.try_lead('singleton:feed')"
                              ).fetchone() == (True, True)  # fmt: skip
        # leases are rows: every one is listed, by name (--lock, which 0.2.0 needed, changes nothing)
        data = json.loads(cli(db_dsn, "status", "--json").stdout)
        assert [x["name"] for x in data["leaders"]] == ["retention", "scheduler", "singleton:feed"]
        data = json.loads(cli(db_dsn, "status", "--json", "--lock", "singleton:feed").stdout)
        assert [x["name"] for x in data["leaders"]] == ["retention", "scheduler", "singleton:feed"]
        assert data["lock_holders"] == [], "nobody outside the engine holds its locks"


def test_dsn_from_the_environment(db_dsn: str) -> None:
    out = cli(None, "stats", env={"CONDUCTOR_DSN": db_dsn})
    assert out.returncode == 0 and "no queues" in out.stdout


def test_unmigrated_database_says_so(empty_dsn: str) -> None:
    out = cli(empty_dsn, "stats")
    assert out.returncode == 1 and "pyconductor migrate" in out.stderr


def test_tasks_into_a_closed_pipe_ends_quietly(db_dsn: str, db_conn: Conn) -> None:
    """`pyconductor tasks | head -1`: the reader leaves after one line; no BrokenPipeError traceback."""
    db_conn.execute("select count(*) from conductor.enqueue_many("
                    " (select jsonb_agg(jsonb_build_object('kind', 'k', 'queue', 'pipe')) from generate_series(1, 3000)))")
    run = subprocess.run(
        ["bash", "-c", f"{sys.executable} -m pyconductor tasks --limit 3000 --dsn '{db_dsn}' | head -1"],
        capture_output=True, text=True, env=ENV, cwd=REPO, timeout=60, check=False)  # fmt: skip
    assert run.returncode == 0 and len(run.stdout.splitlines()) == 1
    assert "Traceback" not in run.stderr and "BrokenPipe" not in run.stderr, run.stderr


def lose_and_reclaim(conn: Conn, queue: str) -> int:
    """Enqueue a task, claim it, let its lease expire, reap, claim it again and complete it."""
    task = enqueue(conn, queue)
    claim(conn, queue)
    conn.execute("update conductor.tasks set lease_expires_at = now() - interval '1 second' where id = %s", (task,))
    conn.execute("select conductor.reap()")
    conn.execute("select conductor.complete(%s, '{}')", (claim(conn, queue),))
    return task


def resumed_twice(conn: Conn, queue: str) -> int:
    """Enqueue a durable run that waits for an event, resumes, and waits for another: waiting."""
    task = enqueue(conn, queue)
    conn.execute("select conductor.suspend(%s, 'a', 'event', event => 'ev-a')", (claim(conn, queue),))
    conn.execute("select conductor.emit_event('ev-a')")
    conn.execute("select conductor.suspend(%s, 'b', 'event', event => 'ev-b')", (claim(conn, queue),))
    return task


def test_tasks_number_each_attempt_and_show_the_retry_budget_apart(db_dsn: str, db_conn: Conn) -> None:
    """Issue 27: each attempt reads #1..#n in claim order (not the budget counter, which a
    lost attempt and a wait give back: it read '#1 lost' then '#1 succeeded', and 'attempt
    0/1' for a run that ran twice); the budget reads 'tries used N of M'."""
    lost = lose_and_reclaim(db_conn, "numbers")
    text = cli(db_dsn, "tasks", "show", str(lost)).stdout
    assert re.search(r"^  #1 attempt \d+  lost  worker w-test", text, re.M), text
    assert re.search(r"^  #2 attempt \d+  succeeded  worker w-test", text, re.M), text
    assert "  tries used:      1 of 1" in text, text

    waiting = resumed_twice(db_conn, "numbers")
    text = cli(db_dsn, "tasks", "show", str(waiting)).stdout
    assert re.search(r"^  #1 attempt \d+  suspended .*\n(.*\n)*  #2 attempt \d+  suspended ", text, re.M), text
    assert "  tries used:      0 of 1" in text and "attempts (2):" in text, text

    listed = cli(db_dsn, "tasks", "--queue", "numbers").stdout.splitlines()
    assert listed[0].split()[:6] == ["ID", "STATUS", "QUEUE", "KIND", "TRIES", "USED"], listed
    assert listed[1].split()[:5] == [str(waiting), "waiting", "numbers", "k", "0/1"], listed


def test_tasks_show_says_why_a_queued_task_is_not_running(db_dsn: str, db_conn: Conn) -> None:
    db_conn.execute("select conductor.register_worker(worker_id => 'why-w', queues => '{why-q}')")
    ready = enqueue(db_conn, "why-q")
    paused = enqueue(db_conn, "why-paused")
    db_conn.execute("select conductor.pause_queue('why-paused')")
    text = cli(db_dsn, "tasks", "show", str(paused)).stdout
    assert "why it is not running:\n  queue 'why-paused' is paused (since " in text
    assert re.search(r"^  queue 'why-paused' is paused \(since .*\)  \[queue_paused\]$", text, re.MULTILINE), text
    assert re.search(r"^  no worker seen since .* on queue 'why-paused'  \[no_worker\]$", text, re.MULTILINE), text
    text = cli(db_dsn, "tasks", "show", str(ready)).stdout
    assert "why it is not running:\n  ready: next in line on queue 'why-q'  [ready]\n" in text


def test_tasks_retry_by_filter_counts_asks_then_retries_only_the_matching(db_dsn: str, db_conn: Conn) -> None:
    failed = [finish(db_conn, "bulk-cli", ok=False) for _ in range(3)]
    other = finish(db_conn, "bulk-cli-other", ok=False)
    flags = ("--queue", "bulk-cli", "--status", "failed", "--error-contains", "BOOM")
    declined = subprocess.run([sys.executable, "-m", "pyconductor", "tasks", "retry", *flags, "--dsn", db_dsn],
                              input="n\n", capture_output=True, text=True, env=ENV, cwd=REPO, timeout=60, check=False)  # fmt: skip
    assert declined.returncode == 1 and declined.stdout.startswith("3 task(s) match"), declined.stderr
    assert "nothing changed" in declined.stdout
    statuses = "select array_agg(status::text order by id) from conductor.tasks where id = any(%s)"
    assert db_conn.execute(statuses, (failed,)).fetchone() == (["failed"] * 3,)
    out = cli(db_dsn, "tasks", "retry", *flags, "--yes", "--batch", "2")
    assert out.returncode == 0 and out.stdout.strip().endswith("retried: 3 task(s)"), out.stderr
    assert db_conn.execute(statuses, (failed,)).fetchone() == (["queued"] * 3,)
    assert db_conn.execute(statuses, ([other],)).fetchone() == (["failed"],)
    empty = cli(db_dsn, "tasks", "cancel", "--yes")
    assert empty.returncode == 1 and "[QC209]" in empty.stderr
    cancelled = cli(db_dsn, "tasks", "cancel", "--queue", "bulk-cli", "--yes")
    assert cancelled.stdout.strip().endswith("cancelled (descendants included): 3 task(s)"), cancelled.stderr


def test_run_state_and_send_update_ask_a_running_workflow(db_dsn: str, db_conn: Conn) -> None:
    """``run-state`` reads what the run published; ``send-update`` sends, and with --wait prints the
    run's reply (here the run is played in SQL: wait_update, then reply_update) or fails after the wait."""
    task = enqueue(db_conn, "upd-cli")
    attempt = claim(db_conn, "upd-cli")
    assert cli(db_dsn, "run-state", str(task)).stdout.strip() == f"task {task} has published no state"
    db_conn.execute("select conductor.set_run_state(%s, '{\"stage\": 2}')", (attempt,))
    out = cli(db_dsn, "run-state", str(task))
    assert out.returncode == 0 and out.stdout.startswith(f"task {task} state (published "), out.stderr
    assert out.stdout.rstrip().endswith('{"stage": 2}')
    assert json.loads(cli(db_dsn, "run-state", str(task), "--json").stdout)["state"] == {"stage": 2}

    sent = cli(db_dsn, "send-update", str(task), "approve", "--payload", '{"by": "ann"}')
    assert sent.returncode == 0, sent.stderr
    update_id = int(re.fullmatch(rf"update (\d+) sent to task {task}\n", sent.stdout).group(1))  # type: ignore[union-attr]
    received = db_conn.execute("select state, result from conductor.wait_update(%s, 'update:approve', 'approve')",
                               (attempt,)).fetchone()  # fmt: skip
    assert received[0] == "ready" and received[1]["payload"]["payload"] == {"by": "ann"}, received
    db_conn.execute("select conductor.reply_update(%s, %s, '\"approved\"')", (attempt, update_id))

    def run_replies() -> None:  # the run: once update 'again' is sent, receives it and answers it
        with psycopg.connect(db_dsn, autocommit=True) as run:
            for _ in range(1000):
                if run.execute("select from conductor.updates where task_id = %s and name = 'again'",
                               (task,)).fetchone() is not None:  # fmt: skip
                    break
                threading.Event().wait(0.02)
            state, result = run.execute("select state, result from conductor.wait_update(%s, 'update:again', "
                                        "'again')", (attempt,)).fetchone()  # fmt: skip
            assert state == "ready", (state, result)
            run.execute("select conductor.reply_update(%s, %s, '{\"ok\": true}')",
                        (attempt, result["payload"]["update_id"]))  # fmt: skip

    replier = threading.Thread(target=run_replies)
    replier.start()
    answered = cli(db_dsn, "send-update", str(task), "again", "--wait", "20", "--json")
    replier.join(30)
    assert answered.returncode == 0 and json.loads(answered.stdout) == {"ok": True}, answered.stderr

    late = cli(db_dsn, "send-update", str(task), "approve", "--wait", "0.3")
    assert late.returncode == 1 and "has no reply after 0.3s" in late.stderr, late.stderr
    bad = cli(db_dsn, "send-update", str(task), "approve", "--payload", "{nope")
    assert bad.returncode == 1 and "--payload is not JSON" in bad.stderr
    assert "[QC203]" in cli(db_dsn, "send-update", "999999", "approve").stderr


def test_graph_and_cancel_graph(db_dsn: str, db_conn: Conn) -> None:
    graph = db_conn.execute("select min(graph_id) from conductor.enqueue_graph(%s::jsonb, on_complete => %s::jsonb)", (
        json.dumps([{"name": "a", "kind": "k", "queue": "g-cli"},
                    {"name": "b", "kind": "k", "queue": "g-cli", "after": ["a"]}]),
        json.dumps({"kind": "done", "queue": "g-cli"}))).fetchone()[0]  # fmt: skip
    shown = cli(db_dsn, "graph", str(graph))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"graph {graph}: 3 task(s)"
    assert re.fullmatch(r"  layer 0  task \d+  a  k  queued", lines[1]), lines
    assert re.fullmatch(r"  layer 1  task \d+  b  k  waiting  after \d+", lines[2]), lines
    assert re.fullmatch(r"  layer 2  task \d+  on_complete  done  waiting", lines[3]), lines
    assert [row["name"] for row in json.loads(cli(db_dsn, "graph", str(graph), "--json").stdout)] == ["a", "b", None]
    cancelled = cli(db_dsn, "cancel-graph", str(graph))
    assert cancelled.stdout.strip() == f"graph {graph}: cancelled 3 unfinished task(s); no callback runs after it"
    assert "[QC215]" in cli(db_dsn, "graph", "999999").stderr
