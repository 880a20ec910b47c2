"""Who may use the dashboard: where it may listen, its token and login cookie,
the CSRF check of its forms, the notices it signs, and the wrong tokens it
counts per client address (the rules are in :mod:`pyconductor.dashboard`'s
docstring and DESIGN.md, Security)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from pyconductor.access import HostCheck, bearer_matches, is_loopback
from pyconductor.web.markup import query_string

__all__ = [
    "AUTH_COOKIE",
    "CSRF_COOKIE",
    "DEFAULT_HOST",
    "SESSION_MAX_AGE",
    "Access",
    "DashboardConfigError",
    "LoginLimiter",
    "check_bind",
]

DEFAULT_HOST = "127.0.0.1"
CSRF_COOKIE = "conductor_csrf"
AUTH_COOKIE = "conductor_session"
SESSION_MAX_AGE = 12 * 3600  # seconds a login lasts
LOGIN_MAX_FAILURES = 5  # wrong tokens a client address may send per LOGIN_WINDOW
LOGIN_WINDOW = 60.0  # seconds
LOGIN_ADDRESSES = 10_000  # client addresses remembered at most (the oldest are forgotten first)
NOTICE_SIG = "sig"  # the query parameter carrying a notice's signature


class DashboardConfigError(ValueError):
    """The dashboard was asked to start in a way that is not safe."""


def check_bind(host: str, token: str | None) -> None:
    """Raise DashboardConfigError unless ``host`` is loopback or a token is set."""
    if not is_loopback(host) and not token:
        raise DashboardConfigError(
            f"refusing to listen on {host} without a token: anyone who reaches it could retry and "
            "cancel tasks. Set CONDUCTOR_DASHBOARD_TOKEN (or pass --token-file or --token), or bind to 127.0.0.1."
        )


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


class Access:
    """Who may use one dashboard and what a browser's request proves: its token
    and login cookies, the Host check, the CSRF check, the signed notices, and
    the wrong tokens counted per client address."""

    def __init__(self, token: str | None = None, *, host_check: HostCheck | None = None,
                 session_max_age: int = SESSION_MAX_AGE, secure_cookies: bool = False) -> None:  # fmt: skip
        self.token = token or None
        self.host_check = host_check or HostCheck(DEFAULT_HOST)
        self.session_max_age = int(session_max_age)
        self.secure_cookies = secure_cookies
        self.logins = LoginLimiter()
        self._notice_key = secrets.token_bytes(32)  # per process: a notice is shown only by the process that issued it

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

    def notice_params(self, request: Request, notice: str) -> dict[str, str]:
        """``notice`` and its signature as query parameters, for a redirect after an action of
        ``request``'s browser (to a page whose other parameters are kept)."""
        return {"notice": notice, NOTICE_SIG: self.notice_sig(request.state.csrf, notice)}

    def notice_query(self, request: Request, notice: str) -> str:
        """``?notice=...&sig=...`` for a redirect after an action of ``request``'s browser."""
        return query_string(self.notice_params(request, notice))

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
