"""The dashboard's live updates: one listening session for all its browsers.

:class:`EventHub` holds one session that LISTENs on the event bus, subscribed to
topic ``tasks`` only while a browser has ``/events`` open (with none, the engine
publishes nothing), and hands each message to every browser's stream;
:func:`sse` writes one Server-Sent Event.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from contextlib import suppress
from typing import Any

import psycopg

from pyconductor import queries
from pyconductor.dsn import redact_dsn, tcp_options

__all__ = ["BUS_TOPICS", "EventHub", "sse"]

logger = logging.getLogger("pyconductor")

BUS_TOPICS = ["tasks"]


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


def sse(event: str, data: str = "") -> str:
    """One Server-Sent Event (``message`` is the default type)."""
    head = "" if event == "message" else f"event: {event}\n"
    return head + "".join(f"data: {line}\n" for line in (data.splitlines() or [""])) + "\n"
