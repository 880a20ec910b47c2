"""The executor: runs the handlers of claimed tasks, within their time limits.

Each claimed task goes to one of ``concurrency`` handler threads through a
``queue.SimpleQueue`` (plain threads, not a ThreadPoolExecutor: its Future per
task, each with a Condition, cost more CPU than the worker's own bookkeeping
for a short task). Its outcome goes to the reporter:

- a return value: its JSON (one that is not JSON fails the task, clearly);
- an exception: a failure with the full traceback (``RetryLater`` asks for
  its retry time, ``NoRetry`` fails the task at once, ``retryable => false``);
- a wait that parked the task (``conductor.suspend`` answered 'waiting') has
  closed the attempt in SQL already: nothing is reported, the slot is free;
- a step refused because the lease was lost or the task cancelled, or a
  handler whose ``ctx.cancelled`` was set (cancelled, lost, released, timed
  out): its outcome is discarded, with a warning;
- a handler whose own transaction completed its task (``ctx.transaction()``
  with ``ctx.complete_in``, :mod:`pyconductor.transaction`): nothing is sent,
  the success is counted (a ``'done'`` report; its return value is dropped);
- a kind without a handler is failed with ``unknown_kind => true`` without
  running. A worker claims only the kinds it has handlers for (or, with the
  registry's fallback, which has one for every kind: ``Registry.handler``), so
  this is a defensive path only.

Time limits. A task claimed with a ``timeout`` has a deadline: the monotonic
time its claim was sent plus the timeout, a hair before the database's own
(``claimed_at + timeout``, past which no heartbeat extends the lease). At the
deadline the executor's watchdog thread sets the handler's ``ctx.cancelled``
(reason 'timed_out', so a cooperative handler stops), reports
``fail(timed_out => true)`` at once (a reason: the database writes the error,
"timed out after N s", and retries it as the kind's policy says), and frees
the slot by starting a replacement handler thread, so the next task runs. A
heartbeat answered 'timed_out' (the database's clock came first) does the same. A task cancelled while it runs
(a heartbeat answered 'cancelled' or 'lost') has its ``ctx.cancelled`` set at
once, and its slot freed the same way when the handler is still running
``cancel_grace`` seconds later (nothing is reported: the database has closed
the attempt already).

**A Python thread cannot be killed.** The thread of a freed slot counts as
*stuck* until its handler returns; its outcome is then discarded and the
thread ends. Meanwhile it keeps what it holds (memory, sockets, the GIL when
it spins in Python code), and the worker reports itself degraded
(``Worker.health()``, ``/health``). Nothing else waits for a handler thread:
the heartbeat, the reports and the claims go on. Where a hard limit matters,
run ``pyconductor worker --processes N``: its children run with
``exit_on_stuck``, so a child with a stuck thread stops claiming, stops
gracefully and exits (code 3), and the supervisor starts a fresh one; the
process is the unit that can be killed.

Log lines. While a handler runs, the logging records it emits are captured
for its attempt (:mod:`pyconductor.tasklog`: the context variable is set on
the handler thread around the call, or inside the asyncio task of an async
handler) and the reporter stores them before the outcome. ``capture_logs``
(default True) and ``capture_level`` (default ``logging.INFO``) are the
knobs; an attempt that reports no outcome (suspended, discarded) or whose
outcome went before its handler ended (timed out, released) sends what it
logged since in a ``'log'`` report.

**``async def`` handlers** (a kind whose handler is a coroutine function,
``inspect.iscoroutinefunction``) do not run on a handler thread: they run as
asyncio tasks on one event loop thread (:mod:`pyconductor.loop`), started
when the first such task arrives and stopped at the worker's stop. Many run
at once on that loop; each holds one slot of ``concurrency`` exactly as a
thread task does (held, running, free slots), and its outcome goes the same
way (result, failure with traceback, ``RetryLater``, suspend, refusals, the
reporter, its listeners and metrics). An asyncio task can be cancelled,
unlike a thread: at its deadline it is cancelled (``Task.cancel()``, so the
handler gets ``CancelledError`` at its next ``await``) and the attempt is
reported timed out at once; a cancel or lost lease (heartbeat) and the
release at stop cancel it too. Its slot is free when it has ended, which for
a handler that lets the cancel through is at once; it counts as *stuck* only
when it is still running ``cancel_grace`` seconds after the cancel (it
catches ``CancelledError`` and goes on, or it blocks the loop), and its slot is
then freed as a thread's is.

**The buffer.** A task claimed while every slot is busy waits in a local
buffer (held: the heartbeat extends its lease) and starts the moment a slot
frees up, on the thread that freed it: no slot waits for a claim's round trip
and commit. Its room (``Ledger.prefetch``, what the producer claims beyond the
free slots) is what the slots are expected to start within
:data:`BUFFER_WINDOW`, from the handlers' mean duration (an exponential
average), at most ``prefetch`` (the Worker's option, default ``concurrency``;
0 turns the buffer off): short tasks get a full buffer, tasks of a second or
more none, so a worker never hoards long tasks that idle workers could run.
A buffered task that has not started :data:`BUFFER_MAX_WAIT` seconds after
its claim (the handlers ran longer than the average said) is handed back
(``conductor.release``: the attempt does not count) and the mean is taken to
be that long (so the buffer does not fill again at once), and so is the whole
buffer at stop (:meth:`Executor.stop_feeding`); a cancel or a lost lease takes
a task out of the buffer. Nothing starts from the buffer while the worker
holds ``3 x concurrency`` results that wait for their report (a stalled
report connection): a buffered task is handed back instead. Async handlers
share the slots and the buffer.

An async handler must not block the loop: a blocking call stops every other
async task of the worker (and their time limits, until it returns). The
context's durable calls (``ctx.step``, ``ctx.spawn``, ``ctx.wait_for_children``,
``ctx.wait_for_event``, ``ctx.sleep``) are synchronous, so call them in a
thread: ``await asyncio.to_thread(ctx.step, "charge", charge)``
(``to_thread`` runs them on the loop's default thread pool; a step's ``fn``
runs there too, so it is a plain function, not a coroutine). Read
``ctx.cancelled`` freely; never call ``ctx.wait_cancelled`` on the loop (use
``asyncio.sleep``: the task is cancelled anyway). A handler that is not a
coroutine function but returns a coroutine (a callable object with an
``async def __call__``) is not recognised: register the coroutine function.
"""

from __future__ import annotations

import collections
import inspect
import logging
import math
import queue as queue_mod
import threading
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from itertools import count
from typing import TYPE_CHECKING

from pyconductor import tasklog, tracing
from pyconductor.context import _Suspended
from pyconductor.errors import NoRetry, RetryLater
from pyconductor.ledger import Ledger, Run, task_extra
from pyconductor.loop import EventLoop
from pyconductor.reporter import Report
from pyconductor.wire import dumps_json

if TYPE_CHECKING:
    from pyconductor.context import TaskContext
    from pyconductor.registry import Registry

__all__ = ["BUFFER_MAX_WAIT", "BUFFER_WINDOW", "Executor"]

logger = logging.getLogger("pyconductor")

BUFFER_WINDOW = 0.05  # seconds: the buffer holds what the slots are expected to start within this long ...
BUFFER_MAX_WAIT = 2.0  # ... and a buffered task that waited this long since its claim is handed back
DURATION_WEIGHT = 0.05  # the weight of each handler's duration in the running mean that sizes the buffer


def _error_text(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__qualname__}: {text}" if text else type(exc).__qualname__


class Executor:
    """Handler threads and their watchdog; see the module doc."""

    def __init__(self, ledger: Ledger, registry: Registry, report: Callable[[Report], None], *, concurrency: int,
                 worker_id: str, cancel_grace: float, on_stuck: Callable[[], None] | None = None,
                 capture_logs: bool = True, capture_level: int = logging.INFO,
                 prefetch: int | None = None) -> None:  # fmt: skip
        self.ledger = ledger
        self.registry = registry
        self.report = report
        self.concurrency = concurrency
        self.worker_id = worker_id
        self.cancel_grace = cancel_grace
        self.on_stuck = on_stuck
        self.capture_logs = capture_logs  # handler log lines per attempt (pyconductor.tasklog)
        self.capture_level = capture_level
        self._attached = False
        # a Run per task; None tells one thread to exit
        self._jobs: queue_mod.SimpleQueue[Run | None] = queue_mod.SimpleQueue()
        self._watch = threading.Condition(ledger.lock)
        self._watch_at = -math.inf  # when the watchdog wakes next (-inf: it is awake and will look)
        self._closing = False
        self._stuck = 0
        self.prefetch = concurrency if prefetch is None else max(0, prefetch)  # the buffer's most room
        self._buffer: collections.deque[Run] = collections.deque()  # claimed, waiting for a slot (ledger.lock)
        self._feeding = True  # False once stopping: nothing more is buffered or started from the buffer
        self._mean_duration: float | None = None  # seconds, the handlers' running mean (None: none ended yet)
        ledger.feed = self._feed
        self._names = count()
        self._watchdog = threading.Thread(target=self._watch_loop, name="pyconductor-watchdog", daemon=True)
        # the kinds whose handler is an async def: they run on the event loop, started by the first one
        self._async_kinds = frozenset(t.kind for t in registry if inspect.iscoroutinefunction(t.fn))
        self._loop = EventLoop()

    @property
    def stuck(self) -> int:
        """Handler threads (or async handlers past the grace of their cancel) whose
        slot was freed and whose handler has not returned."""
        return self._stuck

    def start(self) -> None:
        if self.capture_logs and not self._attached:
            tasklog.attach()
            self._attached = True
        for _ in range(self.concurrency):
            self._add_thread()
        self._watchdog.start()

    def _add_thread(self) -> None:
        threading.Thread(target=self._serve, name=f"pyconductor-task_{next(self._names)}", daemon=True).start()

    # -- what the other services call ----------------------------------------------

    def submit(self, ctx: TaskContext, timeout: timedelta | None, claimed_at: float) -> None:
        """Run a claimed task, or buffer it until a slot is free (claimed_at:
        time.monotonic() when its claim was sent)."""
        task = self.registry.handler(ctx.kind)
        run = Run(ctx, task, None if timeout is None else claimed_at + timeout.total_seconds())
        ledger = self.ledger
        with ledger.lock:
            ledger.stats["claimed"] += 1
            start = (
                task is not None
                and len(ledger.running) < self.concurrency
                and not self._buffer
                and ledger.ran() < ledger.most_ran
            )
            ledger.held[ctx.attempt_id] = ctx
            # stopping (a claim that crossed the stop): what has no slot goes back now,
            # since the buffer starts nothing more and the watchdog ends at stop
            refused = task is not None and not start and not self._feeding
            if start:
                self._occupy(run)
            elif task is not None and not refused:
                run.start_by = (
                    claimed_at + BUFFER_MAX_WAIT
                    if run.deadline is None
                    else min(claimed_at + BUFFER_MAX_WAIT, run.deadline)
                )
                self._buffer.append(run)
                ledger.buffered += 1
                if run.start_by < self._watch_at:
                    self._watch.notify()
        if ctx.attempt > 1 or ctx.recoveries:
            # tries used, as tasks show and the dashboard say it (docs/concepts.md, "Numbering attempts")
            logger.warning("task %d (%s) claimed again: tries used %d of %d, recoveries %d", ctx.task_id, ctx.kind,
                           ctx.attempt, ctx.max_attempts, ctx.recoveries, extra=task_extra(ctx))  # fmt: skip
        if task is None:
            self.report(Report("unknown", ctx, error=f"this worker has handlers for: "
                                                     f"{', '.join(self.registry.kinds) or 'none'}"))  # fmt: skip
            return
        if start:
            self._dispatch(run)
        elif refused:
            self._hand_back_buffered(run)

    def _occupy(self, run: Run) -> None:
        """Give ``run`` a slot (the ledger's lock held)."""
        self.ledger.running[run.ctx.attempt_id] = run
        if run.deadline is not None and run.deadline < self._watch_at:
            self._watch.notify()

    def _dispatch(self, run: Run) -> None:
        """Start a run that has a slot: on a handler thread, or on the event loop."""
        if run.ctx.kind in self._async_kinds:
            self._loop.start(run.ctx.attempt_id, lambda: self._execute_async(run))
        else:
            self._jobs.put(run)

    def _feed(self) -> None:
        """Start buffered runs in the slots that are free."""
        ledger = self.ledger
        if not self._buffer:
            return
        starting: list[Run] = []
        with ledger.lock:
            # (a buffered task waits, and is handed back in time, while results wait for a stalled report)
            while (
                self._buffer
                and self._feeding
                and len(ledger.running) < self.concurrency
                and ledger.ran() < ledger.most_ran
            ):
                run = self._buffer.popleft()
                ledger.buffered -= 1
                self._occupy(run)
                starting.append(run)
        for run in starting:
            self._dispatch(run)

    def _ended(self, seconds: float) -> None:
        """A handler ran for ``seconds``: update the running mean and the buffer's room (the ledger's lock held)."""
        mean = self._mean_duration
        self._size_buffer(seconds if mean is None else mean + DURATION_WEIGHT * (seconds - mean))

    def _size_buffer(self, mean: float) -> None:
        self._mean_duration = mean
        self.ledger.prefetch = (
            0 if not self._feeding else min(self.prefetch, int(self.concurrency * BUFFER_WINDOW / max(mean, 1e-6)))
        )

    def stop_feeding(self) -> None:
        """At stop: start nothing more from the buffer, and hand back what it
        holds and any task claimed from now on that finds no free slot."""
        with self.ledger.lock:
            self._feeding = False
            self.ledger.prefetch = 0
            leftover = list(self._buffer)
            self._buffer.clear()
            self.ledger.buffered = 0
        for run in leftover:
            self._hand_back_buffered(run)

    def _unbuffer(self, attempt_id: int) -> None:
        """Take a run out of the buffer, if it is there (the ledger's lock held)."""
        for run in self._buffer:
            if run.ctx.attempt_id == attempt_id:
                self._buffer.remove(run)
                self.ledger.buffered -= 1
                return

    def _hand_back_buffered(self, run: Run) -> None:
        run.ctx.cancel("released")
        self.report(Report("release", run.ctx))

    def hand_back(self, ctx: TaskContext) -> None:
        """Release a task claimed while the worker was stopping, without running it."""
        with self.ledger.lock:
            self.ledger.held[ctx.attempt_id] = ctx
        self.report(Report("release", ctx))

    def time_out(self, attempt_id: int) -> None:
        """The database says the attempt reached its time limit: the watchdog ends it now."""
        with self.ledger.lock:
            run = self.ledger.running.get(attempt_id)
            # (an async run past its deadline was cancelled and reported already: it keeps its slot till it ends)
            if run is not None and not run.freed and (run.deadline is not None or run.ctx.cancel_reason != "timed_out"):
                run.deadline = -math.inf
                self._watch.notify()

    def cancel(self, ctx: TaskContext, reason: str) -> None:
        """The database no longer lets this worker hold the task ('cancelled',
        'lost'): flag its handler, and free its slot if it still runs after the grace."""
        ctx.cancel(reason)
        with self.ledger.lock:
            run = self.ledger.running.get(ctx.attempt_id)
            if run is None:
                self._unbuffer(ctx.attempt_id)  # it never started: nothing to stop
                return
            if not run.freed and run.grace_until is None:
                run.grace_until = time.monotonic() + self.cancel_grace
                if run.grace_until < self._watch_at:
                    self._watch.notify()
        if ctx.kind in self._async_kinds:
            self._loop.cancel(ctx.attempt_id)

    def release_running(self) -> int:
        """At stop, past the grace: hand back every task still running (its
        handler goes on, its outcome is discarded); how many. Ends the watchdog."""
        self.stop_feeding()
        with self.ledger.lock:
            self._closing = True
            self._watch.notify()
            leftover = [run.ctx for run in self.ledger.running.values()
                        if not run.freed and run.ctx.attempt_id in self.ledger.held]  # fmt: skip
        for ctx in leftover:
            ctx.cancel("released")
            if ctx.kind in self._async_kinds:
                self._loop.cancel(ctx.attempt_id)
            self.report(Report("release", ctx))
        return len(leftover)

    def close(self) -> None:
        """Tell the handler threads to end (one still running ends when its handler returns)."""
        with self.ledger.lock:
            self._closing = True
            self._watch.notify()
        for _ in range(self.concurrency):
            self._jobs.put(None)
        self._loop.close()
        if self._attached:
            self._attached = False
            tasklog.detach()

    # -- handler threads -------------------------------------------------------------

    def _serve(self) -> None:
        # Each freed run got a replacement thread when it was freed; the thread
        # that ends up with it (its handler returned, or it had not started) ends.
        while (run := self._jobs.get()) is not None:
            if run.freed:
                with self.ledger.lock:
                    self._stuck -= 1
                return  # timed out before a thread was free to start it
            try:
                freed = self._execute(run)
            except Exception:  # the thread serves the next task
                logger.exception("task %d (%s): the worker failed around its handler", run.ctx.task_id,
                                 run.ctx.kind, extra=task_extra(run.ctx))  # fmt: skip
                freed = run.freed
            if freed:
                return

    def _execute(self, run: Run) -> bool:
        """Run the handler and queue its report; whether its slot was freed meanwhile."""
        ctx, task = run.ctx, run.task
        assert task is not None
        ledger = self.ledger
        report: Report | None = None
        freed = False
        start = run.started_at = time.perf_counter()
        try:
            if not ctx.cancelled:  # else cancelled or handed back before a thread was free to start it
                # the attempt's span, current in this thread (pyconductor.tracing; nothing without opentelemetry)
                with tracing.attempt(ctx) as span:
                    if self.capture_logs:
                        ctx._log = tasklog.AttemptLog(self.capture_level)
                        token = tasklog.enter(ctx._log)
                        try:
                            result = task.run(ctx.payload, ctx)
                        finally:
                            tasklog.leave(token)
                    else:
                        result = task.run(ctx.payload, ctx)
                    report = self._result_report(ctx, result)
                    if report.what == "fail":
                        span.failed(report.error or "")
        except _Suspended as exc:
            if not ctx.suspended:  # another task's context raised it: a failure of this one
                report = Report("fail", ctx, error=_error_text(exc), traceback=traceback.format_exc())
        except BaseException as exc:  # noqa: BLE001 - the handler's failure is the task's (even SystemExit)
            report = Report("fail", ctx, error=_error_text(exc), traceback=traceback.format_exc(),
                            retry_at=exc.at if isinstance(exc, RetryLater) else None,
                            retryable=not isinstance(exc, NoRetry))  # fmt: skip
        finally:
            ms = (time.perf_counter() - start) * 1000
            with ledger.lock:
                self._ended(ms / 1000)
                if run.freed:
                    self._stuck -= 1
                    freed = True
                else:
                    ledger.running.pop(ctx.attempt_id, None)
                    ledger.settling += 1  # until its outcome is queued (ledger.settled, below)
                    if ctx.suspended or (ctx.cancelled and ctx.cancel_reason != "released"):
                        ledger.held.pop(ctx.attempt_id, None)  # released ones leave after their release
            if not freed:
                self._feed()
                ledger.wake.set()
        if freed:
            logger.warning("task %d (%s): its handler returned after %.1fs, its slot freed before (%s); outcome "
                           "discarded, thread ended", ctx.task_id, ctx.kind, ms / 1000, ctx.cancel_reason,
                           extra=task_extra(ctx, ms))  # fmt: skip
            self._report_log(ctx)
            return True
        try:
            self._settle(ctx, report, ms)
        finally:
            ledger.settled()
        return False

    def _settle(self, ctx: TaskContext, report: Report | None, ms: float) -> None:
        """A returned handler's outcome (its slot not freed before): counted, logged, or queued
        for its report."""
        ledger = self.ledger
        if ctx.completed:
            self._completed(ctx, report, ms)
            return
        if ctx.suspended:
            # suspend closed the attempt in SQL ('suspended'): nothing to report, the slot is free
            ledger.count("suspended")
            logger.debug("task %d (%s) waiting", ctx.task_id, ctx.kind, extra=task_extra(ctx, ms))
            self._report_log(ctx)
            return
        if ctx._refused is not None and ctx.cancel_reason != "released":
            # a step, spawn or wait was refused: the lease was lost or the task cancelled
            ledger.count("refused")
            logger.warning("task %d (%s) %s (a step was refused); its outcome is discarded", ctx.task_id,
                           ctx.kind, ctx._refused, extra=task_extra(ctx, ms))  # fmt: skip
            self._report_log(ctx)
            return
        if ctx.cancelled:
            # cancelled, lost, released or timed out: the database would refuse the report anyway
            ledger.count("discarded")
            logger.warning("task %d (%s) %s; its outcome is discarded", ctx.task_id, ctx.kind,
                           ctx.cancel_reason, extra=task_extra(ctx, ms))  # fmt: skip
            self._report_log(ctx)
            return
        if report is not None:
            report.duration_ms = ms
            self.report(report)

    def _completed(self, ctx: TaskContext, report: Report | None, ms: float) -> None:
        """The handler's own transaction committed the task's completion (pyconductor.transaction):
        nothing is sent; the reporter counts the success (a 'done' report)."""
        if report is not None and report.what == "fail":
            logger.warning("task %d (%s) raised after its transaction completed it; it succeeded: %s", ctx.task_id,
                           ctx.kind, report.error, extra=task_extra(ctx, ms))  # fmt: skip
        self.report(Report("done", ctx, duration_ms=ms))

    @staticmethod
    def _result_report(ctx: TaskContext, result: object) -> Report:
        """The report of a handler's return value: its JSON, or a failure when it is not JSON
        or when the handler swallowed its run's replay mismatch (which fails the task anyway); none
        when its own transaction completed the task (see _completed: complete_in refuses after a
        mismatch, so the two never meet)."""
        if ctx.completed:
            if result is not None:
                logger.warning("task %d (%s) returned a value after its transaction completed it with the result "
                               "given to ctx.complete_in; the value is dropped", ctx.task_id, ctx.kind,
                               extra=task_extra(ctx))  # fmt: skip
            return Report("done", ctx)
        if ctx.mismatch is not None:
            return Report("fail", ctx, error=_error_text(ctx.mismatch), retryable=False)
        try:
            return Report("ok", ctx, result=dumps_json(result))
        except (TypeError, ValueError) as exc:
            return Report(
                "fail", ctx, traceback=traceback.format_exc(),
                error=f"the result of task {ctx.task_id} ({ctx.kind}) is not JSON-serialisable: "
                      f"{_error_text(exc)}; return JSON types (dict, list, str, int, float, bool, None)",
            )  # fmt: skip

    # -- async handlers, on the event loop ---------------------------------------------

    async def _execute_async(self, run: Run) -> None:
        """_execute for an ``async def`` handler, as an asyncio task on the loop.
        Kept apart from _execute so the thread path pays nothing for it."""
        ctx, task = run.ctx, run.task
        assert task is not None
        ledger = self.ledger
        if run.freed:  # stuck before the loop could start it (the loop was blocked)
            with ledger.lock:
                self._stuck -= 1
            return
        report: Report | None = None
        freed = False
        start = run.started_at = time.perf_counter()
        try:
            if not ctx.cancelled:  # else cancelled, timed out or handed back before the loop started it
                if self.capture_logs:  # the variable is this asyncio task's own: nothing to reset
                    ctx._log = tasklog.AttemptLog(self.capture_level)
                    tasklog.enter(ctx._log)
                with tracing.attempt(ctx) as span:  # current in this asyncio task
                    result = await task.run(ctx.payload, ctx)
                    report = self._result_report(ctx, result)
                    if report.what == "fail":
                        span.failed(report.error or "")
        except _Suspended as exc:
            if not ctx.suspended:
                report = Report("fail", ctx, error=_error_text(exc), traceback=traceback.format_exc())
        except BaseException as exc:  # noqa: BLE001 - CancelledError too: ours set ctx.cancelled first
            report = Report("fail", ctx, error=_error_text(exc), traceback=traceback.format_exc(),
                            retry_at=exc.at if isinstance(exc, RetryLater) else None,
                            retryable=not isinstance(exc, NoRetry))  # fmt: skip
        finally:
            ms = (time.perf_counter() - start) * 1000
            timed_out = ctx.cancel_reason == "timed_out"  # and reported by the watchdog (_expired)
            with ledger.lock:
                self._ended(ms / 1000)
                if run.freed:
                    self._stuck -= 1
                    freed = True
                else:
                    ledger.running.pop(ctx.attempt_id, None)
                    ledger.settling += 1  # until its outcome is queued (ledger.settled, below)
                    if ctx.suspended or (ctx.cancelled and ctx.cancel_reason != "released" and not timed_out):
                        ledger.held.pop(ctx.attempt_id, None)  # released and timed-out ones leave when reported
            if not freed:
                self._feed()
                ledger.wake.set()
        if freed:
            logger.warning("task %d (%s): its async handler returned after %.1fs, its slot freed before (%s); "
                           "outcome discarded", ctx.task_id, ctx.kind, ms / 1000, ctx.cancel_reason,
                           extra=task_extra(ctx, ms))  # fmt: skip
            self._report_log(ctx)
            return
        try:
            self._settle_async(ctx, report, ms, timed_out)
        finally:
            ledger.settled()

    def _settle_async(self, ctx: TaskContext, report: Report | None, ms: float, timed_out: bool) -> None:
        """_settle for an ``async def`` handler (one that ran past its time limit was
        reported by the watchdog)."""
        ledger = self.ledger
        if ctx.completed:
            self._completed(ctx, report, ms)
            return
        if ctx.suspended:
            ledger.count("suspended")
            logger.debug("task %d (%s) waiting", ctx.task_id, ctx.kind, extra=task_extra(ctx, ms))
        elif ctx._refused is not None and ctx.cancel_reason != "released":
            ledger.count("refused")
            logger.warning("task %d (%s) %s (a step was refused); its outcome is discarded", ctx.task_id,
                           ctx.kind, ctx._refused, extra=task_extra(ctx, ms))  # fmt: skip
        elif timed_out:
            logger.debug("task %d (%s): its async handler ended after its time limit (cancelled)", ctx.task_id,
                         ctx.kind, extra=task_extra(ctx, ms))  # fmt: skip
        elif ctx.cancelled:
            ledger.count("discarded")
            logger.warning("task %d (%s) %s; its outcome is discarded", ctx.task_id, ctx.kind,
                           ctx.cancel_reason, extra=task_extra(ctx, ms))  # fmt: skip
        elif report is not None:
            report.duration_ms = ms
            self.report(report)
            return
        self._report_log(ctx)

    def _report_log(self, ctx: TaskContext) -> None:
        """Send the log lines of an attempt that reports no outcome (suspended,
        discarded) or whose outcome went before its handler ended (timed out,
        released): what it captured since, if anything."""
        log = ctx._log
        if log is not None and log.pending:
            self.report(Report("log", ctx))

    # -- the watchdog ------------------------------------------------------------------

    def _watch_loop(self) -> None:
        while True:
            with self.ledger.lock:
                while True:
                    if self._closing:
                        return
                    now = time.monotonic()
                    expired: list[Run] = []
                    next_at = math.inf
                    for run in self.ledger.running.values():
                        due = run.due
                        if due is None:
                            continue
                        if due <= now:
                            expired.append(run)
                        elif due < next_at:
                            next_at = due
                    stale = self._stale_buffered(now)
                    for run in self._buffer:
                        next_at = min(next_at, run.start_by or math.inf)
                    if expired or stale:
                        self._watch_at = -math.inf
                        for run in expired:
                            self._free(run, now)
                        break
                    self._watch_at = next_at
                    self._watch.wait(None if next_at == math.inf else next_at - now)
            for run in stale:
                logger.info("task %d (%s) handed back: no slot was free within %.1fs of its claim, or before "
                            "its time limit", run.ctx.task_id, run.ctx.kind, BUFFER_MAX_WAIT,
                            extra=task_extra(run.ctx))  # fmt: skip
                self._hand_back_buffered(run)
            for run in expired:
                self._expired(run, now)
            if expired:
                self._feed()

    def _stale_buffered(self, now: float) -> list[Run]:
        """Take the buffered runs whose start_by passed out of the buffer (the ledger's lock held)."""
        stale = [run for run in self._buffer if (run.start_by or math.inf) <= now]
        if stale:
            kept = [run for run in self._buffer if (run.start_by or math.inf) > now]
            self._buffer.clear()
            self._buffer.extend(kept)
            self.ledger.buffered = len(kept)
            # the slots ran longer than the mean said: take the wait as the mean, or the
            # buffer would claim the tasks again at once and hand them back again
            self._size_buffer(max(self._mean_duration or 0.0, BUFFER_MAX_WAIT))
        return stale

    def _free(self, run: Run, now: float) -> None:
        """Give up the slot of ``run`` (the ledger's lock held): it counts as
        stuck until the thread that has it (or takes it, unstarted) lets it go.
        An async run at its deadline keeps its slot instead: it is cancelled
        (by _expired), and freed as stuck only if it still runs after the grace."""
        if run.deadline is not None and run.deadline <= now:
            run.ctx.cancel("timed_out")  # before its thread can see freed: the reason it then logs
            if run.ctx.kind in self._async_kinds:
                run.deadline = None
                run.grace_until = now + self.cancel_grace
                return
        run.freed = True
        self.ledger.running.pop(run.ctx.attempt_id, None)
        self._stuck += 1
        if not self.ledger.running and not self.ledger.settling:
            self.ledger.idle.notify_all()

    def _expired(self, run: Run, now: float) -> None:
        ctx = run.ctx
        started = run.started_at > 0
        ran = time.perf_counter() - run.started_at if started else 0.0
        is_async = ctx.kind in self._async_kinds
        if is_async and not run.freed:  # at its deadline: cancel it, report now; it frees its slot as it ends
            self.ledger.count("timed_out")
            self.report(Report("fail", ctx, timed_out=True, duration_ms=ran * 1000))
            self._loop.cancel(ctx.attempt_id)
            logger.warning("task %d (%s) timed out; %s", ctx.task_id, ctx.kind,
                           "its asyncio task is cancelled" if started else "it had not started",
                           extra=task_extra(ctx, ran * 1000))  # fmt: skip
            return
        if is_async:
            logger.warning("task %d (%s) %s and its async handler still runs %.1fs after its cancel (it ignores "
                           "the cancel, or blocks the event loop); its slot is freed, it is stuck until it returns",
                           ctx.task_id, ctx.kind, ctx.cancel_reason, self.cancel_grace,
                           extra=task_extra(ctx, ran * 1000))  # fmt: skip
            if started and self.on_stuck is not None:
                self.on_stuck()
            self.ledger.wake.set()
            return
        if run.deadline is not None and run.deadline <= now:
            self.ledger.count("timed_out")
            self.report(Report("fail", ctx, timed_out=True, duration_ms=ran * 1000))
            logger.warning("task %d (%s) timed out; %s", ctx.task_id, ctx.kind,
                           "its slot is freed, its handler thread is stuck until it returns" if started
                           else "it had not started", extra=task_extra(ctx, ran * 1000))  # fmt: skip
        else:
            logger.warning("task %d (%s) %s %.1fs ago and its handler still runs; its slot is freed, its thread "
                           "is stuck until it returns", ctx.task_id, ctx.kind, ctx.cancel_reason, self.cancel_grace,
                           extra=task_extra(ctx, ran * 1000))  # fmt: skip
        self._add_thread()
        if started and self.on_stuck is not None:
            self.on_stuck()
        self.ledger.wake.set()
