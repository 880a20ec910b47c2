"""The producer: registers the worker, then claims tasks into free slots.

One thread on its own link. It claims in batches (``conductor.claim``)
exactly as many tasks as there are free slots (a slot whose result awaits
its report counts as busy once concurrency such results wait, so the worker
holds at most 2 x concurrency tasks), hands each to the executor, and claims
again at once while claims come back full. When slots free up one at a time
it lets a few more free up first (``claim_linger`` at most), so one claim
fills many. Otherwise it sleeps until a :class:`Listener` hears a
``NOTIFY conductor`` naming one of its queues, a slot frees up, or the poll
interval passes.

A task claimed while the worker stops is handed back (released) unrun.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import psycopg

from pyconductor import defaults, queries
from pyconductor.context import TaskContext
from pyconductor.errors import translate
from pyconductor.ledger import Ledger
from pyconductor.link import Aborted, Link, retry

if TYPE_CHECKING:
    from pyconductor.executor import Executor
    from pyconductor.steps import StepRuntime

__all__ = ["Listener", "Producer"]

logger = logging.getLogger("pyconductor")

LISTEN_PROBE_AFTER = 30.0  # seconds without a notification before the listener checks its connection


class Producer:
    """Registers, then claims into free slots until :meth:`stop_claiming`; see the module doc.

    Without an executor (a scheduler-only worker) it only registers."""

    def __init__(self, ledger: Ledger, link: Link, executor: Executor | None, runtime: StepRuntime | None, *,
                 queues: Sequence[str] | None, lease: timedelta, poll_interval: float, claim_linger: float,
                 registration: Mapping[str, Any], on_claimed: Callable[[float], None]) -> None:  # fmt: skip
        self.ledger = ledger
        self.link = link
        self.executor = executor
        self.runtime = runtime
        self.worker_id = link.worker_id
        self.queues = list(queues) if queues else None
        self.lease = lease
        self.poll_interval = poll_interval
        self.claim_linger = claim_linger
        self.registration = registration
        self.on_claimed = on_claimed
        # a claim waits (claim_linger at most) until this many slots are free
        self.claim_at_least = max(1, ledger.concurrency // 4)
        self.stopping = threading.Event()
        self.sleeping = False  # idle, waiting for a notification, a free slot or the poll
        self._extra = {"worker_id": self.worker_id}
        self.thread = threading.Thread(target=self._loop, name="pyconductor-claim", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop_claiming(self) -> None:
        """Claim nothing more; a claim in flight hands its tasks back when it returns."""
        self.stopping.set()
        self.ledger.wake.set()

    def wants(self, queue: str) -> bool:
        return self.queues is None or queue in self.queues

    def _register(self) -> None:
        self.link.call(lambda c: c.execute(queries.REGISTER_WORKER, self.registration), self.stopping)

    def _loop(self) -> None:
        try:
            self._register()
        except Aborted:
            return
        except Exception as exc:  # noqa: BLE001 - informational; claiming works without it
            logger.error("could not register worker: %s", exc, extra=self._extra)
        if self.executor is None:
            self.stopping.wait()
            return
        wake = self.ledger.wake
        while not self.stopping.is_set():
            wake.clear()
            free = self.ledger.free_slots()
            if 0 < free < self.claim_at_least and free < self.ledger.concurrency:
                # Slots free up one handler at a time; claiming for each would be a
                # round trip (and a commit) per task. Let a few more free up, for at
                # most claim_linger, so one claim fills many.
                deadline = time.monotonic() + self.claim_linger
                while free < self.claim_at_least and not self.stopping.is_set():
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    wake.clear()
                    wake.wait(left)
                    free = self.ledger.free_slots()
            if free > 0:
                claimed = self._claim(free)
                if claimed is None:
                    return
                if claimed == free:
                    continue  # a full batch: there may be more
            self.sleeping = True
            wake.wait(self.poll_interval)
            self.sleeping = False

    def _claim(self, free: int) -> int | None:
        """Claim up to ``free`` tasks and hand them on; how many came (None: stopped)."""
        executor = self.executor
        assert executor is not None
        claimed_at = time.monotonic()
        try:
            rows = self.link.rows(queries.CLAIM, {
                "worker_id": self.worker_id, "queues": self.queues, "max_tasks": free, "lease": self.lease,
            }, self.stopping)  # fmt: skip
        except Aborted:
            return None
        except Exception as exc:  # noqa: BLE001 - never die; back off and try again
            logger.error("claim failed: %s", translate(exc) if isinstance(exc, psycopg.Error) else exc,
                         extra=self._extra, exc_info=not isinstance(exc, psycopg.Error))  # fmt: skip
            self.stopping.wait(defaults.BACKOFF_MAX)
            return 0
        if self.stopping.is_set() and rows:
            # stop() came while claiming: hand these back without running them
            for row in rows:
                executor.hand_back(TaskContext.from_claim(row, self.worker_id))
            return None
        lease = self.lease
        for row in rows:
            timeout = row.get("timeout")
            if timeout is not None and timeout < lease:
                lease = timeout  # claim leased it until its time limit only
            executor.submit(TaskContext.from_claim(row, self.worker_id, self.runtime), timeout, claimed_at)
        if rows:
            self.on_claimed(claimed_at + lease.total_seconds())  # the reaper looks when the first lease ends
        return len(rows)


class Listener:
    """LISTEN conductor on its own link; a notification naming a queue the
    producer wants (or a reconnect, after which some may have been missed)
    wakes it. A connection silent for LISTEN_PROBE_AFTER seconds is probed, so
    a dead one is noticed; polling covers the gap while it is down."""

    def __init__(self, link: Link, wants: Callable[[str], bool], wake: threading.Event,
                 halt: threading.Event) -> None:  # fmt: skip
        self.link = link
        self.wants = wants
        self.wake = wake
        self.halt = halt
        self._extra = {"worker_id": link.worker_id}
        self.thread = threading.Thread(target=self._loop, name="pyconductor-listen", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _loop(self) -> None:
        while not self.halt.is_set():
            try:
                retry(self._listen, what="listen", abort=self.halt, extra=self._extra, on_lost=self.link.close)
            except Aborted:
                return
            except Exception:  # noqa: BLE001 - never die; polling covers the gap
                logger.exception("listener failed", extra=self._extra)
                self.link.close()
                self.halt.wait(defaults.BACKOFF_MAX)
        self.link.close()

    def _listen(self) -> None:
        """Listen until halted (a lost connection raises, for :func:`retry`)."""
        conn = self.link.get()
        conn.execute(queries.LISTEN)
        self.wake.set()  # notifications may have been missed while away
        quiet_since = time.monotonic()
        while not self.halt.is_set():
            heard = False
            for note in conn.notifies(timeout=0.5):
                heard = True
                if self.wants(note.payload):
                    self.wake.set()
            now = time.monotonic()
            if heard:
                quiet_since = now
            elif now - quiet_since > LISTEN_PROBE_AFTER:
                conn.execute(queries.PROBE)
                quiet_since = now
