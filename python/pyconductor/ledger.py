"""What a worker holds, shared by its services: the one small state object.

A task claimed by the producer is *held* (its attempt id in ``held``) until
the reporter has sent its outcome, or until a heartbeat answered that the
worker no longer holds it. While its handler runs (or waits for a handler
thread) it is also *running* (a :class:`Run` in ``running``). The producer
claims only into free slots (:meth:`Ledger.free_slots`); the executor, the
reporter and the heartbeat change the two maps; everything goes under the one
``lock``. ``wake`` tells the producer to look at its slots again.

A claimed task may also wait in the executor's *buffer* for a slot (held, not
yet running): the producer claims ``prefetch`` tasks more than the free slots
(the executor sizes it, see :mod:`pyconductor.executor`), so a slot that frees
up starts the next task at once instead of waiting for a claim's round trip.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyconductor.context import TaskContext
    from pyconductor.registry import Task

__all__ = ["STATS", "Ledger", "Run", "task_extra"]

STATS = ("claimed", "succeeded", "failed", "unknown", "discarded", "refused", "released", "suspended", "timed_out")


@dataclass(eq=False, slots=True)
class Run:
    """One claimed task on its way through the executor."""

    ctx: TaskContext
    task: Task | None
    deadline: float | None = None  # time.monotonic() at which its time limit (claimed_task.timeout) is reached
    grace_until: float | None = None  # cancelled: its slot is freed at this time if it still runs
    freed: bool = False  # its slot was given up (timed out, or cancelled past the grace): outcome discarded
    started_at: float = 0.0  # time.perf_counter() when its handler started (0: not yet)
    start_by: float | None = None  # buffered: handed back if no slot took it by this time.monotonic()

    @property
    def due(self) -> float | None:
        """When the executor's watchdog must look at it (None: never)."""
        if self.grace_until is None:
            return self.deadline
        return self.grace_until if self.deadline is None else min(self.deadline, self.grace_until)


class Ledger:
    """``held`` (attempt id -> TaskContext) and ``running`` (attempt id -> Run), the counters, one lock."""

    def __init__(self, concurrency: int) -> None:
        self.concurrency = concurrency
        self.lock = threading.Lock()
        self.held: dict[int, TaskContext] = {}
        self.running: dict[int, Run] = {}
        self.idle = threading.Condition(self.lock)  # notified when running empties and nothing settles
        # handlers that returned and whose outcome is not queued yet (the executor's, between a
        # handler's end and its report): a stop waits for them too, or the reporter could close
        # before the last result reaches it
        self.settling = 0
        self.wake = threading.Event()  # producer: claim now (slots freed up, or a notification came)
        self.stats: dict[str, int] = dict.fromkeys(STATS, 0)
        self.prefetch = 0  # tasks to claim beyond the free slots: the room the executor's buffer wants
        self.buffered = 0  # claimed tasks waiting in the executor's buffer for a slot
        self.most_ran = 3 * concurrency  # held tasks that ran, at most (see free_slots)
        self.feed: Callable[[], None] = lambda: None  # the executor's: start buffered tasks in free slots

    def count(self, key: str, n: int = 1) -> None:
        with self.lock:
            self.stats[key] += n

    def free_slots(self) -> int:
        """Tasks to claim: the free handler slots and the buffer's room, held back
        while results wait for their report: a worker holds at most 3 x
        concurrency tasks that run or finished and wait for their report (and
        at most ``prefetch`` more in the buffer, which never ran), so a slow or
        cut-off report connection stops the claiming instead of piling up
        results that a crash would make run again. (Under load a batch is
        being sent while the next one fills: 2 x left the slots idle a fifth
        of the time: commit f14ca0b, and bench/HISTORY.md, issue 26's first part.)"""
        with self.lock:
            return self._free()

    def _free(self) -> int:
        return min(self.concurrency + self.prefetch - len(self.running) - self.buffered, self.most_ran - self.ran())

    def ran(self) -> int:
        """Held tasks that run, or finished and wait for their report (the lock held)."""
        return len(self.held) - self.buffered

    def held_ids(self) -> list[int]:
        with self.lock:
            return list(self.held)

    def drop(self, attempt_id: int) -> TaskContext | None:
        """Forget a held attempt (the database says this worker no longer holds it)."""
        with self.lock:
            return self.held.pop(attempt_id, None)

    def reported(self, attempt_ids: list[int]) -> None:
        """Their outcomes were sent (or given up): no longer held; the producer may claim."""
        with self.lock:
            for attempt_id in attempt_ids:
                self.held.pop(attempt_id, None)
            waiting = self.buffered
        if waiting:
            self.feed()  # they may have waited for these reports (most_ran)
        self.wake.set()

    def wait_idle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for no handler to run, and every outcome of one that
        returned to be queued for its report; whether so."""
        with self.lock:
            return self.idle.wait_for(lambda: not self.running and not self.settling, timeout=max(0.0, timeout))

    def settled(self) -> None:
        """A returned handler's outcome is queued (or discarded): one less to wait for."""
        with self.lock:
            self.settling -= 1
            if not self.running and not self.settling:
                self.idle.notify_all()


def task_extra(ctx: TaskContext, duration_ms: float | None = None) -> dict[str, Any]:
    """The ``extra`` of a log record about one task (stable keys)."""
    extra: dict[str, Any] = {
        "task_id": ctx.task_id, "kind": ctx.kind, "queue": ctx.queue,
        "attempt": ctx.attempt, "worker_id": ctx.worker_id,
    }  # fmt: skip
    if duration_ms is not None:
        extra["duration_ms"] = round(duration_ms, 3)
    return extra
