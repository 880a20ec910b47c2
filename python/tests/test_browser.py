"""The dashboard in a real browser: Debian's Chromium driven by Playwright.

Playwright's own browser download does not work here, so it launches
/usr/bin/chromium (``apt-get install chromium``; scripts/install-deps.sh does
it as root). These tests skip, saying why, only when that browser cannot be
launched at all.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from helpers import wait_until

from pyconductor import Conductor, TaskContext, Worker
from pyconductor.dashboard import DashboardServer

playwright_sync = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
expect = playwright_sync.expect

CHROMIUM = os.environ.get("CONDUCTOR_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]  # fmt: skip
TIMEOUT_MS = 15_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"chromium not installed: no {CHROMIUM} (apt-get install -y chromium, or scripts/install-deps.sh as root)")
    with playwright_sync.sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=60_000)
        except Exception as exc:  # noqa: BLE001 - reported in the skip reason
            pytest.skip(f"chromium cannot be launched from {CHROMIUM}: {exc}")
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def app(db_dsn: str) -> Iterator[Conductor]:
    with Conductor(db_dsn, pool_max=2) as app:
        yield app


@pytest.fixture
def db_conn(db_dsn: str) -> Iterator[Any]:
    import psycopg

    with psycopg.connect(db_dsn, autocommit=True) as conn:
        yield conn


@pytest.fixture
def dashboard(db_dsn: str) -> Iterator[DashboardServer]:
    with DashboardServer(db_dsn, "127.0.0.1", 0) as server:
        yield server


def fast_worker(app: Conductor, **options: Any) -> Worker:
    defaults: dict[str, Any] = {"heartbeat_interval": 0.2, "poll_interval": 0.2, "reap_interval": 0.5,
                                "shutdown_grace": 5, "run_scheduler": False}  # fmt: skip
    return Worker(app, **{**defaults, **options})


def test_see_a_failed_run_retry_it_and_see_it_succeed(app: Conductor, dashboard: DashboardServer, page: Any) -> None:
    calls: list[int] = []

    @app.task("report.build", queue="reports")
    def build(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
        calls.append(ctx.attempt_id)
        if len(calls) == 1:
            raise RuntimeError("the warehouse is down")
        return {"rows": 42}

    task = build.enqueue({"day": "2026-11-30"})
    with fast_worker(app, queues=["reports"]):
        wait_until(lambda: app.get(task).status == "failed")

        page.goto(dashboard.url + "/runs?status=failed")
        row = page.locator(f'tr[data-id="{task}"]')
        expect(row).to_contain_text("report.build")
        expect(row).to_contain_text("RuntimeError: the warehouse is down")
        row.get_by_role("link", name=str(task)).click()

        expect(page.locator("#task-status")).to_have_text("failed")
        expect(page.locator("pre.traceback").first).to_contain_text("the warehouse is down", use_inner_text=False)
        page.locator(f"#retry-{task}").click()
        expect(page.locator("#notice")).to_contain_text(f"Task {task} is queued again.")
        # the worker runs it again; the page's live refresh shows the outcome
        expect(page.locator("#task-status")).to_have_text("succeeded")
        expect(page.locator("#result")).to_contain_text('"rows": 42')
        expect(page.locator(f"#retry-{task}")).to_have_count(0)
    assert app.get(task).status == "succeeded" and len(calls) == 2


def test_cancel_a_queued_run(app: Conductor, dashboard: DashboardServer, page: Any) -> None:
    root = app.enqueue("import.batch", {}, queue="nobody-serves-this")
    child = app.enqueue("import.row", {}, queue="nobody-serves-this", parent_id=root)
    page.goto(f"{dashboard.url}/runs/{root}")
    expect(page.locator("#task-status")).to_have_text("queued")
    expect(page.locator(f'#tree li[data-id="{child}"]')).to_contain_text("queued")
    page.locator(f"#cancel-{root}").click()
    expect(page.locator("#notice")).to_contain_text("Cancelled 2 task(s).")
    expect(page.locator("#task-status")).to_have_text("cancelled")
    expect(page.locator(f'#tree li[data-id="{child}"]')).to_contain_text("cancelled")
    expect(page.locator(f"#retry-{root}")).to_be_visible()
    assert app.get(child).status == "cancelled"
    # the notice's link, opened again, still shows it (live refreshes included); a link made
    # elsewhere with its own text shows nothing
    signed = page.url
    page.goto(signed)
    expect(page.locator("#notice")).to_contain_text("Cancelled 2 task(s).")
    page.goto(f"{dashboard.url}/runs/{root}?notice=Session+expired%3A+log+in+at+evil.example")
    expect(page.locator("#task-status")).to_have_text("cancelled")
    expect(page.locator("#notice")).to_have_count(0)


def test_the_queues_page_refreshes_itself(app: Conductor, dashboard: DashboardServer, page: Any) -> None:
    page.goto(dashboard.url + "/")
    expect(page.locator('tr[data-queue="live"]')).to_have_count(0)
    app.enqueue("x", {}, queue="live")
    expect(page.locator('tr[data-queue="live"]')).to_contain_text("live")  # no reload: the 2 s poll


def test_an_action_without_the_csrf_value_is_refused(app: Conductor, dashboard: DashboardServer, page: Any) -> None:
    task = app.enqueue("victim", {}, queue="nobody-serves-this")
    page.goto(f"{dashboard.url}/runs/{task}")
    # forged and sent in one step of the page's script: a live refresh (the run page redraws as
    # its timeline grows) would otherwise swap in a fresh form, with the real value, in between
    page.locator(f"#cancel-{task}").evaluate(
        "b => { b.form.querySelector('input[name=csrf]').value = 'forged'; b.form.requestSubmit(b); }"
    )
    expect(page.locator("body")).to_contain_text("403 forbidden")
    assert app.get(task).status == "queued"


@pytest.fixture
def attacker() -> Iterator[tuple[str, dict[str, str]]]:
    """Another origin (same host, another port) whose page posts a form to the dashboard."""
    pages: dict[str, str] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = pages.get(self.path, "").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", pages
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_cross_site_form_is_refused(
    app: Conductor, dashboard: DashboardServer, page: Any, attacker: tuple[str, dict[str, str]]
) -> None:
    origin, pages = attacker
    task = app.enqueue("victim", {}, queue="nobody-serves-this")
    page.goto(f"{dashboard.url}/runs/{task}")  # the victim has a dashboard session (CSRF cookie)
    csrf = page.locator("input[name=csrf]").first.input_value()
    # even knowing the token value, a form posted from another origin is refused
    form = (f'<form id=f method=post action="{dashboard.url}/runs/{task}/cancel">'
            f'<input name=csrf value="{csrf}"></form><script>document.getElementById("f").submit()</script>')  # fmt: skip
    pages["/evil"] = form
    page.goto(f"{origin}/evil")
    page.wait_for_url(f"{dashboard.url}/runs/{task}/cancel")
    expect(page.locator("body")).to_contain_text("403 forbidden")
    assert app.get(task).status == "queued"


def test_with_a_token_the_browser_must_log_in(app: Conductor, db_dsn: str, browser: Any) -> None:
    task = app.enqueue("guarded", {}, queue="nobody-serves-this")
    with DashboardServer(db_dsn, "127.0.0.1", 0, token="browser-s3cret") as server:
        context = browser.new_context()
        context.set_default_timeout(TIMEOUT_MS)
        page = context.new_page()
        response = page.goto(f"{server.url}/runs/{task}")
        assert response is not None and response.status == 401
        expect(page.locator("body")).not_to_contain_text("guarded")
        # a POST without the token is refused even with the right CSRF value
        status = page.evaluate(
            """async ([url, csrf]) => (await fetch(url, {method: 'POST', body: new URLSearchParams({csrf}),
                 credentials: 'same-origin'})).status""",
            [f"{server.url}/runs/{task}/cancel", page.locator("input[name=csrf]").first.input_value()],
        )
        assert status == 401 and app.get(task).status == "queued"

        page.locator("input[name=token]").fill("wrong")
        page.locator("button[type=submit]").click()
        expect(page.locator("body")).to_contain_text("Wrong token.")
        page.locator("input[name=token]").fill("browser-s3cret")
        page.locator("button[type=submit]").click()
        expect(page.locator("#task-status")).to_have_text("queued")
        page.locator(f"#cancel-{task}").click()
        expect(page.locator("#task-status")).to_have_text("cancelled")
        context.close()
    assert app.get(task).status == "cancelled"


# -- issue 17: schedules, queue controls, log lines, live updates ---------------------


def test_run_a_schedule_now_and_see_its_task(app: Conductor, db_conn: Any, dashboard: DashboardServer, page: Any) -> None:
    db_conn.execute("select conductor.create_schedule(name => 'nightly.report', cron => '0 3 * * *', "
                    "kind => 'report.nightly', queue => 'nobody-serves-this')")  # fmt: skip
    page.goto(dashboard.url + "/")
    page.get_by_role("link", name="Schedules").click()
    row = page.locator('tr[data-schedule="nightly.report"]')
    expect(row.locator("td.fired")).to_have_text("-")
    row.locator("button[value=run]").click()
    expect(page.locator("#notice")).to_contain_text("Schedule nightly.report fired: task")
    task = db_conn.execute("select id from conductor.tasks where kind = 'report.nightly'").fetchone()[0]
    expect(row.locator("td.fired")).to_contain_text(f"(manual) task {task}")
    row.locator("td.fired a").click()
    expect(page.locator("#task-status")).to_have_text("queued")

    page.goto(dashboard.url + "/schedules")
    row.locator("button[value=disable]").click()
    expect(row).to_have_attribute("data-enabled", "false")
    row.locator("button[value=enable]").click()
    expect(row).to_have_attribute("data-enabled", "true")
    assert db_conn.execute("select count(*) from conductor.tasks").fetchone()[0] == 1


def test_pause_a_queue_and_see_it_marked(app: Conductor, db_conn: Any, dashboard: DashboardServer, page: Any) -> None:
    app.enqueue("mail.send", {}, queue="mail")
    page.goto(dashboard.url + "/")
    row = page.locator('tr[data-queue="mail"]')
    expect(row.locator(".paused")).to_have_count(0)
    row.locator("button[value=pause]").click()
    expect(page.locator("#notice")).to_contain_text("Queue mail is paused.")
    expect(row.locator(".paused")).to_have_text("paused")
    assert db_conn.execute("select queue from conductor.paused_queues").fetchall() == [("mail",)]
    row.locator("button[value=resume]").click()
    expect(page.locator("#notice")).to_contain_text("Queue mail is resumed.")
    expect(row.locator(".paused")).to_have_count(0)
    assert db_conn.execute("select count(*) from conductor.paused_queues").fetchone()[0] == 0


def test_a_run_page_shows_the_handler_log_lines(app: Conductor, db_conn: Any, dashboard: DashboardServer, page: Any) -> None:
    from psycopg.types.json import Jsonb

    task = app.enqueue("scrape.page", {}, queue="logs")
    attempt = db_conn.execute("select attempt_id from conductor.claim(worker_id => 'w1', queues => array['logs'], "
                              "max_tasks => 1, lease => '60 seconds')").fetchone()[0]  # fmt: skip
    lines = [{"at": "2026-11-30T12:00:00Z", "level": "INFO", "logger": "scraper", "message": "fetched 3 pages"},
             {"at": "2026-11-30T12:00:01Z", "level": "ERROR", "logger": "scraper", "message": "<img src=x onerror=alert(1)>"}]  # fmt: skip
    db_conn.execute("insert into conductor.attempt_logs (attempt_id, lines) values (%s, %s)", (attempt, Jsonb(lines)))
    page.goto(f"{dashboard.url}/runs/{task}")
    log = page.locator(f'#logs div.log[data-attempt="{attempt}"]')
    expect(log.locator("tr")).to_have_count(2)
    expect(log.locator("tr").nth(0)).to_contain_text("fetched 3 pages")
    expect(log.locator("tr.lv-error td.msg")).to_have_text("<img src=x onerror=alert(1)>")  # text, not an element
    expect(page.locator("#logs img")).to_have_count(0)
    # beside the step tree; a live refresh replaces #logs, which has no box for that instant (seen once
    # in a full run: logs None), so the layout is awaited rather than read once
    boxes: list[Any] = []

    def logs_beside_tree() -> bool:
        tree, logs = page.locator("#tree").bounding_box(), page.locator("#logs").bounding_box()
        boxes.append((tree, logs))
        return tree is not None and logs is not None and logs["x"] > tree["x"]

    wait_until(logs_beside_tree, timeout=10, message=lambda: f"#logs never beside #tree: {boxes[-3:]}")


def test_the_queues_page_updates_live_from_the_event_bus(app: Conductor, db_conn: Any, dashboard: DashboardServer,
                                                        page: Any) -> None:  # fmt: skip
    page.goto(dashboard.url + "/")
    live = page.locator("#live")
    expect(live).to_have_attribute("data-stream", "live")  # subscribed: the 2 s poll is off
    assert db_conn.execute("select topic from conductor.subscriptions").fetchall() == [("tasks",)]
    for n in range(4):
        queue = f"live-{n}"
        started = time.monotonic()
        app.enqueue("x", {}, queue=queue)
        expect(page.locator(f'tr[data-queue="{queue}"]')).to_have_count(1, timeout=1500)
        elapsed = time.monotonic() - started
        assert elapsed < 1.5, elapsed
    expect(live).to_have_attribute("data-stream", "live")
    page.goto("about:blank")  # the browser leaves: the dashboard unsubscribes
    wait_until(lambda: db_conn.execute("select count(*) from conductor.subscriptions").fetchone()[0] == 0, timeout=5)


def test_pages_poll_when_the_schema_has_no_event_bus(app: Conductor, db_conn: Any, dashboard: DashboardServer,
                                                     page: Any) -> None:  # fmt: skip
    db_conn.execute("drop function if exists conductor.subscribe(text[]) cascade")
    page.goto(dashboard.url + "/")
    expect(page.locator("#live")).to_have_attribute("data-stream", "unavailable")
    app.enqueue("x", {}, queue="polled")
    expect(page.locator('tr[data-queue="polled"]')).to_have_count(1)  # the 2 s re-fetch


SCREENSHOTS = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "img")


def test_a_run_timeline_draws_each_attempt_step_child_and_wait_in_order(app: Conductor, db_conn: Any,
                                                                         dashboard: DashboardServer, page: Any) -> None:  # fmt: skip
    """Issue 29: a durable run (a step, a child, a wait for it, a wait for an event, a durable sleep)
    is one bar per attempt, step, child and wait, in time order; at 1280 and 1920 px the log panel
    is drawn beside the attempts table, not over it; the screenshots go to docs/img."""

    def claim(queue: str) -> int:
        return int(db_conn.execute("select attempt_id from conductor.claim(worker_id => 'w1', queues => %s, "
                                   "max_tasks => 1, lease => '60 seconds')", ([queue],)).fetchone()[0])  # fmt: skip

    run = app.enqueue("order", {"order": 7}, queue="tl-run")
    first = claim("tl-run")
    db_conn.execute("select conductor.save_step(%s, 'reserve', '{\"shelf\": \"B-12\"}')", (first,))
    db_conn.execute("select conductor.spawn(%s, 'pack', 'pack', '{}', 'tl-child')", (first,))
    db_conn.execute("select conductor.suspend(%s, 'children', 'children_all')", (first,))
    child = claim("tl-child")
    db_conn.execute("select conductor.complete(%s, '{}')", (child,))
    second = claim("tl-run")
    db_conn.execute("select conductor.suspend(%s, 'event:approved', 'event', 'tl-approved-7')", (second,))
    db_conn.execute("select conductor.emit_event('tl-approved-7', '{\"by\": \"ann\"}')")
    third = claim("tl-run")
    db_conn.execute("select conductor.suspend(%s, 'sleep', 'sleep', duration => '0.2 seconds')", (third,))
    wait_until(lambda: db_conn.execute("select conductor.reap()") is not None and db_conn.execute(
        "select status::text from conductor.tasks where id = %s", (run,)).fetchone()[0] == "queued", timeout=10)  # fmt: skip
    last = claim("tl-run")
    db_conn.execute("select conductor.fail(%s, '<img src=x onerror=alert(1)> out of stock')", (last,))

    for width in (1280, 1920):
        page.set_viewport_size({"width": width, "height": 1000})
        page.goto(f"{dashboard.url}/runs/{run}")
        bars = page.locator("#timeline rect.bar")
        expect(bars.first).to_be_visible()
        drawn = [b for b in bars.evaluate_all("els => els.map(e => [e.dataset.span, e.dataset.what, e.dataset.start])")
                 if b[0] != "queued"]  # fmt: skip
        assert [(span, what) for span, what, _ in drawn] == [
            ("task", "failed"), ("attempt", "suspended"), ("step", "step"), ("step", "spawn"), ("task", "succeeded"),
            ("wait", "children"), ("attempt", "succeeded"), ("attempt", "suspended"), ("wait", "event"),
            ("attempt", "suspended"), ("wait", "sleep"), ("attempt", "failed"),
        ], drawn  # fmt: skip
        starts = [start for _, _, start in drawn]
        assert starts == sorted(starts)
        failed = page.locator("#timeline rect[data-failed] title")
        expect(failed).to_contain_text("<img src=x onerror=alert(1)> out of stock")  # text, not an element
        expect(page.locator("#timeline img, #logs img")).to_have_count(0)
        page.locator(f'li[data-id="{run}"] > details').evaluate("d => d.open = true")
        table = page.locator(f'li[data-id="{run}"] > details table.attempts').bounding_box()
        logs = page.locator("#logs").bounding_box()
        assert table is not None and logs is not None
        apart = (table["x"] + table["width"] <= logs["x"] or logs["y"] >= table["y"] + table["height"]
                 or logs["y"] + logs["height"] <= table["y"])  # fmt: skip
        assert apart, (width, table, logs)
        os.makedirs(SCREENSHOTS, exist_ok=True)
        page.screenshot(path=os.path.join(SCREENSHOTS, f"run-timeline-{width}.png"), full_page=True)
