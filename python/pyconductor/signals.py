"""SIGTERM and SIGINT for a process that runs until told to stop (``Worker.run``,
``Node.run`` of ``pyconductor serve``): the first asks for a graceful stop, a
second exits at once with code 130."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["install_stop_signals"]


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
