"""The dashboard over HTTP: pages, filters, pagination, actions, CSRF and the token."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
import pytest
from helpers import wait_until

from pyconductor import Conductor
from pyconductor.cli import main
from pyconductor.errors import SchemaMismatch
from pyconductor.migrate import migrate
from pyconductor.dashboard import (
    AUTH_COOKIE,
    CSRF_COOKIE,
    DashboardConfigError,
    DashboardServer,
    LoginLimiter,
    check_bind,
    is_loopback,
)

Conn = psycopg.Connection[tuple[object, ...]]


@pytest.fixture
def app(db_dsn: str) -> Iterator[Conductor]:
    with Conductor(db_dsn, pool_max=2) as app:
        yield app


@pytest.fixture
def server(db_dsn: str) -> Iterator[DashboardServer]:
    with DashboardServer(db_dsn, "127.0.0.1", 0) as server:
        yield server


@pytest.fixture
def client(server: DashboardServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=10) as client:
        yield client


def ids_on(page: str) -> list[int]:
    return [int(x) for x in re.findall(r'<tr data-id="(\d+)"', page)]


def csrf_of(client: httpx.Client) -> str:
    """The session's CSRF token (its cookie), after one GET."""
    if CSRF_COOKIE not in client.cookies:
        client.get("/")
    return str(client.cookies[CSRF_COOKIE])


def fail_task(conn: Conn, queue: str, error: str = "RuntimeError: boom") -> int:
    """Claim one task of ``queue`` as worker 'w1' and fail it for good, with a traceback."""
    row = conn.execute("select task_id, attempt_id from conductor.claim(worker_id => 'w1', queues => %s, "
                       "max_tasks => 1, lease => '60 seconds')", ([queue],)).fetchone()  # fmt: skip
    assert row is not None
    conn.execute("select conductor.fail(attempt_id => %s, error => %s, traceback => %s)",
                 (row[1], error, "Traceback (most recent call last):\n  in handler\n" + error))  # fmt: skip
    return int(str(row[0]))


def test_pages_render(app: Conductor, db_conn: Conn, client: httpx.Client) -> None:
    a = app.enqueue("mail.send", {"to": "x@example.com"}, queue="mail")
    b = app.enqueue("img.resize", {}, queue="images")
    failed = fail_task(db_conn, "images")
    assert failed == b

    home = client.get("/")
    assert home.status_code == 200 and home.headers["content-type"].startswith("text/html")
    assert 'data-queue="mail"' in home.text and 'data-queue="images"' in home.text
    # no worker is live: the queued mail task is one no live worker can run
    assert re.search(r'data-queue="mail">.*?<td class=n data-unrunnable>1<', home.text)
    assert "<script nonce=" in home.text and 'id=live data-src="/?fragment=1"' in home.text
    assert "frame-ancestors 'none'" in home.headers["content-security-policy"]

    runs = client.get("/runs")
    assert runs.status_code == 200 and ids_on(runs.text) == [b, a]

    page = client.get(f"/runs/{b}")
    assert page.status_code == 200
    assert "img.resize" in page.text and "RuntimeError: boom" in page.text
    assert "w1" in page.text and "Traceback (most recent call last):" in page.text
    assert f'id="retry-{b}"' in page.text and f'id="cancel-{b}"' not in page.text
    assert f'id="cancel-{a}"' in client.get(f"/runs/{a}").text

    fragment = client.get(f"/runs/{b}", params={"fragment": "1"})
    assert fragment.status_code == 200 and "<html" not in fragment.text and "img.resize" in fragment.text

    assert client.get("/runs/999999").status_code == 404
    assert client.get("/runs", params={"status": "bogus"}).status_code == 400


def test_the_search_page_escapes_and_checks_what_it_is_given(app: Conductor, client: httpx.Client) -> None:
    """/search (search_tasks): a payload's markup is text; what the form cannot search by is said on
    the page or refused with 400, before anything is searched; the page carries no script."""
    task = app.enqueue("srch.x", {"note": "<img src=x onerror=alert(1)>"}, queue="srch")
    app.enqueue("srch.y", {}, queue="srch")
    page = client.get("/search", params={"kind": "srch.x", "payload": '{"note": "<img src=x onerror=alert(1)>"}'})
    assert page.status_code == 200 and ids_on(page.text) == [task]
    assert "<img src=x" not in page.text and "&lt;img src=x onerror=alert(1)&gt;" in page.text
    assert "<script" not in page.text and "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert ids_on(client.get("/search", params={"queue": "srch", "enqueued_after": "2000-01-01"}).text)[-1] == task
    assert "payload contains must be a JSON object" in client.get("/search", params={"payload": "[1]"}).text
    assert "finished before is a time like" in client.get("/search", params={"finished_before": "soon"}).text
    assert "unknown status" in client.get("/search", params={"status": "bogus"}).text
    assert client.get("/search", params={"before": "x"}).status_code == 400
    assert client.get("/search", params={"scan": "many"}).status_code == 400


def test_the_run_page_shows_the_tree_and_steps(app: Conductor, db_conn: Conn, client: httpx.Client) -> None:
    root = app.enqueue("flow.root", {})
    child = app.enqueue("flow.child", {}, parent_id=root)
    grandchild = app.enqueue("flow.grandchild", {}, parent_id=child)
    other = app.enqueue("flow.root", {})  # another run: not in this tree
    has_steps = db_conn.execute("select to_regclass('conductor.steps') is not null").fetchone() == (True,)
    if has_steps:
        db_conn.execute("insert into conductor.steps (task_id, name, result, saved_at) "
                        "values (%s, 'fetch-page', '{\"bytes\": 1234}', now())", (child,))  # fmt: skip

    page = client.get(f"/runs/{grandchild}").text
    tree = page[page.index("id=tree") :]
    for tid in (root, child, grandchild):
        assert f'data-id="{tid}"' in tree
    assert f'data-id="{other}"' not in tree
    assert f"<a href='/runs/{root}'>{root}</a>" in page  # the run's root
    assert f"<a href='/runs/{child}'>{child}</a>" in page  # the parent
    # nesting: grandchild inside child inside root
    assert tree.index(f'data-id="{root}"') < tree.index(f'data-id="{child}"') < tree.index(f'data-id="{grandchild}"')
    if has_steps:
        assert "fetch-page" in page and "1234" in page


def test_filters(app: Conductor, db_conn: Conn, client: httpx.Client) -> None:
    m1 = app.enqueue("mail.send", {}, queue="mail")
    m2 = app.enqueue("mail.send", {}, queue="mail")
    i1 = app.enqueue("img.resize", {}, queue="images")
    i2 = app.enqueue("img.crop", {}, queue="images")
    app.cancel(m2)
    f = fail_task(db_conn, "images")  # the oldest ready one: i1
    assert f == i1

    def listed(**params: str) -> list[int]:
        resp = client.get("/runs", params=params)
        assert resp.status_code == 200
        return ids_on(resp.text)

    assert listed(queue="mail") == [m2, m1]
    assert listed(kind="img.crop") == [i2]
    assert listed(status="cancelled") == [m2]
    assert listed(status="failed", queue="images") == [i1]
    assert listed(status="queued", kind="mail.send") == [m1]
    assert listed(status="succeeded") == []
    assert "No tasks match" in client.get("/runs", params={"queue": "nowhere"}).text
    # the filter form keeps what was chosen
    page = client.get("/runs", params={"status": "failed", "kind": "img.resize"}).text
    assert '<option value="failed" selected>' in page and 'value="img.resize"' in page


def test_keyset_pagination(app: Conductor, client: httpx.Client) -> None:
    ids = app.enqueue_many([("page.me", {"n": n}) for n in range(120)])
    newest_first = sorted(ids, reverse=True)
    seen: list[int] = []
    url: str | None = "/runs?kind=page.me"
    pages = 0
    while url:
        text = client.get(url).text
        page_ids = ids_on(text)
        assert len(page_ids) <= 50
        seen += page_ids
        pages += 1
        match = re.search(r'<a id=older href="([^"]+)"', text)
        url = match.group(1).replace("&amp;", "&") if match else None
        if url:
            assert f"before={page_ids[-1]}" in url and "kind=page.me" in url
    assert pages == 3 and seen == newest_first
    small = client.get("/runs", params={"kind": "page.me", "limit": "7", "before": str(newest_first[9])}).text
    assert ids_on(small) == newest_first[10:17] and "id=newest" in small


def test_cancel_needs_the_csrf_token(app: Conductor, client: httpx.Client) -> None:
    task = app.enqueue("victim", {})
    token = csrf_of(client)

    no_field = client.post(f"/runs/{task}/cancel", data={})
    assert no_field.status_code == 403
    wrong = client.post(f"/runs/{task}/cancel", data={"csrf": "x" * 43})
    assert wrong.status_code == 403
    # the right value, but from another site's page
    cross = client.post(f"/runs/{task}/cancel", data={"csrf": token}, headers={"Origin": "https://evil.example"})
    assert cross.status_code == 403
    fetch_meta = client.post(f"/runs/{task}/cancel", data={"csrf": token}, headers={"Sec-Fetch-Site": "cross-site"})
    assert fetch_meta.status_code == 403
    # a field without the cookie (another browser, a forged form)
    with httpx.Client(base_url=str(client.base_url), timeout=10) as stranger:
        assert stranger.post(f"/runs/{task}/cancel", data={"csrf": token}).status_code == 403
    assert app.get(task).status == "queued"

    ok = client.post(f"/runs/{task}/cancel", data={"csrf": token}, headers={"Origin": str(client.base_url)})
    assert ok.status_code == 303 and ok.headers["location"].startswith(f"/runs/{task}?notice=")
    assert app.get(task).status == "cancelled"
    assert "Cancelled 1 task(s)." in client.get(ok.headers["location"]).text


def test_retry_a_failed_run(app: Conductor, db_conn: Conn, client: httpx.Client) -> None:
    app.enqueue("flaky", {}, queue="r")
    task = fail_task(db_conn, "r")
    token = csrf_of(client)
    resp = client.post(f"/runs/{task}/retry", data={"csrf": token})
    assert resp.status_code == 303
    assert app.get(task).status == "queued"
    # retrying a queued task is refused by conductor.retry; the page says so
    again = client.post(f"/runs/{task}/retry", data={"csrf": token}, follow_redirects=True)
    assert again.status_code == 200 and "Could not retry task" in again.text
    assert client.post("/runs/999999/retry", data={"csrf": token}).status_code == 404


def test_the_csrf_cookie_is_strict_and_http_only(client: httpx.Client) -> None:
    resp = client.get("/")
    cookie = resp.headers["set-cookie"]
    assert cookie.startswith(f"{CSRF_COOKIE}=") and "SameSite=strict" in cookie and "HttpOnly" in cookie
    assert "set-cookie" not in client.get("/").headers, "one token per session, not per request"


def test_bind_rules(db_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost") and is_loopback("127.1.2.3")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.1") and not is_loopback("example.com")
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", "s3cret")
    with pytest.raises(DashboardConfigError, match="refusing to listen on 0.0.0.0 without a token"):
        DashboardServer(db_dsn, "0.0.0.0", 0)
    assert main(["dashboard", "--dsn", db_dsn, "--host", "0.0.0.0", "--port", "0"]) == 1
    err = capsys.readouterr().err
    assert "refusing to listen on 0.0.0.0 without a token" in err and "--token" in err


def test_a_database_of_another_schema_release_is_refused_at_start(empty_dsn: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """As a worker does: the pages' statements are this release's, so the dashboard does not
    start over v0.1.0's schema, and says what fixes it; an unreachable database does not stop it."""
    migrate(empty_dsn, to="@v0.1.0", progress=lambda line: None)
    with pytest.raises(SchemaMismatch, match=r"schema 0\.1\.0.*pyconductor migrate"):
        DashboardServer(empty_dsn, "127.0.0.1", 0).start()
    assert main(["dashboard", "--dsn", empty_dsn, "--port", "0"]) == 1
    assert re.search(r"schema 0\.1\.0.*pyconductor migrate", capsys.readouterr().err)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        nobody = f"postgresql://nobody@127.0.0.1:{sock.getsockname()[1]}/none?connect_timeout=2"
        with DashboardServer(nobody, "127.0.0.1", 0) as server:  # started: its pages report the outage
            assert server.port != 0


def test_with_a_token_every_request_needs_it(app: Conductor, db_dsn: str) -> None:
    task = app.enqueue("guarded", {})
    with DashboardServer(db_dsn, "127.0.0.1", 0, token="s3cret-token") as server:
        with httpx.Client(base_url=server.url, timeout=10) as anon:
            home = anon.get("/")
            assert home.status_code == 401 and home.headers["www-authenticate"].startswith("Bearer")
            assert "guarded" not in home.text and "name=token" in home.text  # a login form, nothing else
            assert anon.get("/runs").status_code == 401
            assert anon.get("/search", params={"kind": "guarded"}).status_code == 401
            assert anon.get(f"/runs/{task}", params={"fragment": "1"}).status_code == 401
            assert anon.get("/", headers={"Authorization": "Bearer wrong"}).status_code == 401
            token = str(anon.cookies[CSRF_COOKIE])
            assert anon.post(f"/runs/{task}/cancel", data={"csrf": token}).status_code == 401
            assert app.get(task).status == "queued"

            assert anon.get("/series").status_code == 401  # the charts' JSON too

            bearer = {"Authorization": "Bearer s3cret-token"}
            assert anon.get("/runs", headers=bearer).status_code == 200
            assert anon.get("/series", headers=bearer).json()["range"] == "hour"
            assert "guarded" in anon.get(f"/runs/{task}", headers=bearer).text

            # the login form: a wrong token, then the right one sets the session cookie
            assert anon.post("/login", data={"csrf": token, "token": "nope"}).status_code == 401
            assert anon.post("/login", data={"token": "s3cret-token"}).status_code == 403  # no CSRF value
            login = anon.post("/login?next=/runs", data={"csrf": token, "token": "s3cret-token"})
            assert login.status_code == 303 and login.headers["location"] == "/runs"
            assert "s3cret-token" not in login.headers["set-cookie"]
            assert anon.get("/runs").status_code == 200
            assert anon.post(f"/runs/{task}/cancel", data={"csrf": token}).status_code == 303
            assert app.get(task).status == "cancelled"


def test_the_list_page_query_uses_the_primary_key(db_conn: Conn) -> None:
    """list_tasks' page query (the same SQL as in conductor.list_tasks) walks tasks_pkey
    backwards from before_id instead of sorting, on a table of many finished tasks."""
    db_conn.execute("""
        insert into conductor.tasks (kind, queue, run_at, status, enqueued_at, finished_at, root_id)
        select 'bulk.kind', 'bulk', now(), 'succeeded', now(), now(), 0 from generate_series(1, 20000)
    """)
    db_conn.execute("update conductor.tasks set root_id = id where root_id = 0")
    db_conn.execute("analyze conductor.tasks")
    plan = "\n".join(str(r[0]) for r in db_conn.execute("""
        explain select t.* from conductor.tasks t
         where (null::conductor.task_status is null or t.status = null)
           and (null::text is null or t.queue = null) and ('bulk.kind' is null or t.kind = 'bulk.kind')
           and (15000::bigint is null or t.id < 15000)
         order by t.id desc limit 51
    """).fetchall())  # fmt: skip
    assert "Index Scan Backward using tasks_pkey" in plan, plan
    assert "Sort" not in plan, plan


def test_a_foreign_host_header_is_refused(app: Conductor, server: DashboardServer, client: httpx.Client) -> None:
    """DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1
    reaches the loopback dashboard with ``Host: evil.example``; it reads nothing
    and cancels nothing."""
    task = app.enqueue("rebound", {"secret": "payload-of-rebound"})
    token = csrf_of(client)
    evil = {"Host": f"evil.example:{server.port}"}
    for path in ("/", "/runs", f"/runs/{task}", f"/runs/{task}?fragment=1", "/search?kind=rebound", "/login"):
        resp = client.get(path, headers=evil)
        assert resp.status_code == 421, (path, resp.status_code)
        assert "payload-of-rebound" not in resp.text and "evil.example" in resp.text
    cancel = client.post(f"/runs/{task}/cancel", data={"csrf": token}, headers=evil)
    assert cancel.status_code == 421 and cancel.text.startswith("421 misdirected request")
    assert app.get(task).status == "queued"

    # the names of this machine still work, with or without the port
    for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}", "localhost", f"[::1]:{server.port}"):
        assert client.get(f"/runs/{task}", headers={"Host": host}).status_code == 200, host
    ok = client.post(f"/runs/{task}/cancel", data={"csrf": token})
    assert ok.status_code == 303 and app.get(task).status == "cancelled"


def test_allowed_hosts_extend_the_host_check(db_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with DashboardServer(db_dsn, "127.0.0.1", 0, allowed_hosts=["dash.internal", "Ops.Example.COM."]) as server:
        with httpx.Client(base_url=server.url, timeout=10) as c:
            assert c.get("/", headers={"Host": f"dash.internal:{server.port}"}).status_code == 200
            assert c.get("/", headers={"Host": "ops.example.com"}).status_code == 200
            assert c.get("/", headers={"Host": "dash.internal.evil.example"}).status_code == 421
            assert c.get("/", headers={"Host": "10.1.2.3"}).status_code == 421  # bound to loopback only


def set_cookies(resp: httpx.Response) -> dict[str, str]:
    """name -> the whole Set-Cookie line, of each cookie the response sets."""
    return {line.partition("=")[0]: line for line in resp.headers.get_list("set-cookie")}


def login(c: httpx.Client, token: str, headers: dict[str, str] | None = None) -> httpx.Response:
    """Log in with the form as a new visitor; the cookies are sent by hand (a Secure
    one is not kept over http)."""
    c.cookies.clear()
    first = c.get("/", headers=headers)
    csrf = set_cookies(first)[CSRF_COOKIE].split(";")[0].partition("=")[2]
    return c.post("/login", data={"csrf": csrf, "token": token},
                  headers={**(headers or {}), "Cookie": f"{CSRF_COOKIE}={csrf}"})  # fmt: skip


def test_the_session_cookie_expires_and_is_secure_over_tls(db_dsn: str) -> None:
    with DashboardServer(db_dsn, "127.0.0.1", 0, token="s3cret-token") as server:
        with httpx.Client(base_url=server.url, timeout=10) as c:
            session = set_cookies(login(c, "s3cret-token"))[AUTH_COOKIE]
            assert "Max-Age=43200" in session and "HttpOnly" in session and "SameSite=strict" in session
            assert "Secure" not in session  # plain http: a Secure cookie would never come back

            # behind a TLS proxy on this host (uvicorn trusts X-Forwarded-Proto from 127.0.0.1)
            tls = {"X-Forwarded-Proto": "https"}
            c.cookies.clear()
            assert "Secure" in set_cookies(c.get("/", headers=tls))[CSRF_COOKIE]
            session = set_cookies(login(c, "s3cret-token", tls))[AUTH_COOKIE]
            assert "Secure" in session and "Max-Age=43200" in session

            # the server checks the age too: a copied cookie stops working after 12 h
            dash = server.app.state.dashboard
            fresh = dash.session_cookie()
            stale = dash.session_cookie(issued=int(time.time()) - 12 * 3600 - 5)
            forged = f"{int(time.time())}.{'0' * 64}"
            c.cookies.clear()
            assert c.get("/runs", headers={"Cookie": f"{AUTH_COOKIE}={fresh}"}).status_code == 200
            assert c.get("/runs", headers={"Cookie": f"{AUTH_COOKIE}={stale}"}).status_code == 401
            assert c.get("/runs", headers={"Cookie": f"{AUTH_COOKIE}={forged}"}).status_code == 401

    with DashboardServer(db_dsn, "127.0.0.1", 0, token="s3cret-token", session_max_age=600,
                         secure_cookies=True) as server:  # fmt: skip
        with httpx.Client(base_url=server.url, timeout=10) as c:
            session = set_cookies(login(c, "s3cret-token"))[AUTH_COOKIE]
            assert "Max-Age=600" in session and "Secure" in session


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def dashboard_process(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``python -m pyconductor dashboard ARGS`` on a free port: (process, its URL) once it answers."""
    port = free_port()
    log = (tmp_path / f"dashboard-{port}.log").open("wb")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CONDUCTOR_")}
    proc = subprocess.Popen([sys.executable, "-m", "pyconductor", "dashboard", "--port", str(port), *args],
                            env={**clean, **(env or {})}, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: proc.poll() is not None or httpx.get(url + "/login", timeout=2).status_code,
                   timeout=30, message=lambda: (tmp_path / f"dashboard-{port}.log").read_text())  # fmt: skip
        assert proc.poll() is None, (tmp_path / f"dashboard-{port}.log").read_text()
        yield proc, url
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


def command_line(proc: subprocess.Popen[bytes]) -> str:
    """What ``ps`` shows of the process: its arguments and nothing else."""
    return Path(f"/proc/{proc.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def test_cli_takes_the_token_from_a_file_or_the_environment(db_dsn: str, tmp_path: Path) -> None:
    secret = "t0ken-from-a-file-" + os.urandom(4).hex()
    (tmp_path / "token").write_text(secret + "\n")
    with dashboard_process(tmp_path, "--dsn", db_dsn, "--host", "0.0.0.0", "--token-file", str(tmp_path / "token")) as (
        proc,
        url,
    ):
        assert secret not in command_line(proc)
        assert httpx.get(url + "/runs").status_code == 401
        assert httpx.get(url + "/runs", headers={"Authorization": f"Bearer {secret}"}).status_code == 200

    from_env = "t0ken-from-env-" + os.urandom(4).hex()
    env = {"CONDUCTOR_DASHBOARD_TOKEN": from_env, "CONDUCTOR_DSN": db_dsn}
    with dashboard_process(tmp_path, env=env) as (proc, url):
        assert from_env not in command_line(proc)
        assert httpx.get(url + "/runs", headers={"Authorization": f"Bearer {from_env}"}).status_code == 200
        assert httpx.get(url + "/runs", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_cli_ctrl_c_stops_the_dashboard_with_exit_0(db_dsn: str, tmp_path: Path) -> None:
    """What docs/getting-started.md says after make demo: Ctrl-C stops it (uvicorn
    raises the signal again after its clean shutdown: no traceback, exit 0)."""
    with dashboard_process(tmp_path, "--dsn", db_dsn) as (proc, url):
        assert httpx.get(url + "/runs").status_code == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    logs = "".join(p.read_text() for p in tmp_path.glob("dashboard-*.log"))
    assert "Traceback" not in logs and "KeyboardInterrupt" not in logs, logs[-3000:]


def test_cli_token_file_problems_fail_clearly(db_dsn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dashboard", "--dsn", db_dsn, "--token-file", str(tmp_path / "missing")]) == 1
    assert "cannot read the token file" in capsys.readouterr().err
    (tmp_path / "token").write_text("abc\n")
    assert main(["dashboard", "--dsn", db_dsn, "--token", "x", "--token-file", str(tmp_path / "token")]) == 1
    assert "one of --token and --token-file" in capsys.readouterr().err


def test_cli_help_says_how_to_keep_the_token_out_of_ps(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["dashboard", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for text in ("--token-file", "CONDUCTOR_DASHBOARD_TOKEN", "ps", "--allowed-host", "CONDUCTOR_ALLOWED_HOSTS",
                 "--session-max-age", "--behind-tls"):  # fmt: skip
        assert text in out, text


def test_cli_allowed_hosts_session_age_and_tls_flag(db_dsn: str, tmp_path: Path) -> None:
    env = {"CONDUCTOR_DSN": db_dsn, "CONDUCTOR_ALLOWED_HOSTS": "dash.internal, ops.example",
           "CONDUCTOR_DASHBOARD_TOKEN": "s3cret-token"}  # fmt: skip
    args = ("--allowed-host", "more.example", "--session-max-age", "30m", "--behind-tls")
    with dashboard_process(tmp_path, *args, env=env) as (_, url), httpx.Client(base_url=url, timeout=10) as c:
        for host in ("dash.internal", "ops.example:443", "more.example", "localhost"):
            assert c.get("/login", headers={"Host": host}).status_code == 200, host
        assert c.get("/login", headers={"Host": "evil.example"}).status_code == 421
        session = set_cookies(login(c, "s3cret-token"))[AUTH_COOKIE]
        assert "Max-Age=1800" in session and "Secure" in session


# -- issue 17: schedules, queue controls, log lines, live updates ---------------------


def make_schedule(conn: Conn, name: str, *, kind: str = "report.nightly", enabled: bool = True) -> None:
    conn.execute("select conductor.create_schedule(name => %s, cron => '0 3 * * *', kind => %s, queue => 'reports', "
                 "timezone => 'Europe/Paris', enabled => %s)", (name, kind, enabled))  # fmt: skip


def schedule_row(page: str, name: str) -> str:
    match = re.search(rf'<tr data-schedule="{re.escape(name)}".*?</tr>', page)
    assert match, page
    return match.group(0)


def test_the_schedules_page_lists_every_schedule(db_conn: Conn, client: httpx.Client) -> None:
    assert "No schedules." in client.get("/schedules").text
    make_schedule(db_conn, "nightly.report")
    make_schedule(db_conn, "weekly:cleanup/all", kind="cleanup.all", enabled=False)
    db_conn.execute("update conductor.schedules set last_error = 'QC104: <b>queue</b> & gone', "
                    "last_error_at = '2026-11-30 12:00:00+00' where name = 'nightly.report'")  # fmt: skip

    resp = client.get("/schedules")
    assert resp.status_code == 200 and "<a href=/schedules>Schedules</a>" in resp.text
    nightly = schedule_row(resp.text, "nightly.report")
    for text in ("0 3 * * *", "Europe/Paris", "report.nightly", "reports", 'data-enabled="true"', "value=disable",
                 "value=run", "Run now", "2026-11-30 12:00:00.000Z"):  # fmt: skip
        assert text in nightly, text
    assert "QC104: &lt;b&gt;queue&lt;/b&gt; &amp; gone" in nightly and "<b>queue" not in nightly
    assert re.search(r"<td class=next>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z", nightly)
    assert "<td class=fired>-" in nightly
    weekly = schedule_row(resp.text, "weekly:cleanup/all")
    assert 'data-enabled="false"' in weekly and "value=enable" in weekly and "<td class=next>-" in weekly
    fragment = client.get("/schedules", params={"fragment": "1"})
    assert "<html" not in fragment.text and 'data-schedule="nightly.report"' in fragment.text


def test_enable_disable_and_run_now_need_the_csrf_token(db_conn: Conn, client: httpx.Client) -> None:
    make_schedule(db_conn, "nightly.report")
    token = csrf_of(client)

    def enabled() -> bool:
        row = db_conn.execute("select enabled from conductor.schedules where name = 'nightly.report'").fetchone()
        return bool(row and row[0])

    def tasks() -> int:
        return int(
            str(db_conn.execute("select count(*) from conductor.tasks where kind = 'report.nightly'").fetchone()[0])
        )  # type: ignore[index]

    due = db_conn.execute("select next_due_at from conductor.schedules").fetchone()
    for path in ("/schedules/disable", "/schedules/run"):
        assert client.post(path, data={"name": "nightly.report"}).status_code == 403
        assert client.post(path, data={"name": "nightly.report", "csrf": token},
                           headers={"Origin": "https://evil.example"}).status_code == 403  # fmt: skip
    assert enabled() and tasks() == 0

    off = client.post("/schedules/disable", data={"name": "nightly.report", "csrf": token})
    assert off.status_code == 303 and off.headers["location"].startswith("/schedules?notice=")
    assert not enabled()
    assert "Schedule nightly.report is disabled." in client.get(off.headers["location"]).text
    assert client.post("/schedules/enable", data={"name": "nightly.report", "csrf": token}).status_code == 303
    assert enabled()

    run = client.post("/schedules/run", data={"name": "nightly.report", "csrf": token}, follow_redirects=True)
    assert run.status_code == 200 and tasks() == 1
    task = db_conn.execute("select id from conductor.tasks where kind = 'report.nightly'").fetchone()[0]  # type: ignore[index]
    assert f"Schedule nightly.report fired: task {task}." in run.text
    fire = db_conn.execute("select manual, task_id from conductor.schedule_fires").fetchall()
    assert fire == [(True, task)]
    assert db_conn.execute("select next_due_at from conductor.schedules").fetchone() == due  # untouched
    row = schedule_row(run.text, "nightly.report")
    assert "(manual)" in row and f'<a href="/runs/{task}">task {task}</a>' in row

    missing = client.post("/schedules/run", data={"name": "no-such", "csrf": token}, follow_redirects=True)
    assert missing.status_code == 200 and "Could not run schedule no-such" in missing.text
    assert client.post("/schedules/explode", data={"name": "nightly.report", "csrf": token}).status_code == 404
    assert client.post("/schedules/run", data={"csrf": token}).status_code == 400
    assert tasks() == 1


def test_pause_and_resume_a_queue(app: Conductor, db_conn: Conn, client: httpx.Client) -> None:
    app.enqueue("mail.send", {}, queue="mail")
    token = csrf_of(client)

    def paused() -> list[str]:
        return [str(r[0]) for r in db_conn.execute("select queue from conductor.paused_queues order by queue")]

    home = client.get("/").text
    assert re.search(r'<tr data-queue="mail"><td>', home) and "value=pause" in home
    assert client.post("/queues/pause", data={"queue": "mail"}).status_code == 403
    assert paused() == []

    resp = client.post("/queues/pause", data={"queue": "mail", "csrf": token}, follow_redirects=True)
    assert resp.status_code == 200 and paused() == ["mail"]
    assert "Queue mail is paused." in resp.text
    row = re.search(r'<tr data-queue="mail" data-paused>.*?</tr>', resp.text)
    assert row and "<span class=paused data-paused" in row.group(0) and "value=resume" in row.group(0)
    again = client.post("/queues/pause", data={"queue": "mail", "csrf": token}, follow_redirects=True)
    assert "Queue mail was paused already." in again.text

    # a paused queue with nothing to show in stats() still has its row, to be resumed
    client.post("/queues/pause", data={"queue": "idle-queue", "csrf": token})
    assert paused() == ["idle-queue", "mail"]
    assert re.search(r'<tr data-queue="idle-queue" data-paused>.*?value=resume', client.get("/").text)

    resumed = client.post("/queues/resume", data={"queue": "mail", "csrf": token}, follow_redirects=True)
    assert "Queue mail is resumed." in resumed.text and paused() == ["idle-queue"]
    assert re.search(r'<tr data-queue="mail"><td>', resumed.text)
    assert client.post("/queues/drain", data={"queue": "mail", "csrf": token}).status_code == 404


def claim_one(conn: Conn, queue: str) -> tuple[int, int]:
    """(task id, attempt id) of one task of ``queue`` claimed by worker 'w1'."""
    row = conn.execute("select task_id, attempt_id from conductor.claim(worker_id => 'w1', queues => %s, "
                       "max_tasks => 1, lease => '60 seconds')", ([queue],)).fetchone()  # fmt: skip
    assert row is not None
    return int(str(row[0])), int(str(row[1]))


def test_the_run_page_shows_each_attempts_log_lines_escaped(
    app: Conductor, db_conn: Conn, client: httpx.Client
) -> None:
    app.enqueue("scrape.page", {}, queue="logs")
    task, attempt = claim_one(db_conn, "logs")
    assert "No log lines." in client.get(f"/runs/{task}").text
    lines = [
        {"at": "2026-11-30T12:00:00.123Z", "level": "INFO", "logger": "scraper", "message": "fetching page 1"},
        {"at": "2026-11-30T12:00:01.456Z", "level": "WARNING", "logger": "scraper<x>",
         "message": "<script>alert('xss')</script>\nsecond line"},
    ]  # fmt: skip
    db_conn.execute("insert into conductor.attempt_logs (attempt_id, lines, dropped) values (%s, %s, 3)",
                    (attempt, psycopg.types.json.Jsonb(lines)))  # fmt: skip

    page = client.get(f"/runs/{task}").text
    logs = page[page.index("<section id=logs>") :]
    assert page.index("id=tree") < page.index("<section id=logs>")  # beside the tree
    assert f'<div class=log data-attempt="{attempt}">' in logs and "(2 lines, 3 dropped)" in logs
    assert "fetching page 1" in logs and "2026-11-30T12:00:00.123Z" in logs and "<tr class=lv-warning>" in logs
    assert "&lt;script&gt;alert(&#x27;xss&#x27;)&lt;/script&gt;\nsecond line" in logs and "scraper&lt;x&gt;" in logs
    assert "<script>alert" not in page and "3 more line(s) were dropped" in logs


class EventReader:
    """A ``/events`` stream over a plain socket (so closing it closes the connection at
    once, as a browser leaving does), its lines read by a thread and awaited with a timeout."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        import queue
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
        head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": parts.netloc, "Accept": "text/event-stream",
                                                    **(headers or {})}.items())  # fmt: skip
        self.sock.sendall(f"GET {parts.path} HTTP/1.1\r\n{head}\r\n".encode())
        self.sock.settimeout(None)
        self.file = self.sock.makefile("rb")
        self.status = int(self.file.readline().split()[1])
        self.headers: dict[str, str] = {}
        while line := self.file.readline().decode().strip():
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        chunked = self.headers.get("transfer-encoding") == "chunked"
        buffer = b""
        try:
            while True:
                if chunked:
                    size = int(self.file.readline().strip() or b"0", 16)
                    if size == 0:
                        break
                    buffer += self.file.read(size)
                    self.file.readline()
                else:
                    chunk = self.file.read1(65536)
                    if not chunk:
                        break
                    buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    self.lines.put(line.decode().rstrip("\r"))
        except (OSError, ValueError):
            pass
        self.lines.put(None)

    def until(self, predicate: Callable[[str], bool], timeout: float = 10.0) -> str:
        """The first line (from now) that ``predicate`` accepts; AssertionError at the stream's end or timeout."""
        import queue

        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no such line within {timeout} s") from None
            if line is None:
                raise AssertionError("the stream ended")
            if predicate(line):
                return line

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.thread.join(5)
        self.file.close()
        self.sock.close()


def subscribers(conn: Conn) -> list[tuple[object, ...]]:
    return conn.execute("select topic from conductor.subscriptions order by topic").fetchall()


def test_events_need_the_token_and_stream_a_message_after_an_enqueue(
    app: Conductor, db_conn: Conn, db_dsn: str
) -> None:
    with DashboardServer(db_dsn, "127.0.0.1", 0, token="s3cret-token") as server:
        anon = httpx.get(server.url + "/events", timeout=10)
        assert anon.status_code == 401 and anon.text.startswith("401 unauthorized") and "<form" not in anon.text
        assert subscribers(db_conn) == []  # nobody looks: nothing subscribes, the engine publishes nothing

        reader = EventReader(server.url + "/events", {"Authorization": "Bearer s3cret-token"})
        try:
            assert reader.status == 200 and reader.headers["content-type"].startswith("text/event-stream")
            reader.until(lambda line: line == "event: ready")
            assert subscribers(db_conn) == [("tasks",)]
            task = app.enqueue("live.task", {}, queue="live")
            data = json.loads(reader.until(lambda line: line.startswith("data: {")).removeprefix("data: "))
            assert data["topic"] == "tasks" and data["payload"] == {"event": "queued", "queue": "live"}
            app.cancel(task)
            data = json.loads(reader.until(lambda line: line.startswith("data: {")).removeprefix("data: "))
            assert data["payload"]["event"] == "finished" and task in data["payload"]["ids"]

            second = EventReader(server.url + "/events", {"Authorization": "Bearer s3cret-token"})
            second.until(lambda line: line == "event: ready")  # the hub is subscribed already
            assert subscribers(db_conn) == [("tasks",)]  # one session for every browser
            second.close()
        finally:
            reader.close()
        # the last browser went away: the hub unsubscribes
        wait_until(lambda: subscribers(db_conn) == [], timeout=2)
        assert server.app.state.dashboard.events.streams == 0


def test_events_say_so_when_the_schema_has_no_bus(db_conn: Conn, db_dsn: str) -> None:
    db_conn.execute("drop function if exists conductor.subscribe(text[]) cascade")
    with DashboardServer(db_dsn, "127.0.0.1", 0) as server:
        reader = EventReader(server.url + "/events")
        try:
            reader.until(lambda line: line == "event: unavailable")
            with pytest.raises(AssertionError, match="the stream ended"):
                reader.until(lambda line: False)
        finally:
            reader.close()


def test_stopping_the_server_ends_open_streams(db_dsn: str) -> None:
    server = DashboardServer(db_dsn, "127.0.0.1", 0).start()
    reader = EventReader(server.url + "/events")
    try:
        reader.until(lambda line: line.startswith(": conductor"))
        started = time.monotonic()
        server.stop()
        assert time.monotonic() - started < 5
        assert not server._thread.is_alive()
    finally:
        reader.close()


def test_a_run_id_that_is_no_bigint_is_not_found(app: Conductor, client: httpx.Client) -> None:
    task = app.enqueue("ids.kind", {})
    token = csrf_of(client)
    for bad in ("99999999999999999999999", str(2**63), "-1", "1_0", "%201", "%D9%A1", "1e3", "0x10", "abc"):
        assert client.get(f"/runs/{bad}").status_code == 404, bad
        assert client.get(f"/runs/{bad}", params={"fragment": "1"}).status_code == 404, bad
        for action in ("retry", "cancel"):
            assert client.post(f"/runs/{bad}/{action}", data={"csrf": token}).status_code == 404, (bad, action)
    assert client.get(f"/runs/{2**63 - 1}").status_code == 404  # the largest bigint: no such task
    assert client.get(f"/runs/{task}").status_code == 200
    assert client.get("/runs", params={"before": "99999999999999999999999"}).status_code == 400
    assert client.get("/runs", params={"before": "1_0"}).status_code == 400
    assert client.get("/runs", params={"before": str(2**63 - 1)}).status_code == 200
    assert app.get(task).status == "queued"


def test_a_notice_shows_only_what_the_dashboard_said_to_this_browser(app: Conductor, client: httpx.Client) -> None:
    task = app.enqueue("notice.kind", {})
    spoof = "Your session expired: log in again at https://evil.example"
    for params in ({"notice": spoof}, {"notice": spoof, "sig": "0" * 32}, {"notice": spoof, "sig": ""}):
        for path in (f"/runs/{task}", "/", "/schedules"):
            page = client.get(path, params=params)
            assert (
                page.status_code == 200 and "id=notice" not in page.text and "Your session expired" not in page.text
            ), path

    token = csrf_of(client)
    done = client.post(f"/runs/{task}/cancel", data={"csrf": token})
    assert done.status_code == 303
    location = done.headers["location"]
    assert location.startswith(f"/runs/{task}?notice=") and "&sig=" in location
    assert "<p class=notice id=notice>Cancelled 1 task(s).</p>" in client.get(location).text
    assert "id=notice" in client.get(location + "&fragment=1").text  # the live refresh keeps it
    # the signature binds the notice's text and the browser: another text, or another browser, shows nothing
    assert "id=notice" not in client.get(location.replace("Cancelled+1", "Cancelled+9")).text
    with httpx.Client(base_url=str(client.base_url), timeout=10) as other:
        assert "id=notice" not in other.get(location).text


def test_login_allows_a_few_wrong_tokens_a_minute_per_address(db_dsn: str) -> None:
    with DashboardServer(db_dsn, "127.0.0.1", 0, token="s3cret-token") as server:
        limiter = server.app.state.dashboard.logins
        now = [1000.0]
        limiter.clock = lambda: now[0]
        with httpx.Client(base_url=server.url, timeout=10) as c:
            c.get("/login")
            csrf = str(c.cookies[CSRF_COOKIE])
            for _ in range(5):
                assert c.post("/login", data={"csrf": csrf, "token": "guess"}).status_code == 401
                now[0] += 1
            refused = c.post("/login", data={"csrf": csrf, "token": "guess"})
            assert refused.status_code == 429 and refused.headers["retry-after"] == "55"
            assert "too many wrong tokens" in refused.text
            # the right token too: a guesser learns nothing while refused
            assert c.post("/login", data={"csrf": csrf, "token": "s3cret-token"}).status_code == 429
            assert c.get("/login").status_code == 200  # the form itself is not limited
            now[0] += 54.5
            assert c.post("/login", data={"csrf": csrf, "token": "s3cret-token"}).headers["retry-after"] == "1"
            now[0] += 0.5  # the first wrong token is a minute old: one more try
            assert c.post("/login", data={"csrf": csrf, "token": "guess"}).status_code == 401
            assert c.post("/login", data={"csrf": csrf, "token": "s3cret-token"}).status_code == 429
            now[0] += 1
            ok = c.post("/login", data={"csrf": csrf, "token": "s3cret-token"})
            assert ok.status_code == 303 and AUTH_COOKIE in ok.headers["set-cookie"]
            assert limiter.retry_after("127.0.0.1") == 0  # a right token forgets the wrong ones


def test_the_login_limiter_counts_per_address_and_forgets() -> None:
    limiter = LoginLimiter(max_failures=3, window=60, max_addresses=2)
    now = [0.0]
    limiter.clock = lambda: now[0]
    for _ in range(3):
        limiter.failed("10.0.0.1")
    assert limiter.retry_after("10.0.0.1") == 60 and limiter.retry_after("10.0.0.2") == 0
    limiter.failed("10.0.0.2")
    now[0] = 30
    assert limiter.retry_after("10.0.0.1") == 30
    limiter.failed("10.0.0.3")  # a third address: the least recently failed (10.0.0.1) is forgotten
    assert limiter.retry_after("10.0.0.1") == 0
    now[0] = 100
    assert limiter.retry_after("10.0.0.2") == 0 and not limiter._failures.get("10.0.0.2")


def test_names_stored_before_the_kind_rule_are_shown_escaped(
    app: Conductor, db_conn: Conn, client: httpx.Client
) -> None:
    """A kind stored before v0.3.0 (the rule refuses it now) and a worker's id follow no
    display rule of their own: a page shows their control and format characters as escapes,
    so a U+202E reorders nothing and a newline starts no line."""
    legacy = "invoice\u202efdp.exe\n<b>"
    task = app.enqueue("names.placeholder", {}, queue="names")
    db_conn.execute("update conductor.tasks set kind = %s where id = %s", (legacy, task))
    db_conn.execute("select conductor.register_worker(worker_id => %s, host => %s, queues => %s)",
                    ("w\u202e1", "host\u2066x", ["names"]))  # fmt: skip
    shown = "invoice\\u202efdp.exe\\n&lt;b&gt;"
    for page in (client.get("/runs").text, client.get(f"/runs/{task}").text):
        assert shown in page and "\u202e" not in page and "\n<b>" not in page
    home = client.get("/").text
    assert "w\\u202e1" in home and "host\\u2066x" in home and "\u202e" not in home and "\u2066" not in home


def test_the_run_page_numbers_each_attempt_in_claim_order(app: Conductor, db_conn: Conn, client: httpx.Client) -> None:
    """Issue 27: a lost attempt and the one that finished read #1 and #2 (the budget counter
    each claim stored reads 1 twice), and the budget reads 'tries used 1 of 1' apart."""
    task = app.enqueue("scrape.page", {}, queue="numbers")
    claim_one(db_conn, "numbers")
    db_conn.execute("update conductor.tasks set lease_expires_at = now() - interval '1 second' where id = %s", (task,))
    db_conn.execute("select conductor.reap()")
    _, second = claim_one(db_conn, "numbers")
    db_conn.execute("select conductor.complete(%s, '{}')", (second,))
    page = client.get(f"/runs/{task}").text
    rows = re.findall(r'<tr data-attempt="(\d+)"><td class=n>(\d+)<td class=label>([^<]*)<td class=n>(\d+)<td>', page)
    assert [int(n) for _, n, _, _ in rows] == [1, 2] and int(rows[1][3]) == second, rows
    assert [label for _, _, label, _ in rows] == ["attempt 1", "attempt 2"], rows  # a lost attempt is no resume
    assert re.search(r"<tr><th>tries used<td>1 of 1 \(recoveries 1", page), page[:3000]
    assert "lost" in page and "succeeded" in page
    runs = client.get("/runs?queue=numbers").text
    assert "<th>tries used" in runs and "<td class=n>1/1" in runs


def test_the_run_page_draws_the_timeline_and_labels_each_resume(
    app: Conductor, db_conn: Conn, client: httpx.Client
) -> None:
    """Issue 29: a durable run that waited for an event reads 'attempt 1' then 'attempt 1, resume 1', not
    two first attempts, and its timeline draws the attempts, the step and the wait, in time order."""
    task = app.enqueue("order", {}, queue="timeline")
    _, first = claim_one(db_conn, "timeline")
    db_conn.execute("select conductor.save_step(%s, 'reserve', '{}')", (first,))
    db_conn.execute("select conductor.suspend(%s, 'approved', 'event', 'tl-approved')", (first,))
    db_conn.execute("select conductor.emit_event('tl-approved', '{}')")
    _, second = claim_one(db_conn, "timeline")
    db_conn.execute("select conductor.fail(%s, '<script>alert(1)</script>')", (second,))
    page = client.get(f"/runs/{task}").text
    labels = re.findall(r'<tr data-attempt="\d+"><td class=n>\d+<td class=label>([^<]*)<', page)
    assert labels == ["attempt 1", "attempt 1, resume 1"], labels
    bars = re.findall(r'<rect class="bar \w+" data-span="(\w+)" data-what="(\w+)"', page)
    assert [b for b in bars if b[0] != "queued"] == [
        ("task", "failed"), ("attempt", "suspended"), ("step", "step"), ("wait", "event"), ("attempt", "failed"),
    ], bars  # fmt: skip
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;</title>" in page


# -- bulk actions by filter (issue 29; the browser's walk-through is test_browser_bulk.py) --


def bulk_links(page: str) -> list[str]:
    return re.findall(r"<a id=bulk-(\w+) ", page)


def test_the_runs_page_offers_the_bulk_actions_a_filter_allows(client: httpx.Client) -> None:
    assert bulk_links(client.get("/runs").text) == []  # no filter: every task would match
    assert bulk_links(client.get("/runs", params={"kind": "x"}).text) == ["retry", "cancel"]
    assert bulk_links(client.get("/runs", params={"status": "failed"}).text) == ["retry"]
    assert bulk_links(client.get("/runs", params={"status": "waiting"}).text) == ["cancel"]
    assert bulk_links(client.get("/runs", params={"status": "succeeded"}).text) == []
    assert bulk_links(client.get("/runs", params={"error": "boom"}).text) == ["retry", "cancel"]
    bad = client.get("/runs", params={"from": "last tuesday"})
    assert bad.status_code == 400 and "from is a time" in bad.text


def test_bulk_requests_the_database_refuses_are_said_and_change_nothing(
    app: Conductor, db_conn: Conn, client: httpx.Client
) -> None:
    app.enqueue("bulk.refused", {}, queue="br")
    failed = fail_task(db_conn, "br")
    token = csrf_of(client)
    assert client.get("/bulk/explode", params={"kind": "x"}).status_code == 404
    assert client.get("/bulk/retry", params={"status": "nope"}).status_code == 400
    assert client.get("/bulk/retry", params={"until": "soon"}).status_code == 400
    empty = client.get("/bulk/retry")  # QC209, from the database
    assert empty.status_code == 200 and "an empty filter matches every task" in empty.text
    assert "id=confirm" not in empty.text
    wrong_status = client.get("/bulk/cancel", params={"status": "failed"})  # QC204
    assert "a failed task cannot be cancelled" in wrong_status.text and "id=confirm" not in wrong_status.text
    nothing = client.get("/bulk/retry", params={"queue": "no-such-queue"})
    assert "No task matches now: nothing to retry." in nothing.text and "id=confirm" not in nothing.text
    # the confirmation is not refreshed live: no live region, no script
    assert "id=live" not in nothing.text and "<script" not in nothing.text

    form = {"csrf": token, "queue": "br", "status": "failed"}
    assert client.post("/bulk/retry", data=form).status_code == 400  # no expected count
    assert client.post("/bulk/retry", data={**form, "expected": "0"}).status_code == 400
    assert client.post("/bulk/retry", data={**form, "expected": "two"}).status_code == 400
    assert client.post("/bulk/retry", data={**form, "status": "gone", "expected": "1"}).status_code == 400
    assert client.post("/bulk/retry", data={**form, "expected": "1"}, headers={"Origin": "https://evil.example"}
                       ).status_code == 403  # fmt: skip
    assert app.get(failed).status == "failed"


def test_a_bulk_action_runs_in_batches_and_a_retry_takes_no_more_than_confirmed(
    app: Conductor, db_conn: Conn, server: DashboardServer, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyconductor.dashboard

    monkeypatch.setattr(pyconductor.dashboard, "BULK_BATCH", 2)  # the server runs in this process
    data = server.app.state.dashboard.data
    act = data.act_matching
    batches: list[tuple[str, int, int]] = []

    def recorded(action: str, bulk: object, expected: int, batch: int) -> int:
        changed: int = act(action, bulk, expected, batch)
        batches.append((action, batch, changed))
        return changed

    monkeypatch.setattr(data, "act_matching", recorded)
    for _ in range(5):
        app.enqueue("bulk.batched", {}, queue="bb")
    ids = [fail_task(db_conn, "bb") for _ in range(5)]
    token = csrf_of(client)
    resp = client.post("/bulk/retry", data={"csrf": token, "kind": "bulk.batched", "expected": "5"},
                       follow_redirects=True)  # fmt: skip
    assert resp.status_code == 200 and "Retried 5 tasks." in resp.text
    assert {app.get(i).status for i in ids} == {"queued"}
    # a retried task that failed again would match again: retry stops at the count confirmed
    assert batches == [("retry", 2, 2), ("retry", 2, 2), ("retry", 1, 1)]

    batches.clear()
    resp = client.post("/bulk/cancel", data={"csrf": token, "queue": "bb", "expected": "5"}, follow_redirects=True)
    assert "Cancelled 5 tasks, descendants included." in resp.text
    assert {app.get(i).status for i in ids} == {"cancelled"}
    assert batches == [("cancel", 2, 2), ("cancel", 2, 2), ("cancel", 2, 1), ("cancel", 2, 0)]


def test_a_dashboard_without_the_admin_role_says_bulk_actions_need_it(app: Conductor, db_dsn: str,
                                                                     db_conn: Conn) -> None:  # fmt: skip
    from logins import worker_logins

    app.enqueue("bulk.noadmin", {}, queue="bn")
    task = fail_task(db_conn, "bn")
    with (
        worker_logins(db_dsn, "dashclient", grant="conductor_client") as [(_, dsn)],
        DashboardServer(dsn, "127.0.0.1", 0) as server,
        httpx.Client(base_url=server.url, timeout=10) as c,
    ):
        page = c.get("/bulk/retry", params={"queue": "bn"})
        assert page.status_code == 200
        assert "Could not retry: bulk actions need the conductor_admin role" in page.text
        assert "id=confirm" not in page.text
        done = c.post("/bulk/retry", data={"csrf": csrf_of(c), "queue": "bn", "expected": "1"},
                      follow_redirects=True)  # fmt: skip
        assert "Could not retry: bulk actions need the conductor_admin role. Nothing changed." in done.text
    assert app.get(task).status == "failed"


def test_the_sampler_feeds_the_charts_once_a_minute(db_dsn: str, client: httpx.Client) -> None:
    """The maintenance role's duty (pyconductor.samples.Sampler) writes the last whole minute once
    and waits for the next minute on the database's clock; the queues page and /series read it."""
    from psycopg.rows import dict_row

    from pyconductor.samples import Sampler

    with psycopg.connect(db_dsn, autocommit=True, row_factory=dict_row) as conn:
        conn.execute("select conductor.enqueue(kind => 'k', queue => 'sampled')")
        sampler = Sampler()
        wait = sampler.lead(conn)
        assert 1.0 <= wait <= 61.0 and sampler.minutes >= 1
        last = conn.execute(
            "select max(minute) as m from conductor.sample_minutes where sampled_at is not null"
        ).fetchone()
        depth = conn.execute("select depth from conductor.queue_samples where queue = 'sampled' and minute = %s",
                             (last["m"],)).fetchone()  # fmt: skip
        assert depth == {"depth": 1}
    series = client.get("/series", params={"range": "day", "queue": "sampled"}).json()
    assert series["step_s"] == 600 and max(p["depth"] or 0 for p in series["queues"]["sampled"]) == 1
    page = client.get("/").text
    assert 'data-chart-queue="sampled"' in page and 'id=range-day href="/?range=day"' in page
    assert client.get("/", params={"range": "week"}).status_code == 400
    assert client.get("/series", params={"range": "week"}).status_code == 400


def finished_run(conn: Conn, queue: str, steps: list[str]) -> int:
    """A task of ``queue`` claimed as worker 'w1' that saved ``steps`` in order and succeeded."""
    task = conn.execute("select conductor.enqueue('five', '{}', %s)", (queue,)).fetchone()[0]
    attempt = conn.execute("select attempt_id from conductor.claim('w1', array[%s])", (queue,)).fetchone()[0]
    for name in steps:
        conn.execute("select conductor.save_step(%s, %s, '1')", (attempt, name))
    conn.execute("select conductor.complete(%s, '{}')", (attempt,))
    return int(task)


def test_rewind_and_fork_from_the_run_page_after_a_confirmation(app: Conductor, db_conn: Conn,
                                                                 client: httpx.Client) -> None:  # fmt: skip
    task = finished_run(db_conn, "rw", ["s1", "s2", "s3"])
    page = client.get(f"/runs/{task}").text
    assert f'action="/runs/{task}/rewind"' in page and f'action="/runs/{task}/fork"' in page
    assert re.findall(rf'<select name=step id="rewind-step-{task}">(.*?)</select>', page) == [
        '<option value="s1">s1</option><option value="s2">s2</option><option value="s3">s3</option>']

    confirm = client.get(f"/runs/{task}/rewind", params={"step": "s2"}).text
    assert "<span id=kept>s1</span>" in confirm and "<span id=again>s2, s3</span>" in confirm
    assert app.get(task).status == "succeeded", "the confirmation page changes nothing"
    assert "has no step nope" in client.get(f"/runs/{task}/rewind", params={"step": "nope"}).text

    token = csrf_of(client)
    assert client.post(f"/runs/{task}/rewind", data={"step": "s2"}).status_code == 403, "no CSRF token"
    done = client.post(f"/runs/{task}/rewind", data={"csrf": token, "step": "s2"}, follow_redirects=True)
    assert f"Task {task} is queued again from step s2." in done.text
    assert app.get(task).status == "queued"
    assert [r[0] for r in db_conn.execute("select name from conductor.steps where task_id = %s order by seq",
                                          (task,))] == ["s1"]  # fmt: skip
    again = client.post(f"/runs/{task}/rewind", data={"csrf": token, "step": "s1"}, follow_redirects=True)
    assert f"Could not rewind task {task}" in again.text, "a queued run is refused (QC204), the page says so"

    source = finished_run(db_conn, "fk", ["a", "b"])
    forked = client.post(f"/runs/{source}/fork", data={"csrf": token, "step": "b"})
    assert forked.status_code == 303
    copy = int(re.match(r"/runs/(\d+)\?", forked.headers["location"]).group(1))  # type: ignore[union-attr]
    info = app.get(copy)
    assert (info.forked_from, info.forked_at_step, info.status) == (source, "b", "queued")
    assert f"<td id=forked-from><a href='/runs/{source}'>{source}</a> at step b" in client.get(f"/runs/{copy}").text
    unknown = client.post(f"/runs/{source}/fork", data={"csrf": token, "step": "zz"}, follow_redirects=True)
    assert f"has no step &#x27;zz&#x27;" in unknown.text or "has no step 'zz'" in unknown.text


def test_the_run_page_shows_the_code_version_its_run_started_on(db_conn: Conn, client: httpx.Client) -> None:
    task = db_conn.execute("select conductor.enqueue('five', '{}', 'cv-page')").fetchone()[0]
    plain = db_conn.execute("select conductor.enqueue('five', '{}', 'cv-page-plain')").fetchone()[0]
    db_conn.execute("select conductor.claim('w1', array['cv-page'], 1, code_versions => array['2026.12-a', 'v2'])")
    page = client.get(f"/runs/{task}").text
    assert "<td id=code-version>2026.12-a" in page
    assert "id=code-version" not in client.get(f"/runs/{plain}").text
