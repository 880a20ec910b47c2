"""TaskContext: what a running handler may know about its claim.

A handler written as ``def handler(payload, ctx)`` receives one. Its
``cancelled`` flag is set by the worker when a heartbeat answers that the task
was cancelled or that the lease was lost (or when a shutdown hands the task
back), so a long handler can stop early with ``ctx.raise_if_cancelled()``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pyconductor.errors import TaskCancelled

__all__ = ["TaskContext"]


@dataclass(eq=False)
class TaskContext:
    """One claim of one task, as the handler sees it.

    ``attempt_id`` is the fencing token of the claim; ``attempt`` counts the
    attempts that count against ``max_attempts`` (1 for the first run).
    """

    task_id: int
    attempt_id: int
    attempt: int
    kind: str
    queue: str
    payload: Any = None
    priority: int = 0
    max_attempts: int = 1
    recoveries: int = 0
    parent_id: int | None = None
    root_id: int | None = None
    lease_expires_at: datetime | None = None
    worker_id: str | None = None
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)
    _reason: str | None = field(default=None, repr=False)

    @classmethod
    def from_claim(cls, row: dict[str, Any], worker_id: str | None = None) -> TaskContext:
        """Build from a row of ``conductor.claim`` (a dict)."""
        return cls(
            task_id=row["task_id"], attempt_id=row["attempt_id"], attempt=row["attempt"],
            kind=row["kind"], queue=row["queue"], payload=row["payload"],
            priority=row.get("priority", 0), max_attempts=row.get("max_attempts", 1),
            recoveries=row.get("recoveries", 0), parent_id=row.get("parent_id"),
            root_id=row.get("root_id"), lease_expires_at=row.get("lease_expires_at"),
            worker_id=worker_id,
        )  # fmt: skip

    @property
    def cancelled(self) -> bool:
        """True once the task was cancelled, its lease lost, or the worker handed it back."""
        return self._cancel.is_set()

    @property
    def cancel_reason(self) -> str | None:
        """Why ``cancelled`` is set: 'cancelled', 'lost' or 'released'; None while it is not."""
        return self._reason

    def cancel(self, reason: str) -> None:
        """Set ``cancelled`` (the worker calls this; the first reason given sticks)."""
        if self._reason is None:
            self._reason = reason
        self._cancel.set()

    def wait_cancelled(self, timeout: float | None = None) -> bool:
        """Sleep up to ``timeout`` seconds, waking early when cancelled; returns ``cancelled``."""
        return self._cancel.wait(timeout)

    def raise_if_cancelled(self) -> None:
        """Raise TaskCancelledError when ``cancelled`` is set; otherwise do nothing."""
        if self._cancel.is_set():
            raise TaskCancelled(
                f"task {self.task_id} ({self.kind}) attempt {self.attempt_id}: {self._reason or 'cancelled'}"
            )
