"""Why a task is not running, in a real Chromium (issue 29): the task page says the
reason conductor.why_waiting gives for each of the five causes (due later, a paused
queue, a rate limit, a concurrency key held by a running task, a kind no live worker
serves) and for a ready task, and the queues page counts them per queue
(conductor.waiting_reasons). The browser fixtures are test_browser.py's."""

from __future__ import annotations

from typing import Any

from test_browser import browser, dashboard, db_conn, expect, page  # noqa: F401 - fixtures

from pyconductor.dashboard import DashboardServer

QUEUES = ["ww-later", "ww-paused", "ww-rate", "ww-key", "ww-ready"]


def _enqueue(conn: Any, queue: str, **spec: Any) -> int:
    run_at = "now() + interval '1 hour'" if spec.get("later") else "now()"
    row = conn.execute(
        f"select conductor.enqueue(kind => 'ww.job', queue => %s, run_at => {run_at}, concurrency_key => %s)",
        (queue, spec.get("key")),
    ).fetchone()
    return int(row[0])


def test_the_task_page_says_why_each_task_waits(page: Any, dashboard: DashboardServer, db_conn: Any) -> None:  # noqa: F811
    db_conn.execute("select conductor.register_worker(worker_id => 'ww-worker', queues => %s)", (QUEUES,))
    later = _enqueue(db_conn, "ww-later", later=True)
    paused = _enqueue(db_conn, "ww-paused")
    db_conn.execute("select conductor.pause_queue('ww-paused')")
    # a bucket of one token a 100 s: the first claim drains it, the second task waits
    db_conn.execute("select conductor.set_rate_limit(queue => 'ww-rate', per_second => 0.01, burst => 1)")
    _enqueue(db_conn, "ww-rate")
    rated = _enqueue(db_conn, "ww-rate")
    holder = _enqueue(db_conn, "ww-key", key="account-7")
    keyed = _enqueue(db_conn, "ww-key", key="account-7")
    claimed = {r[0] for r in db_conn.execute(
        "select task_id from conductor.claim(worker_id => 'ww-worker', queues => %s, max_tasks => 10)",
        (["ww-rate", "ww-key"],))}  # fmt: skip
    assert holder in claimed and rated not in claimed and keyed not in claimed
    unserved = _enqueue(db_conn, "ww-nobody")
    ready = _enqueue(db_conn, "ww-ready")

    for task_id, reason, words in [
        (later, "due_later", "due at"),
        (paused, "queue_paused", "queue 'ww-paused' is paused"),
        (rated, "rate_limited", "the rate limit of queue 'ww-rate'"),
        (keyed, "concurrency_key", f"1 of 1 running for concurrency key 'account-7' (task {holder} among them)"),
        (unserved, "no_worker", "serves kind 'ww.job' on queue 'ww-nobody'"),
        (ready, "ready", "ready: next in line on queue 'ww-ready'"),
    ]:
        page.goto(f"{dashboard.url}/runs/{task_id}")
        first = page.locator("#waiting li").first
        expect(first).to_have_attribute("data-reason", reason)
        expect(first).to_contain_text(words)
    page.goto(f"{dashboard.url}/runs/{keyed}")
    page.locator("#waiting a").click()
    expect(page.locator("h1")).to_contain_text(f"Task {holder}")
    expect(page.locator("#waiting")).to_have_count(0)  # the running holder is not waiting

    page.goto(dashboard.url + "/")
    counted = [("ww-later", "due_later"), ("ww-paused", "queue_paused"), ("ww-rate", "rate_limited"),
               ("ww-key", "concurrency_key"), ("ww-nobody", "no_worker"), ("ww-ready", "ready")]  # fmt: skip
    for queue, reason in counted:
        cell = page.locator(f'#waiting-reasons tr[data-waiting-queue="{queue}"] td[data-reason="{reason}"]')
        expect(cell).to_have_text("1")
