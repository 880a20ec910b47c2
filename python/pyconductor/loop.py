"""The executor's event loop: one thread running asyncio, for ``async def`` handlers.

Started by the first task whose handler is a coroutine function (a worker
with only ``def`` handlers never starts it), stopped by :meth:`EventLoop.close`
at the worker's stop. Every call here but :meth:`close` is safe from any
thread: it hands the work to the loop (``call_soon_threadsafe``), in order, so
a cancel sent after a submit finds the asyncio task the submit created. What
runs the handler and reports its outcome is the executor's coroutine; this
module only owns the loop, the thread and the asyncio task of each attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any

__all__ = ["EventLoop"]

logger = logging.getLogger("pyconductor")

CLOSE_TIMEOUT = 1.0  # seconds close() waits for cancelled tasks to end and the thread to stop


class EventLoop:
    """One asyncio loop on one daemon thread; ``start(key, coroutine_factory)`` runs an asyncio task."""

    def __init__(self, name: str = "pyconductor-loop") -> None:
        self.name = name
        self._lock = threading.Lock()  # only to start the loop once
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._tasks: dict[int, asyncio.Task[Any]] = {}  # key -> its asyncio task; read and written on the loop only
        self._closed = False

    @property
    def running(self) -> bool:
        return self._loop is not None and not self._closed

    def _ensure(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is not None:
            return loop
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()
                self._thread = threading.Thread(target=self._run, args=(loop, ready), name=self.name, daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    def _run(self, loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        try:
            loop.run_forever()
            # stopped by close(): let what was cancelled end, then close unless something ignores it
            pending = [t for t in self._tasks.values() if not t.done()]
            if pending:
                loop.run_until_complete(asyncio.wait(pending, timeout=CLOSE_TIMEOUT))
            if not any(not t.done() for t in pending):
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()
        except Exception:  # the thread is ending anyway
            logger.exception("the event loop of async handlers failed")

    def start(self, key: int, make: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Run ``make()`` as an asyncio task on the loop, known by ``key`` until it ends."""
        self._ensure().call_soon_threadsafe(self._create, key, make)

    def _create(self, key: int, make: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        task = asyncio.get_running_loop().create_task(make())
        self._tasks[key] = task

        def forget(_task: asyncio.Task[Any]) -> None:
            self._tasks.pop(key, None)

        task.add_done_callback(forget)

    def cancel(self, key: int) -> None:
        """Cancel the asyncio task of ``key`` (it ends with CancelledError at its next await), if it runs."""
        loop = self._loop
        if loop is not None and not self._closed:
            with contextlib.suppress(RuntimeError):  # the loop was closed meanwhile
                loop.call_soon_threadsafe(self._cancel, key)

    def _cancel(self, key: int) -> None:
        task = self._tasks.get(key)
        if task is not None:
            task.cancel()

    def close(self) -> None:
        """Cancel what still runs, stop the loop and wait a little for its thread (a daemon)."""
        with self._lock:
            self._closed = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return

        def stop() -> None:
            for task in self._tasks.values():
                task.cancel()
            loop.stop()

        try:
            loop.call_soon_threadsafe(stop)
        except RuntimeError:
            return
        thread.join(CLOSE_TIMEOUT + 0.5)
