"""The reporter: sends the outcomes of held attempts, batched.

Handlers (and the producer, for releases) queue a :class:`Report`; one
thread sends them in order on its own link:

- successes in batches (``conductor.complete_many``, up to ``batch`` results):
  what is queued goes at once when no handler runs, else after ``linger``
  seconds at most, so results finishing together share one call and commit;
- failures one by one with the full traceback (``conductor.fail``; a kind
  without a handler is failed with ``unknown_kind => true``), releases one by
  one (``conductor.release``).

A refusal (the attempt no longer holds the task: its lease was lost, the task
was cancelled) is logged at WARNING and the outcome dropped. A ``'done'``
report (the handler's own transaction completed the task,
:mod:`pyconductor.transaction`) sends nothing: its log lines are saved and its
success counted like the others.

A report never waits long on a task row another session holds (a client's
``cancel()`` or ``emit_event()`` left open in its transaction): complete_many
answers such an attempt ``'locked'`` after 200 ms and stores the rest of the
batch, and a fail or release gives up after :data:`LOCK_TIMEOUT` (55P03). That
report is kept and sent again after :data:`LOCKED_RETRY_FIRST` seconds,
doubling up to :data:`LOCKED_RETRY_MAX`, its attempt still held (and so
heartbeated) meanwhile: nothing is lost, and the reports after it go on. Once
the holder ends, it is stored, or refused as the holder left it (cancelled). One result or
error the server cannot store never costs the rest of the batch theirs: a
result jsonb refuses is sent alone, and failing alone becomes its task's
failure, not retried (running it again would redo its effects for a result
that still cannot be stored). A lost connection is waited out
(:func:`pyconductor.link.retry`) and the batch sent again.

Handler log lines (:mod:`pyconductor.tasklog`) go first: the lines every
attempt of the batch captured (none: no call) in one ``conductor.save_log``
statement, then the outcomes, so a run page that shows an outcome shows its
lines. A ``'log'`` report carries only lines (an attempt that reports no
outcome: suspended, discarded; or lines that came after a time limit's
report). A save_log the database refuses is retried attempt by attempt, and
one that still fails is logged at WARNING: it never costs an outcome. (A
lost connection is waited out as for the outcomes; should the call have
committed before the connection dropped, its lines are stored twice.)

Each outcome the database took is told to the ``listeners`` (``fn(ctx,
outcome, handler_ms)``, outcome 'succeeded', 'retried', 'failed' or
'refused'), on this thread, before the counters count it: what /metrics counts.
"""

from __future__ import annotations

import logging
import queue as queue_mod
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import psycopg
from psycopg.rows import dict_row

from pyconductor import queries, statuses, tasklog
from pyconductor.context import TaskContext
from pyconductor.errors import ConductorError, LeaseLost, NotFound, TaskCancelled, translate
from pyconductor.ledger import Ledger, task_extra
from pyconductor.link import CONNECTION_ERRORS, Aborted, Link
from pyconductor.wire import bigint_array, dumps_json, storable_text, text_array

__all__ = ["LOCKED_RETRY_FIRST", "LOCKED_RETRY_MAX", "LOCK_TIMEOUT", "OutcomeListener", "Report", "Reporter"]

logger = logging.getLogger("pyconductor")

LOCK_TIMEOUT = "500ms"  # how long a fail or release waits for a task row another session holds (then 55P03)
LOCKED_RETRY_FIRST = 0.05  # a report that met a held row is sent again after this, doubling ...
LOCKED_RETRY_MAX = 2.0  # ... up to this, until the holder ends


OutcomeListener = Callable[[TaskContext, str, float | None], None]


@dataclass
class Report:
    """A held attempt's outcome, waiting to be sent."""

    what: str  # 'ok', 'fail', 'unknown', 'release'; 'log': only the attempt's log lines; 'done': completed
    # in the handler's own transaction (pyconductor.transaction): counted as a success, nothing sent
    ctx: TaskContext
    result: str | None = None  # JSON text
    error: str | None = None
    traceback: str | None = None
    duration_ms: float | None = None
    retry_at: datetime | None = None  # the handler asked for this retry time (RetryLater)
    retryable: bool = True  # False: the handler finished but its result cannot be stored
    timed_out: bool = False  # it reached its time limit: the database writes the error (fail's timed_out)
    retry_in: float = 0.0  # met a task row another session holds: the wait before it is sent again (0: not yet)


class _Locked(Exception):
    """A report met a task row another session holds (55P03): send it again later."""


class Reporter:
    """Sends queued reports from one thread; :meth:`close` drains and ends it."""

    def __init__(self, ledger: Ledger, link: Link, listeners: Sequence[OutcomeListener], *,
                 batch: int, linger: float) -> None:  # fmt: skip
        self.ledger = ledger
        self.link = link
        self.listeners = listeners
        self.batch = batch
        self.linger = linger
        self._queue: queue_mod.SimpleQueue[Report] = queue_mod.SimpleQueue()
        self._closing = threading.Event()  # drain what is queued, then end
        self._abort = threading.Event()  # give up retrying a lost connection
        self._extra = {"worker_id": link.worker_id}
        self.thread = threading.Thread(target=self._loop, name="pyconductor-report", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def put(self, report: Report) -> None:
        self._queue.put(report)

    def close(self, timeout: float) -> bool:
        """Send what is queued and end, within ``timeout`` seconds; whether it
        did. Past that, what is still queued is dropped (left to the leases)."""
        self._closing.set()
        self.thread.join(timeout=max(0.0, timeout))
        if self.thread.is_alive():
            self._abort.set()
            self.thread.join(timeout=0.2)
            return False
        return True

    def _loop(self) -> None:
        later: list[tuple[float, Report]] = []  # reports that met a held row, and when to send them again
        while True:
            wait = 0.05
            if later:
                wait = min(wait, max(0.0, min(due for due, _ in later) - time.monotonic()))
            try:
                batch = [self._queue.get(timeout=wait)]
            except queue_mod.Empty:
                batch = []
            now = time.monotonic()
            batch += [r for due, r in later if due <= now]
            later = [(due, r) for due, r in later if due > now]
            if not batch:
                if self._abort.is_set() and later:
                    logger.warning("dropping %d unreported outcome(s): their tasks' rows stayed held by other "
                                   "sessions", len(later), extra=self._extra)  # fmt: skip
                    self.ledger.reported([r.ctx.attempt_id for _, r in later if r.what != "log"])
                    return
                if self._closing.is_set() and not later:
                    return
                continue
            deadline = time.monotonic() + self.linger
            # company enough: half as many results as slots (then no more waiting)
            enough = min(self.batch, max(1, self.ledger.concurrency // 2))
            while len(batch) < enough:
                try:
                    batch.append(self._queue.get_nowait())
                    continue
                except queue_mod.Empty:
                    pass
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self.ledger.running:
                    break  # no running handler can give it company: waiting only delays the next claim
                try:
                    batch.append(self._queue.get(timeout=remaining))
                except queue_mod.Empty:
                    break
            while len(batch) < self.batch:  # what else is queued goes too
                try:
                    batch.append(self._queue.get_nowait())
                except queue_mod.Empty:
                    break
            deferred: list[Report] = []
            try:
                deferred = self.send(batch) or []
            except Aborted:
                logger.warning("dropping %d unreported outcome(s): database unreachable", len(batch),
                               extra=self._extra)  # fmt: skip
            except Exception:  # never die
                logger.exception("reporting %d outcome(s) failed", len(batch), extra=self._extra)
            finally:
                kept = {id(r) for r in deferred}
                self.ledger.reported([r.ctx.attempt_id for r in batch if r.what != "log" and id(r) not in kept])
            for r in deferred:
                r.retry_in = min(2 * r.retry_in, LOCKED_RETRY_MAX) if r.retry_in else LOCKED_RETRY_FIRST
                later.append((time.monotonic() + r.retry_in, r))

    def send(self, batch: list[Report]) -> list[Report]:
        """Send one batch: the log lines, the results together, then the rest one
        by one; answers the reports that met a task row another session holds
        (not sent: send them again later, see the module doc)."""
        self._save_logs(batch)
        for r in batch:
            if r.what == "done":  # its own transaction stored it: a success to count, nothing to send
                self._outcome(r, "succeeded")
                self.ledger.count("succeeded")
        others = [r for r in batch if r.what not in ("ok", "log", "done")]
        oks = [r for r in batch if r.what == "ok"]
        deferred: list[Report] = []
        if oks:
            failures, deferred = self._send_results(oks)
            others += failures
        for r in others:
            try:
                self._send_one(r)
            except _Locked:
                deferred.append(r)
                logger.info("%s of task %d (%s) waits: another session holds the task's row; sending it again later",
                            r.what, r.ctx.task_id, r.ctx.kind, extra=task_extra(r.ctx, r.duration_ms))  # fmt: skip
            except (LeaseLost, TaskCancelled, NotFound) as exc:
                if r.what == "fail":
                    self._outcome(r, "refused")
                self.ledger.count("refused")
                logger.warning("%s of task %d (%s) refused: %s", r.what, r.ctx.task_id, r.ctx.kind, exc,
                               extra=task_extra(r.ctx, r.duration_ms))  # fmt: skip
            except ConductorError as exc:
                logger.error("%s of task %d (%s) failed: %s", r.what, r.ctx.task_id, r.ctx.kind, exc,
                             extra=task_extra(r.ctx, r.duration_ms))  # fmt: skip
            except psycopg.Error as exc:
                if isinstance(exc, CONNECTION_ERRORS):
                    raise
                # one report the server cannot take never costs the others theirs
                logger.error("%s of task %d (%s) could not be sent: %s", r.what, r.ctx.task_id, r.ctx.kind,
                             " ".join(str(exc).split()), extra=task_extra(r.ctx, r.duration_ms))  # fmt: skip
        return deferred

    def _save_logs(self, batch: list[Report]) -> None:
        """Store what the batch's attempts captured and did not send yet (see the module doc)."""
        taken: list[tuple[Report, tuple[list[dict[str, str]], int]]] = []
        for r in batch:
            log = r.ctx._log
            if log is not None and log.pending:
                lines = log.take()
                if lines is not None:
                    taken.append((r, lines))
        if not taken:
            return
        if len(taken) > 1:
            try:
                self.link.rows(queries.SAVE_LOGS, {
                    "attempt_ids": bigint_array(r.ctx.attempt_id for r, _ in taken),
                    "lines": text_array(dumps_json(lines) for _, (lines, _) in taken),
                    "dropped": bigint_array(dropped for _, (_, dropped) in taken),
                }, self._abort)  # fmt: skip
                return
            except psycopg.Error:
                pass  # one the database refuses never costs the others their lines: one by one
        for r, lines in taken:
            try:
                self.link.rows(queries.SAVE_LOG, tasklog.save_params(r.ctx.attempt_id, lines), self._abort)
            except Aborted:
                raise
            except Exception as exc:  # noqa: BLE001 - the lines are informational: never lose an outcome for them
                logger.warning("the log lines of task %d (%s) were not saved: %s", r.ctx.task_id, r.ctx.kind,
                               " ".join(str(exc).split()), extra=task_extra(r.ctx, r.duration_ms))  # fmt: skip

    def _send_results(self, oks: list[Report]) -> tuple[list[Report], list[Report]]:
        """Store the results of ``oks`` with complete_many; answer the failure
        reports of those the server cannot store, and those that met a task row
        another session holds ('locked': send them again later; see the module doc)."""
        try:
            rows = self._rows(queries.COMPLETE_MANY, {
                "attempt_ids": bigint_array(r.ctx.attempt_id for r in oks),
                "results": text_array(cast(str, r.result) for r in oks),
            })  # fmt: skip
        except _Locked:
            return [], list(oks)  # a lock other than the tasks' rows, held over complete_many's lock_timeout
        except (psycopg.DataError, psycopg.errors.ProgramLimitExceeded) as exc:
            if len(oks) > 1:
                failures: list[Report] = []
                deferred: list[Report] = []
                for r in oks:
                    bad, held = self._send_results([r])
                    failures += bad
                    deferred += held
                return failures, deferred
            r = oks[0]
            return [Report("fail", r.ctx, duration_ms=r.duration_ms, retryable=False,
                           error=f"result not storable: {' '.join(str(exc).split())} ({exc.sqlstate}); "
                                 "return JSON that PostgreSQL's jsonb accepts "
                                 "(no NUL characters, valid UTF-8)")], []  # fmt: skip
        # 'finished': an earlier sending of this batch was stored before the
        # connection dropped, so the result is in. 'failed': the database
        # refused to store the result (over conductor.settings.max_result_bytes)
        # and failed the task, its error recorded.
        # 'locked': another session holds the task's row (or its parent's): nothing
        # changed; the result is kept and sent again later.
        states = {row["attempt_id"]: row["state"] for row in rows if row["state"] != "finished"}
        succeeded = 0
        deferred = []
        log_each = logger.isEnabledFor(logging.DEBUG)
        for r in oks:
            state = states.get(r.ctx.attempt_id)
            if state == "locked":
                deferred.append(r)
                logger.info("result of task %d (%s) waits: another session holds the task's row; sending it again "
                            "later", r.ctx.task_id, r.ctx.kind, extra=task_extra(r.ctx, r.duration_ms))  # fmt: skip
            elif state is None:
                self._outcome(r, "succeeded")
                succeeded += 1
                if log_each:
                    logger.debug("task %d (%s) succeeded", r.ctx.task_id, r.ctx.kind,
                                 extra=task_extra(r.ctx, r.duration_ms))  # fmt: skip
            elif state == "failed":
                self._outcome(r, "failed")
                self.ledger.count("failed")
                logger.error("task %d (%s) failed: its result was not storable (%d bytes of JSON; the task's error "
                             "says why)", r.ctx.task_id, r.ctx.kind, len(r.result or ""),
                             extra=task_extra(r.ctx, r.duration_ms))  # fmt: skip
            else:
                r.ctx.cancel(state)
                self._outcome(r, "refused")
                self.ledger.count("refused")
                logger.warning("result of task %d (%s) refused: %s; discarded", r.ctx.task_id, r.ctx.kind,
                               state, extra=task_extra(r.ctx, r.duration_ms))  # fmt: skip
        self.ledger.count("succeeded", succeeded)
        return [], deferred

    def _rows(self, query: str, params: dict[str, object]) -> list[dict[str, Any]]:
        """:meth:`Link.rows`, except that 55P03 (a lock another session holds) raises
        :class:`_Locked` instead of being retried as a lost connection (psycopg calls it an
        OperationalError)."""

        def run(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
            try:
                with conn.cursor(row_factory=dict_row) as cur:
                    cur.execute(query, params)
                    return cur.fetchall() if cur.description else []
            except psycopg.errors.LockNotAvailable as exc:
                raise _Locked(str(exc)) from exc

        return self.link.call(run, self._abort)

    def _outcome(self, r: Report, outcome: str) -> None:
        for listener in self.listeners:
            try:
                listener(r.ctx, outcome, r.duration_ms)
            except Exception:  # a listener never stops the reporting
                logger.exception("outcome listener %r failed", listener, extra=self._extra)

    def _send_one(self, r: Report) -> None:
        def fetch(query: str, params: dict[str, object]) -> list[dict[str, Any]]:
            try:
                return self._rows(query + queries.BOUNDED_WAIT, {**params, "lock_timeout": LOCK_TIMEOUT})
            except psycopg.Error as exc:
                new = translate(exc)
                if new is exc:
                    raise
                raise new from exc

        if r.what == "release":
            fetch(queries.RELEASE, {"attempt_id": r.ctx.attempt_id})
            self.ledger.count("released")
            logger.info("task %d (%s) released", r.ctx.task_id, r.ctx.kind, extra=task_extra(r.ctx))
            return
        unknown = r.what == "unknown"
        status = fetch(queries.FAIL, {
            "attempt_id": r.ctx.attempt_id, "error": storable_text(r.error), "retry_at": r.retry_at,
            "traceback": storable_text(r.traceback), "unknown_kind": unknown, "retryable": r.retryable,
            "timed_out": r.timed_out,
        })[0]["fail"]  # fmt: skip
        if not unknown:
            self._outcome(r, "retried" if status == statuses.QUEUED else "failed")
        self.ledger.count("unknown" if unknown else "failed")
        why = "no handler for this kind" if unknown else "timed out" if r.timed_out else r.error
        if status == statuses.QUEUED:
            logger.warning("task %d (%s) failed, will retry: %s", r.ctx.task_id, r.ctx.kind, why,
                           extra=task_extra(r.ctx, r.duration_ms))  # fmt: skip
        else:
            logger.error("task %d (%s) %s: %s", r.ctx.task_id, r.ctx.kind, status, why,
                         extra=task_extra(r.ctx, r.duration_ms))  # fmt: skip
