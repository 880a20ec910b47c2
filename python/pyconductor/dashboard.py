"""``pyconductor dashboard``: a server-rendered web page over the conductor schema.

Pages (plain HTML, one inline script for live refresh, no build step):

  /                queues (depth, backlog age, throughput from ``conductor.stats()``),
                   charts over time per queue (``?range=hour`` or ``day``: finished and
                   failed per step, backlog depth and age, from ``conductor.queue_series``),
                   live workers and leader leases
  /series          the charts' points as JSON (``?range=hour|day``, ``&queue=`` any number
                   of times; none: every queue sampled), for scripts without Prometheus
  /runs            tasks newest first, filtered by status, kind and queue, paginated
                   by keyset on id (``conductor.list_tasks(before_id => ...)``); its
                   form also takes a time range (from, until; on enqueued or finished)
                   and error text, and once a filter is set links to the bulk actions
  /runs/{id}       one run: the task, its tree (parent, root, descendants by
                   root_id), each task's attempts (worker, times, error, traceback)
                   and, when ``conductor.steps`` exists, its steps
                   and the handler log lines of the task's attempts beside it
  /graphs/{id}     a graph's tasks by layer (``conductor.graph``: name, kind, status, what
                   each runs after, the callbacks last), each linked to its run page;
                   a member's run page links to its graph
  /search          find tasks by kind, queue, status, dedupe key, a payload field
                   (JSON containment) and enqueued or finished time, a page at a time
                   (``conductor.search_tasks``: each page examines at most 10,000
                   tasks through an index; a page cut short says so and links
                   "search further"); not live-refreshed, so the form stays as typed
  /schedules       every schedule: cron, next due time, last fire (manual or due),
                   last error; Enable/Disable and Run now
  POST /runs/{id}/retry, /runs/{id}/cancel   ``conductor.retry`` / ``conductor.cancel``
  /runs/{id}/rewind, /runs/{id}/fork?step=   the confirmation of a rewind or fork from a step
  POST /runs/{id}/rewind, /runs/{id}/fork    ``conductor.rewind`` / ``conductor.fork`` (field step)
  POST /schedules/enable, /disable, /run     ``conductor.enable_schedule`` / ``fire_schedule``
                   (field ``name``)
  POST /queues/pause, /queues/resume          ``conductor.pause_queue`` / ``resume_queue``
                   (field ``queue``)
  /bulk/retry, /bulk/cancel   retry or cancel every task a filter matches (the query of
                   /runs): a confirmation page, never refreshed live, with the count and
                   newest ids from ``conductor.preview_matching``, the filter in words and
                   a form; it changes nothing
  POST /bulk/retry, /bulk/cancel   ``conductor.retry_matching`` / ``cancel_matching`` (admin
                   only) with the filter and ``expected``, the count confirmed, a batch a
                   statement until none is left; back to /runs with a notice (QC210: more
                   match now than confirmed; the login lacks conductor_admin)
  /events          Server-Sent Events: one message per event-bus message of topic
                   ``tasks`` (a task queued or finished), for the pages' live updates

Live updates: every page re-fetches its own content (``?fragment=1``) when
``/events`` sends a message, at most every 250 ms, and every 2 seconds while
the stream is down (the schema has no event bus, the database connection was
lost, the browser gave up on the stream). The server holds one listening
session for all its browsers (:class:`EventHub`), subscribed to the bus only
while a browser is connected: with none, the engine publishes nothing.

Security (see DESIGN.md, Security):

- it listens on loopback unless given a token; :func:`check_bind` refuses any
  other address without one;
- it answers only to a Host header naming this server (loopback names, the
  bound address, ``allowed_hosts``; see :mod:`pyconductor.access`), so a DNS
  rebinding page reads and cancels nothing; anything else gets 421;
- with a token, every request must carry it: ``Authorization: Bearer <token>``,
  or the session cookie that ``/login`` sets after the token was typed in
  (its issue time and an HMAC of it keyed by the token; HttpOnly,
  SameSite=Strict, Secure when the page came over TLS or ``secure_cookies``
  says a TLS proxy serves it; valid for ``session_max_age``, 12 h by
  default, which the server checks too); anything else gets 401;
- ``POST /login`` takes at most ``LOGIN_MAX_FAILURES`` (5) wrong tokens per
  client address in ``LOGIN_WINDOW`` (60) seconds, then answers 429 with
  ``Retry-After`` until the oldest of them is a window old (behind a proxy,
  the address is the one uvicorn trusts: ``--forwarded-allow-ips``);
- actions are POSTs with a CSRF token: a random per-session value in the
  cookie ``conductor_csrf`` (SameSite=Strict) that the form must repeat in the
  field ``csrf``; a missing or different value, or an ``Origin`` or
  ``Sec-Fetch-Site`` header naming another site, gets 403;
- an action's outcome comes back as ``?notice=...&sig=...``, and a page shows
  the notice only when ``sig`` is this process's HMAC of it and of the
  browser's CSRF cookie: a link made elsewhere cannot make a page say anything;
- a run id is a decimal integer within bigint; anything else is 404;
- responses forbid framing and carry a Content-Security-Policy whose only
  script is the page's own (by nonce).

The app is its routes: each parses the request, asks the data layer
(:mod:`pyconductor.web.reads`, whose statements are the ``DASHBOARD_*`` ones of
:mod:`pyconductor.queries`: index-backed and bounded, nothing counts or scans
finished history but a bulk action's confirmation, once for the person who asked)
and hands what it read to a page (:mod:`pyconductor.web.pages`).
Who may use it is :mod:`pyconductor.web.auth`; the live updates,
:mod:`pyconductor.web.events`.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import math
import re
import secrets
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, Self, TypeVar

import psycopg
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from pyconductor import statuses
from pyconductor.access import HostCheck, is_loopback
from pyconductor.dsn import redact_dsn
from pyconductor.errors import (
    ConductorError,
    GraphNotFound,
    InvalidArgument,
    InvalidState,
    MatchesMoreThanExpected,
    NotFound,
)
from pyconductor.web import pages
from pyconductor.web.auth import (
    AUTH_COOKIE,
    CSRF_COOKIE,
    DEFAULT_HOST,
    SESSION_MAX_AGE,
    Access,
    DashboardConfigError,
    LoginLimiter,
    check_bind,
)
from pyconductor.web.events import EventHub, sse
from pyconductor.web.graph import graph_page as graph_view
from pyconductor.web.markup import content_digest, h, layout, query_string
from pyconductor.web.reads import (
    BULK_ACTIONS,
    BULK_BATCH,
    RANGES,
    SEARCH_SCAN,
    DashboardData,
    SearchFilter,
    check_release,
)

__all__ = [
    "AUTH_COOKIE",
    "CSRF_COOKIE",
    "DashboardConfigError",
    "DashboardServer",
    "LoginLimiter",
    "check_bind",
    "create_app",
    "is_loopback",
    "parse_id",
    "serve",
]

logger = logging.getLogger("pyconductor")

T = TypeVar("T")

DEFAULT_PORT = 8765
MAX_PAGE_SIZE = 500
MAX_SEARCH_SCAN = 100_000  # tasks a search page may be asked to examine (?scan=)
SSE_RETRY_MS = 1000  # the browser reconnects a dropped stream after this
SSE_KEEPALIVE = 15.0  # seconds between comment lines on an idle stream
SSE_MAX_AGE = 600.0  # seconds a stream lasts before the browser is asked to reconnect
DIGEST_HEADER = "X-Conductor-Digest"  # a fragment's hash: the live script sends what it shows, 204 if unchanged
MAX_BIGINT = 2**63 - 1
_DECIMAL = re.compile(r"[0-9]{1,19}")


def parse_id(text: str | None) -> int | None:
    """A task id as a URL gives it: ASCII decimal digits of a value within bigint
    (0 to 2**63 - 1), else None. Python's int() would also take ' 12', '1_2', '١٢'
    and values PostgreSQL's bigint cannot hold."""
    if text is None or not _DECIMAL.fullmatch(text):
        return None
    value = int(text)
    return value if value <= MAX_BIGINT else None


class Dashboard(Access):
    """What the routes share: who may use the dashboard (:class:`Access`), its
    reads and calls (``data``) and its live updates (``events``)."""

    def __init__(
        self, dsn: str, token: str | None = None, pool_size: int = 4, *, host_check: HostCheck | None = None,
        session_max_age: int = SESSION_MAX_AGE, secure_cookies: bool = False,
    ) -> None:  # fmt: skip
        super().__init__(token, host_check=host_check, session_max_age=session_max_age, secure_cookies=secure_cookies)
        self.data = DashboardData(dsn, pool_size)
        self.events = EventHub(dsn)


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    dash: Dashboard = app.state.dashboard
    await run_in_threadpool(dash.data.open)
    try:
        yield
    finally:
        await run_in_threadpool(dash.events.close)
        await run_in_threadpool(dash.data.close)


# -- pages: each parses its request, reads, and renders -------------------------------


def notice_of(request: Request) -> str:
    dash: Dashboard = request.app.state.dashboard
    return pages.notice_line(dash.notice(request))  # only what this dashboard said after this browser's action


def range_of(request: Request) -> str | None:
    """The ``range`` asked for (``hour`` when none); None for one that is not in RANGES."""
    name = request.query_params.get("range") or "hour"
    return name if name in RANGES else None


def queues_page(request: Request) -> str | Response:
    dash: Dashboard = request.app.state.dashboard
    range_name = range_of(request)
    if range_name is None:
        return PlainTextResponse(f"400 bad request: range is one of {', '.join(RANGES)}", status_code=400)
    return pages.queues(request, dash.data.queues(range_name), notice_of(request))


async def series_json(request: Request) -> Response:
    """``/series``: the charts' points as JSON, per queue in time order (oldest_age in seconds)."""
    dash: Dashboard = request.app.state.dashboard
    range_name = range_of(request)
    if range_name is None:
        return PlainTextResponse(f"400 bad request: range is one of {', '.join(RANGES)}", status_code=400)
    queues = [q for q in request.query_params.getlist("queue") if q] or None
    try:
        rows = await run_in_threadpool(dash.data.series, range_name, queues)
    except psycopg.OperationalError as exc:
        return PlainTextResponse(f"503 database unavailable: {redact_dsn(str(exc))}", status_code=503)
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["queue"], []).append({
            "at": r["at"].isoformat(), "finished": r["finished"], "failed": r["failed"], "depth": r["depth"],
            "oldest_age_s": r["oldest_age_s"], "minutes": r["minutes"],
        })  # fmt: skip
    return JSONResponse({"range": range_name, "step_s": int(RANGES[range_name][1].total_seconds()), "queues": out})


def runs_page(request: Request) -> str | Response:
    dash: Dashboard = request.app.state.dashboard
    p = request.query_params
    try:
        bulk = pages.parse_bulk(p)
    except ValueError as exc:
        return PlainTextResponse(f"400 bad request: {exc}", status_code=400)
    before = parse_id(p["before"]) if p.get("before") else None
    if p.get("before") and before is None:  # not an id within bigint: the database would refuse it (22003)
        return PlainTextResponse("400 bad request: before is a task id", status_code=400)
    try:
        limit = max(1, min(MAX_PAGE_SIZE, int(p.get("limit") or pages.PAGE_SIZE)))
    except ValueError:
        return PlainTextResponse("400 bad request: limit is an integer", status_code=400)
    view = dash.data.runs(bulk.status, bulk.queue, bulk.kind, before, limit)
    return pages.runs(view, bulk=bulk, before=before, limit=limit, notice=notice_of(request))


def search_page(request: Request) -> str | Response:
    dash: Dashboard = request.app.state.dashboard
    p = request.query_params
    values = {name: p.get(name, "") for name, _, _ in pages.SEARCH_FIELDS}
    before = parse_id(p["before"]) if p.get("before") else None
    if p.get("before") and before is None:
        return PlainTextResponse("400 bad request: before is a task id", status_code=400)
    try:
        limit = max(1, min(MAX_PAGE_SIZE, int(p.get("limit") or pages.PAGE_SIZE)))
    except ValueError:
        return PlainTextResponse("400 bad request: limit is an integer", status_code=400)
    try:  # tasks a page examines at most (search_tasks' scan_limit): ?scan=, SEARCH_SCAN by default
        scan = max(1, min(MAX_SEARCH_SCAN, int(p.get("scan") or SEARCH_SCAN)))
    except ValueError:
        return PlainTextResponse("400 bad request: scan is an integer", status_code=400)
    given = {k: v.strip() or None for k, v in values.items()}
    errors = []
    if given["status"] is not None and given["status"] not in statuses.ALL:
        errors.append(f"unknown status {given['status']!r}")
    payload = given.pop("payload")
    if payload is not None:
        try:
            parsed = json.loads(payload)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            errors.append(f'payload contains must be a JSON object, like {{"order_id": 42}}: not {payload!r}')
        else:
            payload = json.dumps(parsed)
    times: dict[str, datetime | None] = {}
    for name in ("enqueued_after", "enqueued_before", "finished_after", "finished_before"):
        text = given.pop(name)
        try:
            times[name] = pages.form_time(name.replace("_", " "), text)
        except ValueError as exc:
            errors.append(f"{exc}, not {text!r}")
    if errors:
        return pages.search(None, values=values, error="; ".join(errors), before=before, limit=limit, scan=scan)
    what = SearchFilter(kind=given["kind"], queue=given["queue"], status=given["status"],
                        dedupe_key=given["dedupe_key"], payload_contains=payload, **times)  # fmt: skip
    try:
        view = dash.data.search(what, before, limit, scan)
    except InvalidArgument as exc:  # an empty time range: the database says which
        return pages.search(None, values=values, error=str(exc).splitlines()[0], before=before, limit=limit,
                            scan=scan)  # fmt: skip
    return pages.search(view, values=values, error=None, before=before, limit=limit, scan=scan)


def run_page(request: Request) -> str | Response:
    dash: Dashboard = request.app.state.dashboard
    task_id = parse_id(request.path_params["task_id"])
    if task_id is None:
        return PlainTextResponse("404 not found", status_code=404)
    try:
        view = dash.data.run(task_id)
    except NotFound:
        return PlainTextResponse(f"404 not found: task {task_id} does not exist", status_code=404)
    return pages.run(request, view, notice_of(request))


def graph_page(request: Request) -> str | Response:
    dash: Dashboard = request.app.state.dashboard
    graph_id = parse_id(request.path_params["graph_id"])
    if graph_id is None:
        return PlainTextResponse("404 not found", status_code=404)
    try:
        nodes = dash.data.graph(graph_id)
    except GraphNotFound:
        return PlainTextResponse(f"404 not found: graph {graph_id} does not exist", status_code=404)
    return graph_view(graph_id, nodes)


def schedules_page(request: Request) -> str:
    dash: Dashboard = request.app.state.dashboard
    return pages.schedules(request, dash.data.schedules(), notice_of(request))


# -- wiring -------------------------------------------------------------------


def page(title: str, render: Callable[[Request], str | Response],
         refresh: bool = True) -> Callable[[Request], Awaitable[Response]]:  # fmt: skip
    async def endpoint(request: Request) -> Response:
        try:
            content = await run_in_threadpool(render, request)
        except psycopg.OperationalError as exc:
            return PlainTextResponse(f"503 database unavailable: {redact_dsn(str(exc))}", status_code=503)
        if isinstance(content, Response):
            return content
        digest = content_digest(content)
        if request.query_params.get("fragment"):
            if request.headers.get(DIGEST_HEADER) == digest:  # what the page shows already
                return Response(status_code=204, headers={DIGEST_HEADER: digest})
            return HTMLResponse(content, headers={DIGEST_HEADER: digest})
        return HTMLResponse(layout(request, title, content, digest=digest, refresh=refresh))

    return endpoint


async def task_action(request: Request) -> Response:
    dash: Dashboard = request.app.state.dashboard
    checked = await dash.check_csrf(request)
    if isinstance(checked, Response):
        return checked
    task_id = parse_id(request.path_params["task_id"])
    if task_id is None:
        return PlainTextResponse("404 not found", status_code=404)
    what = request.path_params["action"]
    if what not in ("retry", "cancel", *pages.STEP_ACTIONS):
        return PlainTextResponse("404 not found", status_code=404)
    step = checked.get("step", "")
    target = task_id
    try:
        if what == "retry":
            await run_in_threadpool(dash.data.retry, task_id)
            notice = f"Task {task_id} is queued again."
        elif what == "rewind":
            await run_in_threadpool(dash.data.rewind, task_id, step)
            notice = f"Task {task_id} is queued again from step {step}."
        elif what == "fork":
            target = await run_in_threadpool(dash.data.fork, task_id, step)
            notice = f"Task {target} is a copy of task {task_id} from step {step}."
        else:
            notice = f"Cancelled {await run_in_threadpool(dash.data.cancel, task_id)} task(s)."
        logger.info("dashboard: %s task %d", what, task_id, extra={"task_id": task_id})
    except NotFound:
        return PlainTextResponse(f"404 not found: task {task_id} does not exist", status_code=404)
    except (InvalidState, ConductorError) as exc:
        notice = f"Could not {what} task {task_id}: {exc.message}"
    return RedirectResponse(f"/runs/{target}{dash.notice_query(request, notice)}", status_code=303)


def step_confirm_page(request: Request) -> str | Response:
    """GET /runs/{id}/rewind|fork?step=: the confirmation page; it changes nothing."""
    dash: Dashboard = request.app.state.dashboard
    task_id = parse_id(request.path_params["task_id"])
    action = request.path_params["action"]
    if task_id is None or action not in pages.STEP_ACTIONS:
        return PlainTextResponse("404 not found", status_code=404)
    try:
        view = dash.data.run(task_id)
    except NotFound:
        return PlainTextResponse(f"404 not found: task {task_id} does not exist", status_code=404)
    steps = [s["name"] for s in view.steps.get(task_id, [])]
    return pages.step_confirm(request, task_id, action, request.query_params.get("step", ""), steps)


async def operate(call: Callable[[], T], what: str) -> tuple[T | None, str]:
    """Run an operator's action: (what it returned, '') or (None, why it could not)."""
    try:
        return await run_in_threadpool(call), ""
    except psycopg.errors.InsufficientPrivilege:
        return (
            None,
            f"Could not {what}: the dashboard's database role is not allowed to (it needs conductor_admin).",
        )
    except psycopg.errors.UndefinedFunction:
        return None, f"Could not {what}: the database's conductor schema is too old (run pyconductor migrate)."
    except ConductorError as exc:
        return None, f"Could not {what}: {exc.message}"


async def schedule_action(request: Request) -> Response:
    dash: Dashboard = request.app.state.dashboard
    checked = await dash.check_csrf(request)
    if isinstance(checked, Response):
        return checked
    what, name = request.path_params["action"], checked.get("name", "")
    if what not in ("enable", "disable", "run"):
        return PlainTextResponse("404 not found", status_code=404)
    if not name:
        return PlainTextResponse("400 bad request: no schedule name", status_code=400)
    if what == "run":
        fired, why = await operate(lambda: dash.data.fire_schedule(name), f"run schedule {name}")
        notice = why or f"Schedule {name} fired: task {fired}."
    else:
        _, why = await operate(lambda: dash.data.enable_schedule(name, what == "enable"), f"{what} schedule {name}")
        notice = why or f"Schedule {name} is {what}d."
    if not why:
        logger.info("dashboard: %s schedule %s", what, name)
    return RedirectResponse(f"/schedules{dash.notice_query(request, notice)}", status_code=303)


async def queue_action(request: Request) -> Response:
    dash: Dashboard = request.app.state.dashboard
    checked = await dash.check_csrf(request)
    if isinstance(checked, Response):
        return checked
    what, queue = request.path_params["action"], checked.get("queue", "")
    call = {"pause": dash.data.pause_queue, "resume": dash.data.resume_queue}.get(what)
    if call is None:
        return PlainTextResponse("404 not found", status_code=404)
    if not queue:
        return PlainTextResponse("400 bad request: no queue", status_code=400)
    changed, notice = await operate(lambda: call(queue), f"{what} queue {queue}")
    if not notice:
        logger.info("dashboard: %s queue %s", what, queue)
        done = "paused" if what == "pause" else "resumed"
        notice = f"Queue {queue} is {done}." if changed else f"Queue {queue} was {done} already."
    return RedirectResponse(f"/{dash.notice_query(request, notice)}", status_code=303)


def bulk_refusal(exc: Exception, expected: int | None = None) -> str:
    """Why a bulk action could not be done, in a person's words (the server's message else)."""
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return "bulk actions need the conductor_admin role"
    if isinstance(exc, psycopg.errors.UndefinedFunction):
        return "the database's conductor schema is too old (run pyconductor migrate)"
    if isinstance(exc, MatchesMoreThanExpected):
        return f"more tasks match now than you confirmed ({expected}); look again"
    if isinstance(exc, ConductorError):
        return exc.message
    text = str(exc).strip()
    return redact_dsn(text.splitlines()[0] if text else type(exc).__name__)


def bulk_action_of(request: Request) -> str | None:
    action = request.path_params["action"]
    return action if action in BULK_ACTIONS else None


async def bulk_confirm(request: Request) -> Response:
    """GET /bulk/{action}: the confirmation page (preview_matching); it changes nothing, and it is
    not refreshed live: its form confirms the count it shows."""
    dash: Dashboard = request.app.state.dashboard
    action = bulk_action_of(request)
    if action is None:
        return PlainTextResponse("404 not found", status_code=404)
    try:
        bulk = pages.parse_bulk(request.query_params)
    except ValueError as exc:
        return PlainTextResponse(f"400 bad request: {exc}", status_code=400)
    matching, sample, refusal = 0, list[int](), ""
    try:
        matching, sample = await run_in_threadpool(dash.data.preview_matching, action, bulk)
    except psycopg.OperationalError as exc:
        return PlainTextResponse(f"503 database unavailable: {redact_dsn(str(exc))}", status_code=503)
    except (psycopg.Error, ConductorError) as exc:
        refusal = bulk_refusal(exc)
    content = pages.bulk_confirm(request, action, bulk, matching, sample, refusal)
    return HTMLResponse(layout(request, f"{action.capitalize()} by filter", content, refresh=False))


async def bulk_action(request: Request) -> Response:
    """POST /bulk/{action}: retry_matching or cancel_matching, a batch a statement until none is
    left, with the count the confirmation showed as ``expected``; back to /runs with a notice."""
    dash: Dashboard = request.app.state.dashboard
    checked = await dash.check_csrf(request)
    if isinstance(checked, Response):
        return checked
    action = bulk_action_of(request)
    if action is None:
        return PlainTextResponse("404 not found", status_code=404)
    try:
        bulk = pages.parse_bulk(checked)
    except ValueError as exc:
        return PlainTextResponse(f"400 bad request: {exc}", status_code=400)
    expected = parse_id(checked.get("expected"))
    if not expected:
        return PlainTextResponse("400 bad request: expected is the count confirmed, at least 1", status_code=400)
    done, calls, refusal, unsure = 0, 0, "", False
    try:
        while True:
            # a retried task may fail again and match again: retry takes at most the count confirmed;
            # a cancelled task never matches again, and cancel's count includes descendants
            batch = min(BULK_BATCH, expected - done) if action == "retry" else BULK_BATCH
            if batch <= 0 or calls > expected // BULK_BATCH + 1:
                break
            changed = await run_in_threadpool(dash.data.act_matching, action, bulk, expected, batch)
            calls += 1
            if changed == 0:
                break
            done += changed
    except psycopg.OperationalError as exc:  # the last batch may have committed: say so
        refusal = f"the database went away ({bulk_refusal(exc)}); look at the tasks again"
        unsure = True
    except (psycopg.Error, ConductorError) as exc:  # the batch that raised changed nothing
        refusal = bulk_refusal(exc, expected)
    past = "Retried" if action == "retry" else "Cancelled"
    tasks = "1 task" if done == 1 else f"{done} tasks"
    if action == "cancel":
        tasks += ", descendants included"
    if refusal and (done or unsure):
        notice = f"{past} {tasks}, then stopped: {refusal}."
    elif refusal:
        notice = f"Could not {action}: {refusal}. Nothing changed."
    else:
        notice = f"{past} {tasks}."
    logger.info("dashboard: bulk %s of %d task(s)%s", action, done, f" ({refusal})" if refusal else "",
                extra={"bulk_action": action, "changed": done})  # fmt: skip
    return RedirectResponse(f"/runs{query_string({**pages.bulk_query(bulk), **dash.notice_params(request, notice)})}",
                            status_code=303)  # fmt: skip


async def event_stream(request: Request) -> Response:
    dash: Dashboard = request.app.state.dashboard
    stream = dash.events.join()
    if stream is None:
        return PlainTextResponse("503 the dashboard is stopping", status_code=503)

    async def gone() -> None:
        # uvicorn tells a streaming response of a closed connection only when it next
        # writes; this tells at once, so the hub unsubscribes as the last browser leaves
        while (await request.receive())["type"] != "http.disconnect":
            pass
        stream.send("end")

    async def body() -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        until = loop.time() + SSE_MAX_AGE
        watcher = asyncio.ensure_future(gone())
        try:
            yield f"retry: {SSE_RETRY_MS}\n: conductor events\n\n"
            while loop.time() < until:
                try:
                    event, data = await asyncio.wait_for(stream.queue.get(), SSE_KEEPALIVE)
                except TimeoutError:
                    yield ": keepalive\n\n"
                    continue
                if event == "end":
                    return
                yield sse(event, data)
                if event == "unavailable":
                    return
        finally:
            watcher.cancel()
            dash.events.leave(stream)

    return StreamingResponse(body(), media_type="text/event-stream", headers={"X-Accel-Buffering": "no"})


async def login(request: Request) -> Response:
    dash: Dashboard = request.app.state.dashboard
    nxt = request.query_params.get("next") or "/"
    if not nxt.startswith("/") or nxt.startswith("//"):
        nxt = "/"
    error = ""
    if request.method == "POST":
        address = request.client.host if request.client else "unknown"
        wait = dash.logins.retry_after(address)
        if wait > 0:
            seconds = max(1, math.ceil(wait))
            logger.warning("dashboard: login attempts from %s refused for %d s (%d wrong tokens in %.0f s)",
                           address, seconds, dash.logins.max_failures, dash.logins.window)  # fmt: skip
            return PlainTextResponse(f"429 too many wrong tokens: try again in {seconds} s", status_code=429,
                                     headers={"Retry-After": str(seconds)})  # fmt: skip
        checked = await dash.check_csrf(request)
        if isinstance(checked, Response):
            return checked
        given = checked.get("token", "")
        if dash.token and hmac.compare_digest(given.encode("utf-8", "surrogatepass"), dash.token.encode()):
            dash.logins.succeeded(address)
            resp = RedirectResponse(nxt, status_code=303)
            resp.set_cookie(AUTH_COOKIE, dash.session_cookie(), max_age=dash.session_max_age, httponly=True,
                            samesite="strict", secure=dash.secure(request), path="/")  # fmt: skip
            return resp
        dash.logins.failed(address)
        error = "<p class=err>Wrong token.</p>"
    return HTMLResponse(login_form(request, nxt, error), status_code=401 if error else 200)


def login_form(request: Request, nxt: str, error: str = "") -> str:
    return layout(request, "Log in", (
        f"<h1>Log in</h1>{error}<form method=post action=\"/login{h(query_string({'next': nxt}))}\">"
        f'<input type=hidden name=csrf value="{h(request.state.csrf)}">'
        "<input type=password name=token placeholder=token autofocus> <button type=submit>Log in</button></form>"
    ), live=False)  # fmt: skip


async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    dash: Dashboard = request.app.state.dashboard
    host = request.headers.get("host")
    if not dash.host_check(host):
        return PlainTextResponse(dash.host_check.refusal(host), status_code=421)
    csrf = request.cookies.get(CSRF_COOKIE)
    fresh = not csrf or len(csrf) < 32
    request.state.csrf = secrets.token_urlsafe(32) if fresh else csrf
    request.state.nonce = secrets.token_urlsafe(16)
    if request.url.path != "/login" and not dash.authenticated(request):
        if request.method == "GET" and not request.query_params.get("fragment") and request.url.path != "/events":
            nxt = request.url.path + query_string(dict(request.query_params))
            response: Response = HTMLResponse(login_form(request, nxt), status_code=401)
        else:
            response = PlainTextResponse("401 unauthorized: a token is required", status_code=401)
        response.headers["WWW-Authenticate"] = 'Bearer realm="conductor"'
    else:
        response = await call_next(request)
    if fresh:
        response.set_cookie(CSRF_COOKIE, request.state.csrf, httponly=True, samesite="strict",
                            secure=dash.secure(request), path="/")  # fmt: skip
    response.headers["Content-Security-Policy"] = (
        f"default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-{request.state.nonce}'; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    )
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    response.headers["Cache-Control"] = "no-store"
    return response


def create_app(
    dsn: str, token: str | None = None, *, pool_size: int = 4, host: str = DEFAULT_HOST,
    allowed_hosts: Sequence[str] = (), session_max_age: int = SESSION_MAX_AGE, secure_cookies: bool = False,
) -> Starlette:  # fmt: skip
    """The dashboard as an ASGI application over the database at ``dsn``, bound
    to ``host``: it answers to a Host header naming loopback, ``host`` or one of
    ``allowed_hosts``. With ``token``, every request must carry it (header or
    login cookie, which lasts ``session_max_age`` seconds); ``secure_cookies``
    marks cookies Secure even when the request did not come over TLS (a TLS
    proxy in front)."""
    dash = Dashboard(dsn, token, pool_size, host_check=HostCheck(host, allowed_hosts),
                     session_max_age=session_max_age, secure_cookies=secure_cookies)  # fmt: skip

    app = Starlette(
        routes=[
            Route("/", page("Queues", queues_page)),
            Route("/series", series_json),
            Route("/runs", page("Runs", runs_page)),
            Route("/runs/{task_id}", page("Run", run_page)),
            Route("/runs/{task_id}/{action}", page("Confirm", step_confirm_page, refresh=False), methods=["GET"]),
            Route("/runs/{task_id}/{action}", task_action, methods=["POST"]),
            Route("/graphs/{graph_id}", page("Graph", graph_page)),
            Route("/search", page("Search", search_page, refresh=False)),
            Route("/schedules", page("Schedules", schedules_page)),
            Route("/schedules/{action}", schedule_action, methods=["POST"]),
            Route("/queues/{action}", queue_action, methods=["POST"]),
            Route("/bulk/{action}", bulk_confirm, methods=["GET"]),
            Route("/bulk/{action}", bulk_action, methods=["POST"]),
            Route("/events", event_stream),
            Route("/login", login, methods=["GET", "POST"]),
        ],
        middleware=[Middleware(BaseHTTPMiddleware, dispatch=guard)],
        lifespan=lifespan,
    )
    app.state.dashboard = dash
    return app


# -- serving -------------------------------------------------------------------------


def serve(dsn: str, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, token: str | None = None,
          **options: Any) -> None:  # fmt: skip
    """Run the dashboard until interrupted. Raises DashboardConfigError for a
    non-loopback ``host`` without ``token``, SchemaMismatch for a database of another
    schema release. ``options``: those of :func:`create_app`."""
    import uvicorn

    check_bind(host, token)
    check_release(dsn)
    app = create_app(dsn, token, host=host, **options)
    uvicorn_server(app, uvicorn.Config(app, host=host, port=port, log_level="warning")).run()


def uvicorn_server(app: Starlette, config: Any) -> Any:
    """A ``uvicorn.Server`` for the dashboard ``app`` whose exit (a signal, or
    ``should_exit`` through :meth:`DashboardServer.stop`) first ends the open
    event streams: uvicorn waits for every response to finish before it stops,
    and an event stream would not on its own."""
    import uvicorn

    hub: EventHub = app.state.dashboard.events

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            hub.close(timeout=0)
            super().handle_exit(sig, frame)

    return Server(config)


class DashboardServer:
    """The dashboard served by uvicorn from a background thread (tests, embedding).
    ``port`` 0 picks a free port; ``url`` is where it listens once started.
    ``options``: those of :func:`create_app` (allowed_hosts, session_max_age, secure_cookies)."""

    def __init__(self, dsn: str, host: str = DEFAULT_HOST, port: int = 0, token: str | None = None,
                 **options: Any) -> None:  # fmt: skip
        import uvicorn

        check_bind(host, token)
        self.dsn = dsn
        self.host = host
        self.app = create_app(dsn, token, host=host, **options)
        self._server = uvicorn_server(self.app, uvicorn.Config(self.app, host=host, port=port, log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, name="pyconductor-dashboard", daemon=True)
        self.port = port

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self, timeout: float = 10.0) -> Self:
        check_release(self.dsn)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the dashboard did not start on {self.host}:{self.port}")
            time.sleep(0.02)
        sockets: Sequence[Any] = [s for srv in self._server.servers for s in srv.sockets]
        if sockets:
            self.port = sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        self.app.state.dashboard.events.close()
        self._server.should_exit = True
        self._thread.join(timeout=10)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
