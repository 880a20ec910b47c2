"""The producer: registers the worker, then claims tasks into free slots.

One thread on its own link. It claims in batches (``conductor.claim``)
as many tasks as there are free slots plus the room of the executor's buffer
(:meth:`Ledger.free_slots`: results that await their report hold the claiming
back, so the worker holds at most 3 x concurrency tasks that ran, and the
buffer's, which never did), hands each to the executor, and claims
again at once while claims come back full. When slots free up one at a time
it lets a few more free up first (``claim_linger`` at most), so one claim
fills many. Otherwise it sleeps until a :class:`Listener` hears a
``NOTIFY conductor`` naming one of its queues, a slot frees up, or the poll
interval passes.

The sleeper protocol: an enqueue notifies only a queue someone sleeps on
(a notifying commit takes a database-wide lock), so an idle worker says so.
A claim that comes back short marks the worker (``conductor.sleep``), then
claims once more at once: a task committed before the mark was visible is
found there. sleep() answers whether it is *settled* (no enqueue that could
have missed the mark is in flight); if not, the worker claims and marks
again after RECHECK_FIRST seconds, doubling up to RECHECK_MAX (1 s), until it
is, waiting on the listener meanwhile (a notification cuts the wait short).
Only a settled worker with nothing to claim waits long. Any session can hold
the keys sleep() tries (an advisory lock is everyone's): then sleep() is never
settled, and the backoff makes that cost latency (a re-check a second), not a
spinning worker; the mark is written each time, so enqueues that come after
it notify. A full claim drops
the marks (``conductor.wake``), so enqueues into a busy fleet notify nobody,
and so does stop (deregistering too); after a wait that ended by the poll it
marks again (reap may have dropped the marks). A worker that cannot mark
(sleep() fails) logs it and polls.

It claims only the kinds the worker has handlers for (``kinds``), so a
rolling deploy that adds a kind kills nothing: older workers leave its tasks
to the newer ones (the reaper dead-letters a kind no live worker has served
for ``unknown_kind_after``, a typo, say).

Due-time wake-ups: an idle producer (its last claim came back short) sleeps
until the earliest of the poll interval, the earliest future ``run_at`` on
its queues (``conductor.next_due``: a delayed task, a retry's backoff, a
``RetryLater``), and a notification. The database notifies a sleeper's
queue for a delayed insert and a delayed retry too, so a notification marks
the known due time stale: the producer claims, and when nothing came, asks
next_due again. It asks only then and once the due time it knew has passed,
so an idle worker costs a query per change, not per wake.

A task claimed while the worker stops is handed back (released) unrun.

Missed notifications ("if work keeps starting about 10 seconds late, check
the pooler"): a LISTEN through a transaction-mode pooler, or a listener
otherwise cut off, hears nothing, and the work waits for the poll. The sign:
a long wait that ran the whole poll interval while the worker was marked
asleep and settled (every enqueue onto its queues, immediate or delayed, and
every retry, release, recovery or wake-up should have notified it), then a
claim that finds a task that had been due for over ``missed_slack`` seconds
(a quarter of the poll interval, 1 s at most) before the claim. A delayed
task the worker knew of, or its own due-time wake, never ends a wait by the
poll. Each such claim counts (``missed_notifications``); MISSED_IN_A_ROW of
them in a row, with no claim woken by a notification finding work between,
is the symptom: the worker logs one WARNING naming the pooler, and
``/health`` says so until a notification wakes it to work again.

Polling (``polling=True``: a worker behind a transaction-mode pooler, which
cannot LISTEN): no listener, so no marks either (an enqueue would notify
nobody, and a notifying commit costs the whole database a lock). An idle
producer claims again at the earliest of the poll interval (1 s at most in
that mode), the next due time and a free slot, and asks next_due after
every wait that nothing cut short, since no notification says a delayed task
arrived: a claim and a next_due per poll interval while idle.
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
# how often the listener looks at its halt event between notifications: a stop
# waits for it, and an idle worker must stop well within half a second
LISTEN_HALT_CHECK = 0.1
DUE_SLACK = 0.001  # wake this long after a due time, so the claim's clock has passed it
CLAIM_FAILED = -1  # what _claim returns after an error (it has backed off already)
MISSED_IN_A_ROW = 3  # claims in a row that found work the poll, not a notification, woke it for
MISSED_SLACK_MAX = 1.0  # seconds a task may have been due at a claim after a poll before it counts as missed
POOLER_WARNING = (
    "work keeps being found by the poll, not by a notification ({n} claims in a row found a task due "
    "{late:.1f}s or more before): notifications do not reach this worker; check the pooler (LISTEN needs a "
    "session-mode or direct connection: docs/operations.md, Poolers) or run it with --pooler transaction"
)


class Producer:
    """Registers, then claims into free slots until :meth:`stop_claiming`; see the module doc.

    Without an executor (a scheduler-only worker) it only registers."""

    def __init__(self, ledger: Ledger, link: Link, executor: Executor | None, runtime: StepRuntime | None, *,
                 queues: Sequence[str] | None, kinds: Sequence[str] | None, lease: timedelta, poll_interval: float,
                 claim_linger: float, registration: Mapping[str, Any], on_claimed: Callable[[float], None],
                 polling: bool = False, code_versions: Sequence[str] | None = None) -> None:  # fmt: skip
        self.ledger = ledger
        self.link = link
        self.executor = executor
        self.runtime = runtime
        self.worker_id = link.worker_id
        self.queues = list(queues) if queues else None
        self.kinds = list(kinds) if kinds else None
        # [its code version, the older ones it replays] (docs/versioning.md); None: declares none
        self.code_versions = list(code_versions) if code_versions else None
        self.claim_query = queries.CLAIM if self.code_versions is None else queries.CLAIM_VERSIONED
        self.lease = lease
        self.poll_interval = poll_interval
        self.claim_linger = claim_linger
        self.registration = registration
        self.on_claimed = on_claimed
        self.polling = polling  # no listener: no marks, next_due after every full wait (see the module doc)
        # a claim waits (claim_linger at most) until this many slots are free
        self.claim_at_least = max(1, ledger.concurrency // 4)
        self.stopping = threading.Event()
        self.sleeping = False  # idle, waiting for a notification, a free slot, a due time or the poll
        self._due_at: float | None = None  # monotonic time the next delayed task is due (None: none known)
        self._due_stale = True  # a notification came since next_due was asked
        self._marked = False  # conductor.sleep marked this worker asleep (enqueues notify it)
        self._settled = False  # the last sleep() said no enqueue that could miss the mark is in flight
        self._recheck_in = defaults.RECHECK_FIRST  # the next wait of an unsettled idle worker
        # missed notifications (see the module doc): counted, and the last ones in a row
        self.missed_slack = min(MISSED_SLACK_MAX, poll_interval / 4)
        self.missed_notifications = 0
        self.missed_in_a_row = 0
        self.missed_late = 0.0  # seconds the latest missed task had been due at its claim
        self._by_poll = False  # the last long wait ran the poll interval out while marked and settled
        self._heard = False  # a notification came since the last long wait began
        self._warned = False
        self._extra = {"worker_id": self.worker_id}
        self.thread = threading.Thread(target=self._loop, name="pyconductor-claim", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop_claiming(self) -> None:
        """Claim nothing more; a claim in flight hands its tasks back when it returns."""
        self.stopping.set()
        self.ledger.wake.set()

    def notified(self, queue: str) -> None:
        """The listener heard of ``queue`` (or reconnected: queue ''): claim, then look at due times again."""
        if not queue or self.queues is None or queue in self.queues:
            self._due_stale = True
            self._heard = bool(queue)
            self.ledger.wake.set()

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
        try:
            self._claim_loop()
        finally:
            self._unmark()

    def _claim_loop(self) -> None:
        wake = self.ledger.wake
        while not self.stopping.is_set():
            wake.clear()
            free = self._free_slots()
            if free <= 0:
                self._long_wait(self.poll_interval)
                continue
            claimed = self._claim(free)
            if claimed is None:
                return
            if claimed == free:
                self._unmark()  # busy: enqueues need not notify this worker
                continue  # a full batch: there may be more
            if claimed != CLAIM_FAILED and not self._settled and not self.polling:
                again = self._mark_and_recheck(free - claimed)
                if again is None:
                    return
                if again:
                    continue
            self._long_wait(self._until_due())

    def _free_slots(self) -> int:
        """The free slots to claim into, after lingering for more when few are free."""
        wake = self.ledger.wake
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
        return free

    def _mark_and_recheck(self, free: int) -> bool | None:
        """Mark the worker asleep, then claim once more; whether to claim again
        now (False: wait long; None: stopped)."""
        settled = self._sleep()
        if settled is None:
            return False  # could not mark: poll
        claimed = self._claim(free)
        if claimed is None:
            return None
        if claimed > 0:
            self._recheck_in = defaults.RECHECK_FIRST
            return True  # still marked: the next short claim needs no sleep() while settled
        if settled:
            return False
        # an enqueue that may have missed the mark is still in flight: claim and mark again soon
        self.ledger.wake.wait(self._recheck_in)
        self._recheck_in = min(2 * self._recheck_in, defaults.RECHECK_MAX)
        return True

    def _long_wait(self, wait: float) -> None:
        """Wait for a notification, a free slot, the due time or the poll interval."""
        watched = self._marked and self._settled and not self.polling  # every enqueue should notify it
        self._heard = False
        self.sleeping = True
        woken = self.ledger.wake.wait(wait)
        self.sleeping = False
        self._by_poll = watched and not woken and wait >= self.poll_interval
        if not woken and wait >= self.poll_interval:
            self._settled = False  # reap may have dropped the worker's row and its marks: mark again
        if not woken and self.polling:
            self._due_stale = True  # no notification tells of a delayed task enqueued meanwhile

    def _sleep(self) -> bool | None:
        """``conductor.sleep``: mark the worker asleep on its queues; whether it is
        settled (None: no mark, after an error or a stop)."""
        try:
            rows = self.link.rows(queries.SLEEP, {"worker_id": self.worker_id, "queues": self.queues}, self.stopping)
        except Aborted:
            return None
        except Exception as exc:  # noqa: BLE001 - never die; the poll covers it
            logger.error(
                "sleep failed, polling instead: %s",
                translate(exc) if isinstance(exc, psycopg.Error) else exc,
                extra=self._extra,
            )
            # a failed statement commits nothing, so no mark exists
            self._marked = self._settled = False
            return None
        self._marked = True
        self._settled = bool(rows[0]["settled"])
        if self._settled:
            self._recheck_in = defaults.RECHECK_FIRST
        return self._settled

    def _unmark(self) -> None:
        """``conductor.wake``: drop the worker's marks, if it has any."""
        self._settled = False
        self._recheck_in = defaults.RECHECK_FIRST
        if not self._marked:
            return
        self._marked = False
        try:
            self.link.rows(queries.WAKE, {"worker_id": self.worker_id}, self.stopping)
        except Aborted:
            pass  # stopping: deregistering drops the marks
        except Exception as exc:  # noqa: BLE001 - a stale mark costs only needless notifications
            logger.error("wake failed: %s", translate(exc) if isinstance(exc, psycopg.Error) else exc,
                         extra=self._extra)  # fmt: skip

    def _until_due(self) -> float:
        """How long an idle producer sleeps: until the next due time, at most the poll interval."""
        now = time.monotonic()
        if self._due_stale or (self._due_at is not None and self._due_at <= now):
            self._due_stale = False  # before asking: a notification meanwhile makes it stale again
            self._due_at = self._next_due()
            now = time.monotonic()
        if self._due_at is None:
            return self.poll_interval
        return min(self.poll_interval, max(0.0, self._due_at - now))

    def _next_due(self) -> float | None:
        """The monotonic time (a hair past) the next delayed task of the worker's queues is due; None: none."""
        try:
            rows = self.link.rows(queries.WAKE_IN_DUE, {"queues": self.queues, "kinds": self.kinds}, self.stopping)
        except Aborted:
            return None
        except Exception as exc:  # noqa: BLE001 - the poll covers it
            logger.error("next_due failed: %s", translate(exc) if isinstance(exc, psycopg.Error) else exc,
                         extra=self._extra)  # fmt: skip
            return None
        # due_in counts from the statement's start; counting it from the answer's
        # arrival wakes a round trip late at most, never early: a claim a hair
        # early finds nothing, and next_due then names the task after it
        due_in = rows[0]["due_in"]
        return None if due_in is None else time.monotonic() + max(0.0, due_in) + DUE_SLACK

    def _claim(self, free: int) -> int | None:
        """Claim up to ``free`` tasks and hand them on; how many came (None: stopped; CLAIM_FAILED: an error)."""
        executor = self.executor
        assert executor is not None
        claimed_at = time.monotonic()
        try:
            rows = self.link.rows(self.claim_query, {
                "worker_id": self.worker_id, "queues": self.queues, "max_tasks": free, "lease": self.lease,
                "kinds": self.kinds, "code_versions": self.code_versions,
            }, self.stopping)  # fmt: skip
        except Aborted:
            return None
        except Exception as exc:  # never die; back off and try again
            logger.error("claim failed: %s", translate(exc) if isinstance(exc, psycopg.Error) else exc,
                         extra=self._extra, exc_info=not isinstance(exc, psycopg.Error))  # fmt: skip
            self.stopping.wait(defaults.BACKOFF_MAX)
            return CLAIM_FAILED
        if self.stopping.is_set() and rows:
            # stop() came while claiming: hand these back without running them
            for row in rows:
                executor.hand_back(TaskContext.from_claim(row, self.worker_id))
            return None
        self._count_missed(rows)
        for row in rows:
            executor.submit(TaskContext.from_claim(row, self.worker_id, self.runtime), row.get("timeout"), claimed_at)
        if rows:  # the reaper looks when the first lease ends
            self.on_claimed(claimed_at + min(_leased_for(row, self.lease) for row in rows).total_seconds())
        return len(rows)

    def _count_missed(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """After a claim: count it when the poll woke the worker for work a notification
        should have (see the module doc); a notification that woke it to work ends a streak."""
        by_poll, heard = self._by_poll, self._heard
        self._by_poll = self._heard = False
        if not rows:
            return
        if heard:
            if self.missed_in_a_row >= MISSED_IN_A_ROW:
                logger.info("notifications reach this worker again", extra=self._extra)
            self.missed_in_a_row = 0
            self._warned = False
            return
        if not by_poll:
            return
        late = max(_due_for(row, self.lease) for row in rows)
        if late <= self.missed_slack:
            return
        self.missed_notifications += 1
        self.missed_in_a_row += 1
        self.missed_late = late
        if self.missed_in_a_row >= MISSED_IN_A_ROW and not self._warned:
            self._warned = True
            logger.warning(POOLER_WARNING.format(n=self.missed_in_a_row, late=self.missed_slack), extra=self._extra)

    @property
    def pooler_warning(self) -> str | None:
        """What /health says while the last MISSED_IN_A_ROW claims were woken by the poll for missed work."""
        if self.missed_in_a_row < MISSED_IN_A_ROW:
            return None
        return POOLER_WARNING.format(n=self.missed_in_a_row, late=self.missed_slack)


def _due_for(row: Mapping[str, Any], lease: timedelta) -> float:
    """Seconds a claimed task had been due at its claim (the database's clock: the claim
    leased it until now + lease, or its time limit when shorter)."""
    run_at = row.get("run_at")
    expires = row.get("lease_expires_at")
    if run_at is None or expires is None:
        return 0.0
    return float((expires - _leased_for(row, lease) - run_at).total_seconds())


def _leased_for(row: Mapping[str, Any], lease: timedelta) -> timedelta:
    """How long claim leased a task it answered: the worker's lease, or the task's time
    limit when shorter (claim's rule: no lease runs past claimed_at + timeout)."""
    timeout = row.get("timeout")
    return timeout if timeout is not None and timeout < lease else lease


class Listener:
    """LISTEN conductor on its own link; each notification's queue goes to
    ``notify`` ('' after a reconnect, when some may have been missed). A
    connection silent for LISTEN_PROBE_AFTER seconds is probed, so a dead one
    is noticed; polling covers the gap while it is down."""

    def __init__(self, link: Link, notify: Callable[[str], None], halt: threading.Event) -> None:
        self.link = link
        self.notify = notify
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
            except Exception:  # never die; polling covers the gap
                logger.exception("listener failed", extra=self._extra)
                self.link.close()
                self.halt.wait(defaults.BACKOFF_MAX)
        self.link.close()

    def _listen(self) -> None:
        """Listen until halted (a lost connection raises, for :func:`retry`)."""
        conn = self.link.get()
        conn.execute(queries.LISTEN)
        self.notify("")  # notifications may have been missed while away
        quiet_since = time.monotonic()
        while not self.halt.is_set():
            heard = False
            for note in conn.notifies(timeout=LISTEN_HALT_CHECK):
                heard = True
                self.notify(note.payload)
            now = time.monotonic()
            if heard:
                quiet_since = now
            elif now - quiet_since > LISTEN_PROBE_AFTER:
                conn.execute(queries.PROBE)
                quiet_since = now
