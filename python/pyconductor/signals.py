"""SIGTERM and SIGINT for a process that runs until told to stop (``Worker.run``,
``Node.run`` of ``pyconductor serve`` and ``pyconductor worker``): the first
asks for a graceful stop, a second exits at once with code 130.

:func:`run_until_stopped` is that one loop: start, wait for the
:class:`StopRequest`, stop, return its exit code."""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["StopRequest", "install_stop_signals", "run_until_stopped"]

logger = logging.getLogger("pyconductor")


def install_stop_signals(first: Callable[[], None], exits_now: Callable[[], bool]) -> Callable[[], None]:
    """On the main thread, handle SIGTERM and SIGINT: ``exits_now()`` true means
    the process ends at once (code 130), else ``first()`` asks for a stop.
    Returns what puts the previous handlers back (nothing off the main thread)."""
    installed: dict[int, Any] = {}

    def on_signal(signum: int, frame: Any) -> None:
        if exits_now():
            os.write(2, b"pyconductor: second signal, exiting now (130)\n")
            os._exit(130)
        first()

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            installed[sig] = signal.signal(sig, on_signal)

    def restore() -> None:
        for signum, previous in installed.items():
            signal.signal(signum, previous)

    return restore


class StopRequest:
    """Whether a running process was asked to stop: by a signal, by ``request_stop()``
    (:meth:`ask`), or by itself with an exit code (:meth:`exit_with`: a worker's
    exit_on_stuck). A signal after a stop asked from outside exits at once; after a
    stop the process began itself, the first signal still only asks."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signalled = False
        self.exit_code = 0

    def ask(self) -> None:
        self.event.set()

    def exit_with(self, code: int) -> None:
        self.exit_code = code
        self.event.set()

    def exits_now(self) -> bool:
        return self.signalled or (self.event.is_set() and self.exit_code == 0)

    def _signal(self) -> None:
        self.signalled = True
        self.event.set()


def run_until_stopped(start: Callable[[], object], stop: Callable[[], object], request: StopRequest,
                      what: str, extra: dict[str, Any]) -> int:  # fmt: skip
    """Start, block until ``request`` (SIGTERM, SIGINT, ...), stop, and return its exit
    code. A start that fails puts the previous signal handlers back; after a start they
    stay installed, so a signal while stopping still means "now". ``what`` ends the log
    line of a stop asked from outside ("stop requested; <what> (again to exit now)")."""
    restore = install_stop_signals(request._signal, request.exits_now)
    try:
        start()
    except BaseException:
        restore()  # a start that failed leaves the process as it was
        raise
    try:
        while not request.event.wait(1.0):
            pass
        if request.exit_code == 0:
            logger.info("stop requested; %s (again to exit now)", what, extra=extra)
    finally:
        stop()
    return request.exit_code
