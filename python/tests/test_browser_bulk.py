"""Retry and cancel by filter from the dashboard, in a real Chromium (issue 29).

A scripted load of failed and queued tasks of two kinds on two queues; the runs
page's filter leads to a confirmation page (the count and the newest ids from
conductor.preview_matching, the filter in words) that changes nothing; its POST
(the CSRF value, the count shown as ``expected``) retries or cancels exactly the
matching tasks, which the database shows, and the others stay as they were. A POST
without the CSRF value is refused and changes nothing; a confirmation made stale by
a new matching task gives QC210's notice and changes nothing. The browser fixtures
are test_browser.py's."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit

from test_browser import browser, dashboard, db_conn, expect, page  # noqa: F401 - fixtures

from pyconductor.dashboard import DashboardServer

MARKUP_ERROR = 'IOError: <img src=x onerror="window.pwned=1"> disk full'


def enqueue(conn: Any, kind: str, queue: str, n: int) -> list[int]:
    return [int(conn.execute("select conductor.enqueue(kind => %s, queue => %s)", (kind, queue)).fetchone()[0])
            for _ in range(n)]  # fmt: skip


def fail_all(conn: Any, kind: str, queue: str, n: int, error: str) -> list[int]:
    """``n`` tasks of ``kind`` on ``queue``, each claimed once and failed for good with ``error``."""
    ids = enqueue(conn, kind, queue, n)
    claimed = conn.execute(
        "select task_id, attempt_id from conductor.claim(worker_id => 'bulk-w', queues => %s, max_tasks => %s, "
        "lease => '60 seconds')", ([queue], n),
    ).fetchall()  # fmt: skip
    assert sorted(int(r[0]) for r in claimed) == sorted(ids)
    for _, attempt_id in claimed:
        conn.execute("select conductor.fail(attempt_id => %s, error => %s)", (attempt_id, error))
    return ids


def state(conn: Any, ids: list[int]) -> dict[int, tuple[str, int]]:
    """Each task's status and the number of its attempts (a retry that ran would add one)."""
    rows = conn.execute(
        "select t.id, t.status::text, (select count(*) from conductor.attempts a where a.task_id = t.id) "
        "from conductor.tasks t where t.id = any(%s)", (ids,),
    ).fetchall()  # fmt: skip
    return {int(r[0]): (r[1], int(r[2])) for r in rows}


def test_retry_by_kind_and_status_after_a_confirmation(page: Any, dashboard: DashboardServer, db_conn: Any) -> None:  # noqa: F811
    mail = fail_all(db_conn, "bulk.mail", "bm-mail", 3, "SMTPError: timeout")
    images = fail_all(db_conn, "bulk.image", "bm-img", 2, "MemoryError: timeout")
    queued_mail = enqueue(db_conn, "bulk.mail", "bm-mail", 1)  # matches the kind, not the status
    before = state(db_conn, mail + images + queued_mail)

    page.goto(f"{dashboard.url}/runs?status=failed&kind=bulk.mail")
    expect(page.locator("#runs tr[data-id]")).to_have_count(3)
    page.locator("#bulk-retry").click()

    expect(page.locator("h1")).to_have_text("Retry tasks by filter")
    expect(page.locator("#filter-words")).to_contain_text("status failed")
    expect(page.locator("#filter-words code.kind")).to_have_text("bulk.mail")
    expect(page.locator("#matching")).to_have_attribute("data-matching", "3")
    expect(page.locator("#matching")).to_contain_text("3 tasks match now")
    expect(page.locator("#sample a")).to_have_text([f"task {i}" for i in sorted(mail, reverse=True)])
    expect(page.locator("#confirm-button")).to_have_text("Retry all 3 matching")
    assert state(db_conn, mail + images + queued_mail) == before  # nothing changes before the confirmation

    page.locator("#confirm-button").click()
    expect(page.locator("#notice")).to_have_text("Retried 3 tasks.")
    assert urlsplit(page.url).path == "/runs"
    assert ("kind", "bulk.mail") in parse_qsl(urlsplit(page.url).query)
    expect(page.locator("#runs tr[data-id]")).to_have_count(0)  # none of kind bulk.mail is failed any more

    after = state(db_conn, mail + images + queued_mail)
    assert {i: after[i] for i in mail} == dict.fromkeys(mail, ("queued", 1))
    assert {i: after[i] for i in images + queued_mail} == {i: before[i] for i in images + queued_mail}


def test_cancel_by_queue_and_time_range_typed_into_the_form(
    page: Any, dashboard: DashboardServer, db_conn: Any  # noqa: F811
) -> None:
    early = enqueue(db_conn, "bulk.sync", "bc-a", 2)
    since = db_conn.execute("select clock_timestamp()").fetchone()[0]
    late = enqueue(db_conn, "bulk.sync", "bc-a", 3)
    other = enqueue(db_conn, "bulk.sync", "bc-b", 2)
    before = state(db_conn, early + late + other)
    since_text = since.isoformat()

    page.goto(f"{dashboard.url}/runs")
    expect(page.locator("#bulk")).to_have_count(0)  # no filter, no bulk action
    page.locator("#filters input[name=queue]").fill("bc-a")
    page.locator("#filters input[name=from]").fill(since_text)
    page.locator("#filters button[type=submit]").click()
    expect(page.locator("#bulk-note")).to_be_visible()  # the list ignores the time range; the action does not
    page.locator("#bulk-cancel").click()

    expect(page.locator("#filter-words code.queue")).to_have_text("bc-a")
    expect(page.locator("#filter-words")).to_contain_text("enqueued at or after")
    expect(page.locator("#matching")).to_have_attribute("data-matching", "3")
    expect(page.locator("#sample a")).to_have_text([f"task {i}" for i in sorted(late, reverse=True)])
    assert state(db_conn, early + late + other) == before

    page.locator("#confirm-button").click()
    expect(page.locator("#notice")).to_have_text("Cancelled 3 tasks, descendants included.")
    after = state(db_conn, early + late + other)
    assert {i: after[i][0] for i in late} == dict.fromkeys(late, "cancelled")
    assert {i: after[i] for i in early + other} == {i: before[i] for i in early + other}


def test_a_post_without_the_csrf_value_is_refused_and_changes_nothing(
    page: Any, dashboard: DashboardServer, db_conn: Any  # noqa: F811
) -> None:
    ids = fail_all(db_conn, "bulk.csrf", "bx-q", 2, "ValueError: nope")
    page.goto(f"{dashboard.url}/bulk/retry?status=failed&queue=bx-q")
    expect(page.locator("#matching")).to_have_attribute("data-matching", "2")
    fields = page.locator("#confirm input[type=hidden]").evaluate_all("els => els.map(e => [e.name, e.value])")
    form = {name: value for name, value in fields if name != "csrf"}
    assert form == {"status": "failed", "queue": "bx-q", "expected": "2"}

    # the browser's own cookies, the confirmation's fields, no CSRF value (or a wrong one)
    missing = page.request.post(f"{dashboard.url}/bulk/retry", form=form, max_redirects=0)
    assert missing.status == 403
    wrong = page.request.post(f"{dashboard.url}/bulk/retry", form={**form, "csrf": "x" * 43}, max_redirects=0)
    assert wrong.status == 403
    assert {s for s, _ in state(db_conn, ids).values()} == {"failed"}

    page.locator("#confirm-button").click()  # the real form carries it
    expect(page.locator("#notice")).to_have_text("Retried 2 tasks.")
    assert {s for s, _ in state(db_conn, ids).values()} == {"queued"}


def test_a_stale_confirmation_is_refused_with_qc210_and_changes_nothing(
    page: Any, dashboard: DashboardServer, db_conn: Any  # noqa: F811
) -> None:
    ids = fail_all(db_conn, "bulk.stale", "bs-q", 2, "TimeoutError: upstream")
    page.goto(f"{dashboard.url}/runs?kind=bulk.stale&status=failed")
    page.locator("#bulk-retry").click()
    expect(page.locator("#confirm-button")).to_have_text("Retry all 2 matching")

    newer = fail_all(db_conn, "bulk.stale", "bs-q", 1, "TimeoutError: upstream")  # matches since the preview
    page.locator("#confirm-button").click()
    expect(page.locator("#notice")).to_have_text(
        "Could not retry: more tasks match now than you confirmed (2); look again. Nothing changed."
    )
    assert {s for s, _ in state(db_conn, ids + newer).values()} == {"failed"}

    page.locator("#bulk-retry").click()  # looking again shows the new count
    expect(page.locator("#confirm-button")).to_have_text("Retry all 3 matching")


def test_filters_and_error_texts_are_data_on_every_page(page: Any, dashboard: DashboardServer, db_conn: Any) -> None:  # noqa: F811
    ids = fail_all(db_conn, "bulk.disk", "bd-q", 2, MARKUP_ERROR)
    other = fail_all(db_conn, "bulk.disk", "bd-q", 1, "IOError: quota")
    page.goto(f"{dashboard.url}/runs?queue=bd-q")
    page.locator("#filters input[name=error]").fill('<IMG src=x onerror="window.pwned=1">')
    page.locator("#filters button[type=submit]").click()
    expect(page.locator("#filters input[name=error]")).to_have_value('<IMG src=x onerror="window.pwned=1">')
    page.locator("#bulk-retry").click()

    # the text is shown as text, matched ignoring case, and runs nothing
    expect(page.locator("#filter-words code.error-text")).to_have_text('<IMG src=x onerror="window.pwned=1">')
    expect(page.locator("#matching")).to_have_attribute("data-matching", "2")
    assert page.locator("main img").count() == 0
    assert page.evaluate("window.pwned") is None
    page.locator("#confirm-button").click()
    expect(page.locator("#notice")).to_have_text("Retried 2 tasks.")
    assert page.locator("main img").count() == 0 and page.evaluate("window.pwned") is None
    after = state(db_conn, ids + other)
    assert [after[i][0] for i in ids] == ["queued", "queued"] and after[other[0]][0] == "failed"
