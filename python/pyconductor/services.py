"""The services of one process, started in one order and stopped in the reverse.

A service is anything with a start and a stop (the worker, the leader service,
the reaper, the dashboard). :class:`Services` is their supervisor inside the
process: :meth:`~Services.start` starts each in the order they were added and,
when one fails, stops the ones already started (in reverse) before raising;
:meth:`~Services.stop` stops what started in the reverse order, each stop's
error logged so that one service's trouble never keeps the others running.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Service", "Services"]

logger = logging.getLogger("pyconductor")


@dataclass(frozen=True)
class Service:
    """One service: its name (for the logs), how it starts, how it stops."""

    name: str
    start: Callable[[], object]
    stop: Callable[[], object]


class Services:
    """Starts the services added in order; stops the started ones in reverse (see the module doc)."""

    def __init__(self, extra: Mapping[str, Any] | None = None) -> None:
        self._planned: list[Service] = []
        self._running: list[Service] = []
        self._extra = dict(extra or {})

    def add(self, name: str, start: Callable[[], object], stop: Callable[[], object]) -> None:
        self._planned.append(Service(name, start, stop))

    @property
    def names(self) -> list[str]:
        """The services in their start order."""
        return [service.name for service in self._planned]

    def start(self) -> None:
        """Start each service in order; when one raises, stop those started, then raise."""
        for service in self._planned:
            try:
                service.start()
            except BaseException:
                self.stop()
                raise
            self._running.append(service)

    def stop(self) -> None:
        """Stop the started services, the last started first."""
        while self._running:
            service = self._running.pop()
            try:
                service.stop()
            except Exception:  # one service's trouble never keeps the others running
                logger.exception("%s did not stop cleanly", service.name, extra=self._extra)
