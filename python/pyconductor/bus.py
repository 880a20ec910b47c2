"""The event bus: messages on topics over LISTEN/NOTIFY (``sql/functions/bus.sql``).

    app = Conductor(DSN)
    app.publish("orders", {"id": 7})            # sent at commit, if anyone subscribes

    with app.subscribe(["orders", "tasks"]) as sub:
        for msg in sub:
            if isinstance(msg, Missed):
                resync()                        # the connection dropped meanwhile
            else:
                handle(msg.topic, msg.payload)

A :class:`Subscription` owns one autocommit connection: it LISTENs on
``conductor_bus`` and records its topics with ``conductor.subscribe`` (the
engine notifies only while someone subscribes). The channel carries every
subscribed topic of every session, so it keeps only its own topics, and, with
``skip_own``, drops the messages its own application published (same origin).
A lost connection is reconnected by itself (backoff as :func:`pyconductor.link.retry`);
once it listens again it yields :class:`Missed`, since messages may have been
sent meanwhile. The engine publishes topic ``tasks``: ``{"event": "queued",
"queue": q}`` and ``{"event": "finished", "ids": [...]}``.

Messages are a hint for live views and caches, delivered at most once, at the
publisher's commit; they are lost while nobody listens. The ``origin`` is a
label, not proof of who sent a message.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Self

import psycopg

from pyconductor import queries
from pyconductor.calls import Call
from pyconductor.errors import InvalidArgument, mapped_errors
from pyconductor.link import CONNECTION_ERRORS, Aborted, connect, retry
from pyconductor.wire import dumps_json

__all__ = ["CHANNEL", "Message", "Missed", "Subscription", "publish", "topic_list"]

logger = logging.getLogger("pyconductor")

CHANNEL = "conductor_bus"

# close() from another thread is noticed within this long by a waiting get()
_WAIT_SLICE = 0.5


@dataclass(frozen=True)
class Message:
    """One message of the bus: its topic, the publisher's origin (None for the
    engine's and for SQL callers that gave none), and its JSON payload."""

    topic: str
    origin: str | None
    payload: Any


@dataclass(frozen=True)
class Missed:
    """The subscription reconnected: messages may have been missed meanwhile. Resync."""


def publish(topic: str, payload: Any, origin: str | None) -> Call[bool]:
    """``conductor.publish`` of ``payload`` (None: ``{}``) on ``topic``; decodes
    to whether it was sent. The one builder both clients run."""
    try:
        body = dumps_json({} if payload is None else payload)
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"the payload of topic {topic!r} is not JSON-serialisable: {exc}") from exc
    params = {"topic": topic, "payload": body, "origin": origin}
    return Call(queries.PUBLISH, params, lambda rows: bool(rows[0]["sent"]))


def topic_list(topics: str | Iterable[str]) -> list[str]:
    """``topics`` as a list (a single topic may be given as a string)."""
    return [topics] if isinstance(topics, str) else list(topics)


class Subscription:
    """A connection of its own listening for ``topics`` ('*': every topic).

    Connects at once (raising a connection error or InvalidArgument then);
    later losses reconnect by themselves. :meth:`get` waits for the next
    :class:`Message` or :class:`Missed`; iterating yields them until
    :meth:`close`. Used by one thread; :meth:`close` may come from another
    (a waiting :meth:`get` returns within half a second)."""

    def __init__(self, dsn: str, topics: str | Iterable[str], origin: str | None = None,
                 skip_own: bool = True) -> None:  # fmt: skip
        self.dsn = dsn
        self.topics = topic_list(topics)
        if not self.topics:
            raise InvalidArgument("subscribe needs at least one topic")
        self.origin = origin
        self.skip_own = skip_own
        self._all = "*" in self.topics
        self._closed = threading.Event()
        self._pending: deque[psycopg.Notify] = deque()
        self._conn: psycopg.Connection[Any] | None = None
        self._conn = self._connect()

    def __repr__(self) -> str:
        return f"<Subscription topics={self.topics!r} origin={self.origin!r}>"

    @property
    def backend_pid(self) -> int | None:
        """The server process of the listening connection (None while reconnecting)."""
        conn = self._conn
        return None if conn is None or conn.closed else conn.info.backend_pid

    def _connect(self) -> psycopg.Connection[Any]:
        conn = connect(self.dsn, "bus", self.origin or "-")
        try:
            conn.execute(queries.LISTEN_BUS)  # listening first: nothing published after subscribe() is lost
            with mapped_errors():
                conn.execute(queries.SUBSCRIBE, {"topics": self.topics})
        except BaseException:
            conn.close()
            raise
        return conn

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # closing a broken connection
                conn.close()

    def _reconnect(self) -> bool:
        """Connect again (retrying with backoff); False when closed meanwhile."""
        self._drop()
        self._pending.clear()
        try:
            self._conn = retry(self._connect, what="bus subscription", abort=self._closed,
                               extra={"topics": self.topics}, on_lost=lambda: None)  # fmt: skip
        except Aborted:
            return False
        return True

    def _message(self, note: psycopg.Notify) -> Message | None:
        """The note as a Message, or None when it is not for this subscription."""
        try:
            body = json.loads(note.payload)
            msg = Message(topic=body["topic"], origin=body.get("origin"), payload=body.get("payload"))
        except (ValueError, TypeError, KeyError):
            logger.warning("ignoring a malformed message on %s: %.200s", CHANNEL, note.payload)
            return None
        if not (self._all or msg.topic in self.topics):
            return None  # another session's topic on the shared channel
        if self.skip_own and self.origin is not None and msg.origin == self.origin:
            return None
        return msg

    def get(self, timeout: float | None = None) -> Message | Missed | None:
        """The next message, or :class:`Missed` after a reconnect; None when
        ``timeout`` seconds pass first (None: wait as long as it takes) or the
        subscription is closed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._closed.is_set():
            while self._pending:
                msg = self._message(self._pending.popleft())
                if msg is not None:
                    return msg
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            wait = _WAIT_SLICE if remaining is None else min(remaining, _WAIT_SLICE)
            try:
                conn = self._conn
                if conn is None:
                    raise psycopg.OperationalError("the subscription has no connection")
                self._pending.extend(conn.notifies(timeout=wait, stop_after=1))
            except CONNECTION_ERRORS as exc:
                if self._closed.is_set():
                    return None
                text = str(exc).strip().splitlines()
                logger.warning("bus subscription lost its connection (%s); reconnecting",
                               text[0] if text else type(exc).__name__)  # fmt: skip
                return Missed() if self._reconnect() else None
        return None

    def __iter__(self) -> Iterator[Message | Missed]:
        while True:
            msg = self.get()
            if msg is None:
                return
            yield msg

    def close(self) -> None:
        """Unsubscribe (best effort) and close the connection. Idempotent."""
        if self._closed.is_set():
            return
        self._closed.set()
        conn = self._conn
        if conn is not None and not conn.closed and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            with contextlib.suppress(Exception):  # closing anyway
                conn.execute(queries.UNSUBSCRIBE)  # else reap() forgets the rows of the ended session
        self._drop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
