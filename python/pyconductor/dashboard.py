"""``pyconductor dashboard``: a server-rendered web page over the conductor schema.

Pages (plain HTML, one inline script for live refresh, no build step):

  /                queues (depth, backlog age, throughput from ``conductor.stats()``),
                   live workers and leader leases
  /runs            tasks newest first, filtered by status, kind and queue, paginated
                   by keyset on id (``conductor.list_tasks(before_id => ...)``)
  /runs/{id}       one run: the task, its tree (parent, root, descendants by
                   root_id), each task's attempts (worker, times, error, traceback)
                   and, when ``conductor.steps`` exists, its steps
                   and the handler log lines of the task's attempts beside it
  /schedules       every schedule: cron, next due time, last fire (manual or due),
                   last error; Enable/Disable and Run now
  POST /runs/{id}/retry, /runs/{id}/cancel   ``conductor.retry`` / ``conductor.cancel``
  POST /schedules/enable, /disable, /run     ``conductor.enable_schedule`` / ``fire_schedule``
                   (field ``name``)
  POST /queues/pause, /queues/resume          ``conductor.pause_queue`` / ``resume_queue``
                   (field ``queue``)
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

Every query is index-backed and bounded (see the ``DASHBOARD_*`` statements in
:mod:`pyconductor.queries`); nothing counts or scans finished history.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import html
import json
import logging
import math
import re
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from datetime import UTC, datetime, timedelta
from typing import Any, Self
from urllib.parse import parse_qs, urlencode

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from pyconductor import queries, statuses
from pyconductor.access import HostCheck, bearer_matches, is_loopback
from pyconductor.dsn import redact_dsn, tcp_options
from pyconductor.errors import ConductorError, InvalidState, NotFound, mapped_errors
from pyconductor.logs import escape_text
from pyconductor.wire import load_infinite_times

__all__ = [
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

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
TREE_LIMIT = 500
STEPS_LIMIT = 1000
REFRESH_MS = 2000  # the re-fetch while the event stream is down
DEBOUNCE_MS = 250  # at most one re-fetch per this, however many events come
SAFETY_MS = 15000  # a re-fetch this often even while live: claims and heartbeats publish nothing
SSE_RETRY_MS = 1000  # the browser reconnects a dropped stream after this
SSE_KEEPALIVE = 15.0  # seconds between comment lines on an idle stream
SSE_MAX_AGE = 600.0  # seconds a stream lasts before the browser is asked to reconnect
SCHEDULES_LIMIT = 1000
LOG_ATTEMPTS = 10  # the run page shows the log lines of the task's latest attempts
BUS_TOPICS = ["tasks"]
DIGEST_HEADER = "X-Conductor-Digest"  # a fragment's hash: the live script sends what it shows, 204 if unchanged
CSRF_COOKIE = "conductor_csrf"
AUTH_COOKIE = "conductor_session"
SESSION_MAX_AGE = 12 * 3600  # seconds a login lasts
LOGIN_MAX_FAILURES = 5  # wrong tokens a client address may send per LOGIN_WINDOW
LOGIN_WINDOW = 60.0  # seconds
LOGIN_ADDRESSES = 10_000  # client addresses remembered at most (the oldest are forgotten first)
NOTICE_SIG = "sig"  # the query parameter carrying a notice's signature
MAX_BIGINT = 2**63 - 1
_DECIMAL = re.compile(r"[0-9]{1,19}")


class DashboardConfigError(ValueError):
    """The dashboard was asked to start in a way that is not safe."""


def check_bind(host: str, token: str | None) -> None:
    """Raise DashboardConfigError unless ``host`` is loopback or a token is set."""
    if not is_loopback(host) and not token:
        raise DashboardConfigError(
            f"refusing to listen on {host} without a token: anyone who reaches it could retry and "
            "cancel tasks. Set CONDUCTOR_DASHBOARD_TOKEN (or pass --token-file or --token), or bind to 127.0.0.1."
        )


# -- HTML ----------------------------------------------------------------------------


def h(value: Any) -> str:
    """HTML-escaped text of value ('' for None)."""
    return "" if value is None else html.escape(str(value), quote=True)


def _name(value: Any) -> str:
    """A name (a kind, a worker's id or host) as a page shows it: HTML-escaped, and
    with control and format characters written as escapes (``\\n``, ``\\u202e``).
    The kind rule refuses them since v0.3.0, but tasks stored before may hold them,
    and a worker's id and host follow no rule; a bidi override must not reorder the
    page around it."""
    return "" if value is None else h(escape_text(str(value)))


def _ts(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return h(value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z")
    return h(value)


def _age(value: Any) -> str:
    if value is None:
        return "-"
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _duration(start: Any, end: Any) -> str:
    if not isinstance(start, datetime) or not isinstance(end, datetime):
        return "-"
    return _age(end - start)


def _json(value: Any) -> str:
    return h(json.dumps(value, indent=2, sort_keys=True, default=str))


def _status(value: Any) -> str:
    return f'<span class="status s-{h(value)}">{h(value)}</span>'


def _qs(params: Mapping[str, Any]) -> str:
    clean = {k: v for k, v in params.items() if v not in (None, "")}
    return "?" + urlencode(clean) if clean else ""


def parse_id(text: str | None) -> int | None:
    """A task id as a URL gives it: ASCII decimal digits of a value within bigint
    (0 to 2**63 - 1), else None. Python's int() would also take ' 12', '1_2', '١٢'
    and values PostgreSQL's bigint cannot hold."""
    if text is None or not _DECIMAL.fullmatch(text):
        return None
    value = int(text)
    return value if value <= MAX_BIGINT else None


class LoginLimiter:
    """Wrong login tokens per client address: at most ``max_failures`` in any
    ``window`` seconds. Remembers at most ``max_addresses`` addresses, forgetting
    the least recently failed first. ``clock`` is ``time.monotonic`` unless a
    test sets another. Called from the event loop; the lock makes it safe from
    threads too."""

    def __init__(self, max_failures: int = LOGIN_MAX_FAILURES, window: float = LOGIN_WINDOW,
                 max_addresses: int = LOGIN_ADDRESSES) -> None:  # fmt: skip
        self.max_failures = max_failures
        self.window = window
        self.max_addresses = max_addresses
        self.clock: Callable[[], float] = time.monotonic
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def _recent(self, address: str, now: float) -> deque[float] | None:
        times = self._failures.get(address)
        if times is None:
            return None
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            del self._failures[address]
            return None
        return times

    def retry_after(self, address: str) -> float:
        """Seconds until ``address`` may try again; 0 when it may now."""
        with self._lock:
            now = self.clock()
            times = self._recent(address, now)
            if times is None or len(times) < self.max_failures:
                return 0.0
            return max(0.0, times[-self.max_failures] + self.window - now)

    def failed(self, address: str) -> None:
        """Count a wrong token from ``address``."""
        with self._lock:
            now = self.clock()
            times = self._recent(address, now) or deque()
            times.append(now)
            self._failures[address] = times
            self._failures.move_to_end(address)
            while len(self._failures) > self.max_addresses:
                self._failures.popitem(last=False)

    def succeeded(self, address: str) -> None:
        """Forget ``address``'s wrong tokens: it has the right one."""
        with self._lock:
            self._failures.pop(address, None)


CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}
header{background:#243447;color:#fff;padding:.5em 1em;display:flex;gap:1.5em;align-items:center}
header a{color:#fff;text-decoration:none}header b{margin-right:1em}
main{padding:1em}table{border-collapse:collapse;margin:.5em 0}
th,td{border-bottom:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}
.status{padding:0 .4em;border-radius:3px;background:#eee}
.s-succeeded{background:#d4f4d4}.s-failed,.s-dead,.s-timed_out{background:#f8d0d0}
.s-running{background:#d0e4f8}.s-waiting{background:#f4ecc8}.s-cancelled{background:#ddd}
pre{background:#f7f7f7;padding:.5em;overflow:auto;max-height:30em}
.notice{background:#fff6cc;padding:.5em;border:1px solid #e6d98c}
.err{color:#a00}form.inline{display:inline}ul.tree{list-style:none;padding-left:1.2em}
li.current>.line{font-weight:bold}button{cursor:pointer}
.cols{display:flex;gap:1.5em;align-items:flex-start;flex-wrap:wrap}.cols>section{flex:1 1 30em;min-width:0}
.paused{background:#f4d8a8;padding:0 .4em;border-radius:3px}tr.off td{color:#888}
table.log td{font:12px/1.3 ui-monospace,monospace}table.log td.msg{white-space:pre-wrap;word-break:break-word}
.lv-warning{background:#fff6cc}.lv-error,.lv-critical{background:#f8d0d0}
"""

# The live refresh: re-fetch the page's fragment when /events says something changed
# (at most every DEBOUNCE_MS), every REFRESH_MS while the stream is not live, and every
# SAFETY_MS regardless. #live's data-stream says which: live, polling or unavailable.
SCRIPT = """
(function(){
  var el=document.getElementById('live'); if(!el) return;
  var src=el.getAttribute('data-src'), events=el.getAttribute('data-events');
  var digest=el.getAttribute('data-digest')||'', busy=false, again=false, stale=false, lastAt=0, timer=null,
      live=false, count=0;
  function state(s){ live=(s==='live'); el.setAttribute('data-stream', s); }
  function load(){
    if(document.hidden){ stale=true; return; }
    if(busy){ again=true; return; }
    busy=true; lastAt=Date.now();
    fetch(src,{credentials:'same-origin',headers:{'X-Conductor-Digest':digest}}).then(function(r){
      if(!r.ok) throw new Error(r.status);
      var d=r.headers.get('X-Conductor-Digest')||'';
      return r.status===204 ? null : r.text().then(function(t){ return [d,t]; });
    }).then(function(got){
      if(got && got[0]!==digest){ digest=got[0]; el.innerHTML=got[1]; }
      el.setAttribute('data-refreshes', String(++count));
    }).catch(function(){}).then(function(){ busy=false; if(again){ again=false; soon(); } });
  }
  function soon(){
    if(timer) return;
    timer=setTimeout(function(){ timer=null; load(); }, Math.max(0, lastAt+%(debounce)d-Date.now()));
  }
  function connect(){
    if(!events || !window.EventSource){ state('polling'); return; }
    var es=new EventSource(events);
    es.addEventListener('ready', function(){ state('live'); soon(); });
    es.addEventListener('down', function(){ state('polling'); });
    es.addEventListener('unavailable', function(){ es.close(); state('unavailable'); });
    es.onmessage=function(){ soon(); };
    es.onerror=function(){
      if(el.getAttribute('data-stream')==='unavailable') return;
      state('polling'); if(es.readyState===2) setTimeout(connect, %(reconnect)d);
    };
  }
  state('polling'); lastAt=Date.now(); connect();
  document.addEventListener('visibilitychange', function(){ if(!document.hidden && stale){ stale=false; soon(); } });
  setInterval(function(){
    var age=Date.now()-lastAt;
    if((!live && age>=%(refresh)d-50) || age>=%(safety)d) soon();
  }, %(refresh)d);
})();
"""


def _digest(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()[:32]


def layout(request: Request, title: str, content: str, *, live: bool = True, digest: str = "") -> str:
    """A whole page around ``content``, which the live script re-fetches (when
    ``/events`` says something changed, with ``live``; else every 2 s)."""
    nonce = request.state.nonce
    src = request.url.path + _qs({**dict(request.query_params), "fragment": "1"})
    events = ' data-events="/events"' if live else ""
    script = SCRIPT % {"debounce": DEBOUNCE_MS, "refresh": REFRESH_MS, "safety": SAFETY_MS,
                       "reconnect": 5 * REFRESH_MS}  # fmt: skip
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{h(title)} · Conductor</title><style>{CSS}</style></head><body>"
        "<header><b>Conductor</b><a href=/>Queues</a><a href=/runs>Runs</a>"
        "<a href='/runs?status=failed'>Failed</a><a href='/runs?status=running'>Running</a>"
        "<a href=/schedules>Schedules</a></header>"
        f'<main><div id=live data-src="{h(src)}" data-digest="{h(digest)}"{events}>{content}</div></main>'
        f"<script nonce={nonce}>{script}</script></body></html>"
    )


def _action_form(request: Request, task_id: int, action: str, label: str) -> str:
    return (
        f'<form class=inline method=post action="/runs/{task_id}/{action}">'
        f'<input type=hidden name=csrf value="{h(request.state.csrf)}">'
        f'<button type=submit name=action value={action} id="{action}-{task_id}">{h(label)}</button></form>'
    )


def _post_form(request: Request, action: str, fields: Mapping[str, str], label: str, value: str) -> str:
    """A one-button form POSTing ``fields`` and the CSRF value to ``action``."""
    hidden = "".join(f'<input type=hidden name="{h(k)}" value="{h(v)}">' for k, v in fields.items())
    return (
        f'<form class=inline method=post action="{h(action)}">'
        f'<input type=hidden name=csrf value="{h(request.state.csrf)}">{hidden}'
        f"<button type=submit name=action value={h(value)}>{h(label)}</button></form>"
    )


def _log_time(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _ts(datetime.fromtimestamp(value, UTC))
    return h(value)


def _level_class(level: Any) -> str:
    return "lv-" + "".join(c for c in str(level or "").lower() if c.isalpha())[:16]


def _logs_section(attempts: Sequence[Mapping[str, Any]], logs: Mapping[int, Mapping[str, Any]]) -> str:
    """The handler log lines of ``attempts`` (newest first), every field escaped."""
    out = ["<h2>Log</h2>"]
    shown = [a for a in reversed(attempts) if a["id"] in logs]
    if not shown:
        out.append("<p id=no-logs>No log lines.</p>")
    for a in shown:
        log = logs[a["id"]]
        lines = log["lines"] if isinstance(log["lines"], list) else []
        dropped = int(log["dropped"] or 0)
        out.append(f"<div class=log data-attempt=\"{a['id']}\"><h3>attempt #{a['number']} "
                   f"<small>({len(lines)} lines{f', {dropped} dropped' if dropped else ''})</small></h3>"
                   "<table class=log>")  # fmt: skip
        for line in lines:
            if not isinstance(line, Mapping):
                line = {"message": line}
            out.append(
                f"<tr class={_level_class(line.get('level'))}><td>{_log_time(line.get('at'))}"
                f"<td>{h(line.get('level'))}<td>{h(line.get('logger'))}<td class=msg>{h(line.get('message'))}</tr>"
            )
        out.append("</table>")
        if dropped:
            out.append(f"<p class=notice>{dropped} more line(s) were dropped (the limits per attempt).</p>")
        out.append("</div>")
    return "".join(out)


def _attempts_table(attempts: Sequence[Mapping[str, Any]]) -> str:
    if not attempts:
        return "<p>No attempts yet.</p>"
    # #: the attempt's number, 1..n in claim order (conductor.list_attempts); id: its attempt id
    out = [("<table class=attempts><tr><th>#<th>id<th>worker<th>host/pid<th>claimed<th>finished"
            "<th>took<th>outcome<th>error</tr>")]  # fmt: skip
    for a in attempts:
        tb = (f"<details><summary>traceback</summary><pre class=traceback>{h(a['traceback'])}</pre></details>"
              if a.get("traceback") else "")  # fmt: skip
        out.append(
            f'<tr data-attempt="{a["id"]}"><td class=n>{a["number"]}<td class=n>{a["id"]}<td>{_name(a["worker_id"])}'
            f"<td>{_name(a.get('host') or '-')}/{h(a.get('pid') or '-')}<td>{_ts(a['claimed_at'])}"
            f"<td>{_ts(a['finished_at'])}<td class=n>{_duration(a['claimed_at'], a['finished_at'])}"
            f"<td>{_status(a['outcome'] or 'running')}<td class=err>{h(a['error'])}{tb}</tr>"
        )
    out.append("</table>")
    return "".join(out)


def _steps_table(steps: Sequence[Mapping[str, Any]]) -> str:
    out = ["<table class=steps><tr><th>step<th>saved<th>attempt<th>result</tr>"]
    out.extend(f"<tr><td>{h(s['name'])}<td>{_ts(s['saved_at'])}<td class=n>{h(s['attempt_id'] or '-')}"
               f"<td><pre>{_json(s['result'])}</pre></tr>" for s in steps)  # fmt: skip
    out.append("</table>")
    return "".join(out)


# -- the application -----------------------------------------------------------------


class Dashboard:
    """State shared by the routes: the pool, the token, the Host check."""

    def __init__(
        self, dsn: str, token: str | None = None, pool_size: int = 4, *, host_check: HostCheck | None = None,
        session_max_age: int = SESSION_MAX_AGE, secure_cookies: bool = False,
    ) -> None:  # fmt: skip
        self.dsn = dsn
        self.token = token or None
        self.host_check = host_check or HostCheck(DEFAULT_HOST)
        self.session_max_age = int(session_max_age)
        self.secure_cookies = secure_cookies
        self.pool = ConnectionPool(
            dsn, min_size=1, max_size=pool_size, open=False, name="pyconductor-dashboard",
            kwargs={"autocommit": True, "row_factory": dict_row, "application_name": "pyconductor dashboard",
                    **tcp_options(dsn)},
            configure=load_infinite_times,
        )  # fmt: skip
        self._has_steps: bool | None = None
        self.events = EventHub(dsn)
        self.logins = LoginLimiter()
        self._notice_key = secrets.token_bytes(32)  # per process: a notice is shown only by the process that issued it

    def rows(self, query: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        with mapped_errors(), self.pool.connection() as conn:
            return conn.execute(query, params or {}).fetchall()

    def has_steps(self) -> bool:
        if not self._has_steps:  # cached once true; the table may appear after a migrate
            self._has_steps = bool(self.rows(queries.DASHBOARD_HAS_STEPS)[0]["has_steps"])
        return self._has_steps

    # -- authentication and CSRF ---------------------------------------------------

    def _session_mac(self, issued: int) -> str:
        assert self.token is not None
        return hmac.new(
            self.token.encode(), f"conductor-dashboard-session:{issued}".encode(), hashlib.sha256
        ).hexdigest()

    def session_cookie(self, issued: int | None = None) -> str:
        """The login cookie's value: its issue time (epoch seconds) and an HMAC of it keyed by the token."""
        issued = int(time.time()) if issued is None else issued
        return f"{issued}.{self._session_mac(issued)}"

    def session_valid(self, cookie: str) -> bool:
        """A cookie this token issued less than ``session_max_age`` seconds ago."""
        issued, _, mac = cookie.partition(".")
        if not issued.isdigit() or not hmac.compare_digest(mac.encode(), self._session_mac(int(issued)).encode()):
            return False
        return -60 <= time.time() - int(issued) <= self.session_max_age

    def notice_sig(self, csrf: str, notice: str) -> str:
        """The signature of ``notice`` for the browser whose CSRF cookie is ``csrf``."""
        message = f"conductor-dashboard-notice:{csrf}:{notice}".encode("utf-8", "surrogatepass")
        return hmac.new(self._notice_key, message, hashlib.sha256).hexdigest()[:32]

    def notice_query(self, request: Request, notice: str) -> str:
        """``?notice=...&sig=...`` for a redirect after an action of ``request``'s browser."""
        return _qs({"notice": notice, NOTICE_SIG: self.notice_sig(request.state.csrf, notice)})

    def notice(self, request: Request) -> str | None:
        """The ``?notice=`` text when this process issued it to this browser, else None."""
        notice = request.query_params.get("notice")
        sig = request.query_params.get(NOTICE_SIG, "")
        if not notice or not sig:
            return None
        if not hmac.compare_digest(sig.encode(), self.notice_sig(request.state.csrf, notice).encode()):
            return None
        return notice

    def secure(self, request: Request) -> bool:
        """Whether cookies get ``Secure``: the page came over TLS (directly, or from a
        proxy uvicorn trusts), or ``secure_cookies`` says a TLS proxy serves it."""
        return self.secure_cookies or request.url.scheme == "https"

    def authenticated(self, request: Request) -> bool:
        if self.token is None:
            return True
        if bearer_matches(request.headers.get("authorization"), self.token):
            return True
        cookie = request.cookies.get(AUTH_COOKIE, "")
        return bool(cookie) and self.session_valid(cookie)

    @staticmethod
    def cross_site(request: Request) -> bool:
        """A request a browser marks as coming from another site."""
        if request.headers.get("sec-fetch-site", "") in ("cross-site", "same-site"):
            return True
        origin = request.headers.get("origin")
        if origin and origin != "null":
            return origin.rstrip("/") != f"{request.url.scheme}://{request.headers.get('host', '')}"
        return origin == "null"

    async def form(self, request: Request) -> dict[str, str]:
        """The urlencoded body of a POST (first value of each field)."""
        body = (await request.body()).decode("utf-8", "replace")
        return {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}

    async def check_csrf(self, request: Request) -> dict[str, str] | Response:
        """The form when the request passes the CSRF check, else a 403 response."""
        if self.cross_site(request):
            return PlainTextResponse("403 forbidden: a cross-site request", status_code=403)
        form = await self.form(request)
        cookie = request.cookies.get(CSRF_COOKIE, "")
        sent = form.get("csrf", "")
        if not cookie or not sent or not hmac.compare_digest(cookie.encode(), sent.encode()):
            return PlainTextResponse("403 forbidden: missing or wrong CSRF token (reload the page)", status_code=403)
        return form


# -- live updates --------------------------------------------------------------------


class _Stream:
    """One browser's event stream: what the hub hands it, on its event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue(maxsize=256)

    def _put(self, item: tuple[str, str]) -> None:
        with suppress(asyncio.QueueFull):  # a browser this far behind re-fetches everything on the next event anyway
            self.queue.put_nowait(item)

    def send(self, event: str, data: str = "") -> None:
        """Queue an event from any thread."""
        with suppress(RuntimeError):  # the loop is closed: the server is gone
            self.loop.call_soon_threadsafe(self._put, (event, data))


class EventHub:
    """The event bus for every browser of one dashboard: one thread holds one session
    that LISTENs on ``conductor_bus`` and is subscribed to topic ``tasks`` while at
    least one stream is open, and hands each message to every stream.

    Events a stream gets: ``ready`` (subscribed: from now on every change is told;
    re-fetch once, as messages may have been missed), ``message`` (a bus message, its
    JSON as data), ``down`` (the session was lost; reconnecting: poll meanwhile),
    ``unavailable`` (the schema has no event bus: poll), ``end`` (the server stops).
    With no stream open, the session unsubscribes and closes within ``POLL`` seconds.
    """

    POLL = 0.2  # seconds between checks whether any stream is still open
    UNAVAILABLE_FOR = 60.0  # seconds a schema without conductor.subscribe is believed

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._lock = threading.Lock()
        self._streams: set[_Stream] = set()
        self._thread: threading.Thread | None = None
        self._ready = False
        self._closed = False
        self._unavailable_until = 0.0
        self._wake = threading.Event()

    @property
    def subscribed(self) -> bool:
        """Whether the hub's session is subscribed to the bus now."""
        return self._ready

    @property
    def streams(self) -> int:
        return len(self._streams)

    def join(self) -> _Stream | None:
        """A new stream on the running event loop (None once the hub is closed)."""
        stream = _Stream(asyncio.get_running_loop())
        with self._lock:
            if self._closed:
                return None
            self._streams.add(stream)
            if time.monotonic() < self._unavailable_until:
                stream.send("unavailable")
            elif self._ready:
                stream.send("ready")
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="pyconductor-dashboard-events", daemon=True)
                self._thread.start()
        return stream

    def leave(self, stream: _Stream) -> None:
        with self._lock:
            self._streams.discard(stream)

    def close(self, timeout: float = 5.0) -> None:
        """End every stream (``end``) and the listening session; safe from any thread, twice."""
        with self._lock:
            self._closed = True
            streams, thread = list(self._streams), self._thread
        for stream in streams:
            stream.send("end")
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _broadcast(self, event: str, data: str = "") -> None:
        with self._lock:
            streams = list(self._streams)
        for stream in streams:
            stream.send(event, data)

    def _wanted(self) -> bool:
        """Whether to keep listening; when not, the thread is forgotten under the lock."""
        with self._lock:
            if self._streams and not self._closed and time.monotonic() >= self._unavailable_until:
                return True
            self._thread = None
            self._ready = False
            return False

    def _run(self) -> None:
        delay = 0.5
        while self._wanted():
            try:
                with psycopg.connect(self.dsn, autocommit=True, application_name="pyconductor dashboard events",
                                     **tcp_options(self.dsn)) as conn:  # fmt: skip
                    conn.execute(queries.DASHBOARD_LISTEN_BUS)
                    conn.execute(queries.DASHBOARD_SUBSCRIBE, {"topics": BUS_TOPICS})
                    delay = 0.5
                    self._listen(conn)
            except psycopg.errors.UndefinedFunction:
                logger.warning("dashboard: the schema has no event bus (conductor.subscribe); pages poll instead")
                with self._lock:
                    self._unavailable_until = time.monotonic() + self.UNAVAILABLE_FOR
                self._broadcast("unavailable")
            except psycopg.Error as exc:
                logger.warning("dashboard: the event bus session failed (%s); pages poll until it is back",
                               redact_dsn(str(exc).strip()))  # fmt: skip
                self._broadcast("down")
                self._wake.wait(delay)
                delay = min(delay * 2, 10.0)

    def _listen(self, conn: psycopg.Connection[Any]) -> None:
        with self._lock:
            self._ready = True
        self._broadcast("ready")
        try:
            while self._streams and not self._closed:
                for note in conn.notifies(timeout=self.POLL):
                    self._broadcast("message", note.payload)
        finally:
            with self._lock:
                self._ready = False
            if not conn.closed and not conn.broken:
                with suppress(psycopg.Error):  # the session ends next: reap() forgets its subscriptions
                    conn.execute(queries.DASHBOARD_UNSUBSCRIBE, {"topics": BUS_TOPICS})


def _sse(event: str, data: str = "") -> str:
    """One Server-Sent Event (``message`` is the default type)."""
    head = "" if event == "message" else f"event: {event}\n"
    return head + "".join(f"data: {line}\n" for line in (data.splitlines() or [""])) + "\n"


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

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await run_in_threadpool(dash.pool.open)
        try:
            yield
        finally:
            await run_in_threadpool(dash.events.close)
            await run_in_threadpool(dash.pool.close)

    # -- pages -------------------------------------------------------------------

    def notice_of(request: Request) -> str:
        notice = dash.notice(request)  # only what this dashboard said after this browser's action
        return f"<p class=notice id=notice>{h(notice)}</p>" if notice else ""

    def queues_page(request: Request) -> str:
        stats = dash.rows(queries.DASHBOARD_STATS)
        paused = {r["queue"]: r for r in dash.rows(queries.DASHBOARD_PAUSED_QUEUES, {"limit": SCHEDULES_LIMIT})}
        workers = dash.rows(queries.DASHBOARD_WORKERS)
        leaders = dash.rows(queries.DASHBOARD_LEADERS)
        out = ["<h1>Queues</h1>", notice_of(request)]
        # a paused queue with nothing to show in stats() still gets its row, to be resumed
        listed = {r["queue"] for r in stats}
        idle = [q for q in paused if q not in listed]

        def controls(queue: str, is_paused: bool) -> str:
            marker = (f"<span class=paused data-paused title=\"since {_ts(paused[queue]['paused_at'])}\">paused</span> "
                      if is_paused else "")  # fmt: skip
            button = (_post_form(request, "/queues/resume", {"queue": queue}, "Resume", "resume") if is_paused
                      else _post_form(request, "/queues/pause", {"queue": queue}, "Pause", "pause"))  # fmt: skip
            return f"<td class=controls>{marker}{button}"

        if not stats and not idle:
            out.append("<p>No queue has unfinished tasks or finished any in the last 15 minutes.</p>")
        else:
            # 0.2.0's stats() has unrunnable: queued tasks no live worker serves (queue and kind)
            unrunnable = bool(stats) and "unrunnable" in stats[0]
            out.append(
                "<table id=queues><tr><th>queue<th>ready<th>scheduled<th>running<th>waiting"
                + (
                    '<th title="queued, and no live worker serves both the queue and the kind">unrunnable'
                    if unrunnable
                    else ""
                )
                + "<th>backlog age<th>succeeded 1m/5m/15m<th>failed 1m/5m/15m<th>failure rate<th>state</tr>"
            )
            for r in stats:
                q = h(r["queue"])
                rate = "-" if r["failure_rate"] is None else f"{float(r['failure_rate']) * 100:.1f}%"
                is_paused = bool(r.get("paused")) or r["queue"] in paused
                out.append(
                    f'<tr data-queue="{q}"{" data-paused" if is_paused else ""}>'
                    f'<td><a href="/runs{h(_qs({"queue": r["queue"]}))}">{q}</a>'
                    f"<td class=n>{r['ready']}<td class=n>{r['scheduled']}<td class=n>{r['running']}"
                    f"<td class=n>{r['waiting']}"
                    + (f"<td class=n data-unrunnable>{r['unrunnable']}" if unrunnable else "")
                    + f"<td class=n>{_age(r['oldest_ready_age'])}"
                    f"<td class=n>{r['succeeded_1m']} / {r['succeeded_5m']} / {r['succeeded_15m']}"
                    f"<td class=n>{r['failed_1m']} / {r['failed_5m']} / {r['failed_15m']}<td class=n>{rate}"
                    + controls(r["queue"], is_paused)
                    + "</tr>"
                )
            blank = "<td class=n>-" * (8 + (1 if unrunnable else 0))
            for queue in idle:
                q = h(queue)
                out.append(f"<tr data-queue=\"{q}\" data-paused><td><a href=\"/runs{h(_qs({'queue': queue}))}\">{q}</a>"
                           f"{blank}{controls(queue, True)}</tr>")  # fmt: skip
            out.append("</table>")
        out.append("<h2>Workers</h2>")
        if not workers:
            out.append("<p>No live workers.</p>")
        else:
            out.append("<table id=workers><tr><th>id<th>host<th>pid<th>roles<th>queues<th>concurrency"
                       "<th>started<th>last seen</tr>")  # fmt: skip
            out.extend(
                f"<tr><td>{_name(w['id'])}<td>{_name(w['host'])}<td class=n>{h(w['pid'])}"
                f"<td>{_name(','.join(w['roles'] or []))}<td>{_name(','.join(w['queues']) if w['queues'] else '*')}"
                f"<td class=n>{h(w['concurrency'])}<td>{_ts(w['started_at'])}<td>{_ts(w['last_seen_at'])}</tr>"
                for w in workers
            )
            out.append("</table>")
        if leaders:
            out.append("<h2>Leader leases</h2><ul>")
            out.extend(f"<li>{h(r['name'])}: pid {h(r['pid'])} ({h(r['application_name'])})</li>" for r in leaders)
            out.append("</ul>")
        return "".join(out)

    def runs_page(request: Request) -> str | Response:
        p = request.query_params
        status = p.get("status") or None
        kind = p.get("kind") or None
        queue = p.get("queue") or None
        before = parse_id(p["before"]) if p.get("before") else None
        if p.get("before") and before is None:  # not an id within bigint: the database would refuse it (22003)
            return PlainTextResponse("400 bad request: before is a task id", status_code=400)
        try:
            limit = max(1, min(MAX_PAGE_SIZE, int(p.get("limit") or PAGE_SIZE)))
        except ValueError:
            return PlainTextResponse("400 bad request: limit is an integer", status_code=400)
        if status is not None and status not in statuses.ALL:
            return PlainTextResponse(f"400 bad request: unknown status {status!r}", status_code=400)
        rows = dash.rows(queries.DASHBOARD_LIST_TASKS, {
            "status": status, "queue": queue, "kind": kind, "before_id": before, "limit": limit + 1,
        })  # fmt: skip
        more = len(rows) > limit
        rows = rows[:limit]
        options = "".join(
            f'<option value="{s}"{" selected" if s == status else ""}>{s or "any status"}</option>'
            for s in ("", *statuses.ALL)
        )
        out = [
            (
                "<h1>Runs</h1><form id=filters method=get action=/runs>"
                f"<select name=status>{options}</select> "
                f'<input name=kind placeholder=kind value="{h(kind)}"> '
                f'<input name=queue placeholder=queue value="{h(queue)}"> '
                f'<input type=hidden name=limit value="{limit}"><button type=submit>Filter</button></form>'
            )
        ]
        if not rows:
            out.append("<p id=empty>No tasks match.</p>")
        else:
            out.append("<table id=runs><tr><th>id<th>kind<th>queue<th>status<th>tries used<th>enqueued"
                       "<th>finished<th>error</tr>")  # fmt: skip
            for t in rows:
                err = (t["error"] or "")[:120]
                out.append(
                    f'<tr data-id="{t["id"]}" data-status="{h(t["status"])}">'
                    f'<td><a href="/runs/{t["id"]}">{t["id"]}</a>'
                    f"<td>{_name(t['kind'])}<td>{h(t['queue'])}<td>{_status(t['status'])}"
                    f"<td class=n>{t['attempt']}/{t['max_attempts']}<td>{_ts(t['enqueued_at'])}"
                    f"<td>{_ts(t['finished_at'])}<td class=err>{h(err)}</tr>"
                )
            out.append("</table>")
        nav = []
        filters = {"status": status, "kind": kind, "queue": queue, "limit": limit if limit != PAGE_SIZE else None}
        if before is not None:
            nav.append(f'<a id=newest href="/runs{h(_qs(filters))}">« newest</a>')
        if more:
            nav.append(f'<a id=older href="/runs{h(_qs({**filters, "before": rows[-1]["id"]}))}">older »</a>')
        out.append(f"<p class=pager>{' · '.join(nav)}</p>")
        return "".join(out)

    def run_page(request: Request) -> str | Response:
        task_id = parse_id(request.path_params["task_id"])
        if task_id is None:
            return PlainTextResponse("404 not found", status_code=404)
        try:
            task = dash.rows(queries.GET_TASK, {"task_id": task_id})[0]
        except NotFound:
            return PlainTextResponse(f"404 not found: task {task_id} does not exist", status_code=404)
        root_id = task["root_id"]
        root = task if root_id == task_id else dash.rows(queries.GET_TASK, {"task_id": root_id})[0]
        descendants = dash.rows(queries.DASHBOARD_RUN_TASKS, {"root_id": root_id, "limit": TREE_LIMIT})
        ids = [root_id, *(d["id"] for d in descendants)]
        attempts: dict[int, list[dict[str, Any]]] = {}
        for a in dash.rows(queries.DASHBOARD_ATTEMPTS, {"task_ids": ids}):
            attempts.setdefault(a["task_id"], []).append(a)
        own = attempts.get(task_id, [])[-LOG_ATTEMPTS:]
        logs = {r["attempt_id"]: r for r in dash.rows(queries.DASHBOARD_ATTEMPT_LOGS,
                                                       {"attempt_ids": [a["id"] for a in own]})
                } if own else {}  # fmt: skip
        steps: dict[int, list[dict[str, Any]]] = {}
        if dash.has_steps():
            for s in dash.rows(queries.DASHBOARD_STEPS, {"task_ids": ids, "limit": STEPS_LIMIT}):
                steps.setdefault(s["task_id"], []).append(s)

        out = [f"<h1>Task {task_id} <small>{_name(task['kind'])}</small> {_status(task['status'])}</h1>",
               notice_of(request)]  # fmt: skip
        actions = []
        if task["status"] in statuses.RETRYABLE:
            actions.append(_action_form(request, task_id, "retry", "Retry"))
        if task["status"] in statuses.UNFINISHED:
            actions.append(_action_form(request, task_id, "cancel", "Cancel"))
        if actions:
            out.append(f"<p class=actions>{' '.join(actions)}</p>")
        out.append(
            "<table id=task>"
            f"<tr><th>queue<td>{h(task['queue'])}<tr><th>status<td id=task-status>{h(task['status'])}"
            f"<tr><th>tries used<td>{task['attempt']} of {task['max_attempts']} (recoveries {task['recoveries']}"
            f" of {task['max_recoveries']})<tr><th>priority<td>{task['priority']}"
            f"<tr><th>enqueued<td>{_ts(task['enqueued_at'])}<tr><th>run at<td>{_ts(task['run_at'])}"
            f"<tr><th>started<td>{_ts(task['started_at'])}<tr><th>finished<td>{_ts(task['finished_at'])}"
            + (
                f"<tr><th>parent<td><a href='/runs/{task['parent_id']}'>{task['parent_id']}</a>"
                if task["parent_id"]
                else ""
            )
            + (f"<tr><th>run (root)<td><a href='/runs/{root_id}'>{root_id}</a>" if root_id != task_id else "")
            + (f"<tr><th>dedupe key<td>{h(task['dedupe_key'])}" if task["dedupe_key"] else "")
            + (f"<tr><th>concurrency key<td>{h(task['concurrency_key'])}" if task["concurrency_key"] else "")
            + (f"<tr><th>error<td class=err id=task-error>{h(task['error'])}" if task["error"] else "")
            + "</table>"
        )  # fmt: skip
        out.append(f"<h2>Payload</h2><pre>{_json(task['payload'])}</pre>")
        if task["result"] is not None:
            out.append(f"<h2>Result</h2><pre id=result>{_json(task['result'])}</pre>")

        # the tree of the run: root first, children under their parent
        by_parent: dict[int | None, list[dict[str, Any]]] = {}
        for d in descendants:
            by_parent.setdefault(d["parent_id"], []).append(d)

        def node(t: Mapping[str, Any]) -> str:
            tid = t["id"]
            current = " class=current" if tid == task_id else ""
            parts = [
                (
                    f'<li{current} data-id="{tid}"><span class=line><a href="/runs/{tid}">{tid}</a> '
                    f"{_name(t['kind'])} {_status(t['status'])} tries used {t['attempt']}/{t['max_attempts']}</span>"
                )
            ]
            if attempts.get(tid) or steps.get(tid):
                parts.append(f"<details{' open' if tid == task_id else ''}><summary>attempts "
                             f"({len(attempts.get(tid, []))}), "
                             f"steps ({len(steps.get(tid, []))})</summary>")  # fmt: skip
                parts.append(_attempts_table(attempts.get(tid, [])))
                if steps.get(tid):
                    parts.append(_steps_table(steps[tid]))
                parts.append("</details>")
            kids = by_parent.get(tid, [])
            if kids:
                parts.append("<ul class=tree>" + "".join(node(k) for k in kids) + "</ul>")
            parts.append("</li>")
            return "".join(parts)

        out.append(f"<div class=cols><section id=run><h2>Run {root_id}</h2><ul class=tree id=tree>{node(root)}</ul>")
        if len(descendants) >= TREE_LIMIT:
            out.append(f"<p class=notice>Only the first {TREE_LIMIT} tasks of this run are shown.</p>")
        out.append(f"</section><section id=logs>{_logs_section(own, logs)}</section></div>")
        return "".join(out)

    def schedules_page(request: Request) -> str:
        rows = dash.rows(queries.DASHBOARD_SCHEDULES, {"limit": SCHEDULES_LIMIT})
        out = ["<h1>Schedules</h1>", notice_of(request)]
        if not rows:
            out.append("<p id=empty>No schedules.</p>")
            return "".join(out)
        out.append("<table id=schedules><tr><th>name<th>cron<th>timezone<th>kind<th>queue<th>enabled"
                   "<th>next due<th>last fire<th>last error<th></tr>")  # fmt: skip
        for r in rows:
            name = r["name"]
            if r["last_fired_at"] is None:
                fired = "-"
            else:
                task = (f" <a href=\"/runs/{r['last_fire_task_id']}\">task {r['last_fire_task_id']}</a>"
                        if r["last_fire_task_id"] is not None else "")  # fmt: skip
                fired = f"{_ts(r['last_fired_at'])}{' (manual)' if r['last_fire_manual'] else ''}{task}"
            error = (f"<span class=err>{h(r['last_error'])}</span> at {_ts(r['last_error_at'])}"
                     if r["last_error"] else "-")  # fmt: skip
            toggle = (_post_form(request, "/schedules/disable", {"name": name}, "Disable", "disable") if r["enabled"]
                      else _post_form(request, "/schedules/enable", {"name": name}, "Enable", "enable"))  # fmt: skip
            run = _post_form(request, "/schedules/run", {"name": name}, "Run now", "run")
            out.append(
                f'<tr data-schedule="{h(name)}" data-enabled="{"true" if r["enabled"] else "false"}"'
                f"{'' if r['enabled'] else ' class=off'}><td>{h(name)}<td><code>{h(r['cron'])}</code>"
                f"<td>{h(r['timezone'])}<td>{_name(r['kind'])}<td>{h(r['queue'])}"
                f"<td class=enabled>{'yes' if r['enabled'] else 'no'}"
                f"<td class=next>{_ts(r['next_due_at']) if r['enabled'] else '-'}<td class=fired>{fired}"
                f"<td class=error>{error}<td class=controls>{toggle} {run}</tr>"
            )
        out.append("</table>")
        if len(rows) >= SCHEDULES_LIMIT:
            out.append(f"<p class=notice>Only the first {SCHEDULES_LIMIT} schedules are shown.</p>")
        return "".join(out)

    # -- wiring -------------------------------------------------------------------

    def page(title: str, render: Callable[[Request], str | Response]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                content = await run_in_threadpool(render, request)
            except psycopg.OperationalError as exc:
                return PlainTextResponse(f"503 database unavailable: {redact_dsn(str(exc))}", status_code=503)
            if isinstance(content, Response):
                return content
            digest = _digest(content)
            if request.query_params.get("fragment"):
                if request.headers.get(DIGEST_HEADER) == digest:  # what the page shows already
                    return Response(status_code=204, headers={DIGEST_HEADER: digest})
                return HTMLResponse(content, headers={DIGEST_HEADER: digest})
            return HTMLResponse(layout(request, title, content, digest=digest))

        return endpoint

    async def action(request: Request) -> Response:
        checked = await dash.check_csrf(request)
        if isinstance(checked, Response):
            return checked
        task_id = parse_id(request.path_params["task_id"])
        if task_id is None:
            return PlainTextResponse("404 not found", status_code=404)
        what = request.path_params["action"]
        query = {"retry": queries.RETRY, "cancel": queries.CANCEL}.get(what)
        if query is None:
            return PlainTextResponse("404 not found", status_code=404)
        try:
            row = (await run_in_threadpool(dash.rows, query, {"task_id": task_id}))[0]
            notice = (f"Task {task_id} is queued again." if what == "retry"
                      else f"Cancelled {row['cancel']} task(s).")  # fmt: skip
            logger.info("dashboard: %s task %d", what, task_id, extra={"task_id": task_id})
        except NotFound:
            return PlainTextResponse(f"404 not found: task {task_id} does not exist", status_code=404)
        except (InvalidState, ConductorError) as exc:
            notice = f"Could not {what} task {task_id}: {exc.message}"
        return RedirectResponse(f"/runs/{task_id}{dash.notice_query(request, notice)}", status_code=303)

    async def operate(query: str, params: Mapping[str, Any], what: str) -> tuple[dict[str, Any] | None, str]:
        """Run an operator's action: (its row, '') or (None, why it could not)."""
        try:
            return (await run_in_threadpool(dash.rows, query, params))[0], ""
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
        checked = await dash.check_csrf(request)
        if isinstance(checked, Response):
            return checked
        what, name = request.path_params["action"], checked.get("name", "")
        if what not in ("enable", "disable", "run"):
            return PlainTextResponse("404 not found", status_code=404)
        if not name:
            return PlainTextResponse("400 bad request: no schedule name", status_code=400)
        if what == "run":
            row, notice = await operate(queries.DASHBOARD_FIRE_SCHEDULE, {"name": name}, f"run schedule {name}")
            if not notice:  # it fired: the row is its task's
                assert row is not None
                notice = f"Schedule {name} fired: task {row['task_id']}."
        else:
            row, notice = await operate(queries.DASHBOARD_ENABLE_SCHEDULE, {"name": name, "enabled": what == "enable"},
                                        f"{what} schedule {name}")  # fmt: skip
            notice = notice or f"Schedule {name} is {what}d."
        if row is not None:
            logger.info("dashboard: %s schedule %s", what, name)
        return RedirectResponse(f"/schedules{dash.notice_query(request, notice)}", status_code=303)

    async def queue_action(request: Request) -> Response:
        checked = await dash.check_csrf(request)
        if isinstance(checked, Response):
            return checked
        what, queue = request.path_params["action"], checked.get("queue", "")
        query = {"pause": queries.DASHBOARD_PAUSE_QUEUE, "resume": queries.DASHBOARD_RESUME_QUEUE}.get(what)
        if query is None:
            return PlainTextResponse("404 not found", status_code=404)
        if not queue:
            return PlainTextResponse("400 bad request: no queue", status_code=400)
        row, notice = await operate(query, {"queue": queue}, f"{what} queue {queue}")
        if row is not None:
            logger.info("dashboard: %s queue %s", what, queue)
            done = "paused" if what == "pause" else "resumed"
            notice = f"Queue {queue} is {done}." if row["changed"] else f"Queue {queue} was {done} already."
        return RedirectResponse(f"/{dash.notice_query(request, notice)}", status_code=303)

    async def events(request: Request) -> Response:
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
                    yield _sse(event, data)
                    if event == "unavailable":
                        return
            finally:
                watcher.cancel()
                dash.events.leave(stream)

        return StreamingResponse(body(), media_type="text/event-stream", headers={"X-Accel-Buffering": "no"})

    async def login(request: Request) -> Response:
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
            f"<h1>Log in</h1>{error}<form method=post action=\"/login{h(_qs({'next': nxt}))}\">"
            f'<input type=hidden name=csrf value="{h(request.state.csrf)}">'
            "<input type=password name=token placeholder=token autofocus> <button type=submit>Log in</button></form>"
        ), live=False)  # fmt: skip

    async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        host = request.headers.get("host")
        if not dash.host_check(host):
            return PlainTextResponse(dash.host_check.refusal(host), status_code=421)
        csrf = request.cookies.get(CSRF_COOKIE)
        fresh = not csrf or len(csrf) < 32
        request.state.csrf = secrets.token_urlsafe(32) if fresh else csrf
        request.state.nonce = secrets.token_urlsafe(16)
        if request.url.path != "/login" and not dash.authenticated(request):
            if request.method == "GET" and not request.query_params.get("fragment") and request.url.path != "/events":
                nxt = request.url.path + _qs(dict(request.query_params))
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

    from starlette.middleware import Middleware
    from starlette.middleware.base import BaseHTTPMiddleware

    app = Starlette(
        routes=[
            Route("/", page("Queues", queues_page)),
            Route("/runs", page("Runs", runs_page)),
            Route("/runs/{task_id}", page("Run", run_page)),
            Route("/runs/{task_id}/{action}", action, methods=["POST"]),
            Route("/schedules", page("Schedules", schedules_page)),
            Route("/schedules/{action}", schedule_action, methods=["POST"]),
            Route("/queues/{action}", queue_action, methods=["POST"]),
            Route("/events", events),
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
    non-loopback ``host`` without ``token``. ``options``: those of :func:`create_app`."""
    import uvicorn

    check_bind(host, token)
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
