"""TaskContext: what a running handler may know about its claim, and its durable steps.

A handler written as ``def handler(payload, ctx)`` receives one. Its
``cancelled`` flag is set by the worker when a heartbeat answers that the task
was cancelled or that the lease was lost, when the task's timeout passes (or
when a shutdown hands the task back), so a long handler can stop early with
``ctx.raise_if_cancelled()``.

Durable runs (every decision is SQL's; the context only names the checkpoints
and calls ``conductor.save_step`` / ``spawn`` / ``suspend``):

- ``ctx.step(name, fn)``: the checkpointed result when the step already finished
  (``claim`` returns the task's steps), else ``fn()``, checkpointed, returned.
- ``ctx.spawn(kind, payload, **options)``: a child task, once per step name.
- ``ctx.wait_for_children(mode, timeout)``, ``ctx.wait_for_event(name, timeout)``,
  ``ctx.sleep(seconds)``: the outcome when it needs no waiting; otherwise the
  task is parked in SQL (``waiting``, its worker slot freed) and the handler is
  stopped by a private control-flow exception (a ``BaseException``, so a
  handler's ``except Exception`` does not swallow it). Woken, the task is queued
  again and its handler runs from the top, skipping the finished steps.

- ``ctx.publish_state(value)``: the run's current state for a client's
  ``Conductor.run_state`` (``conductor.set_run_state``); not a checkpoint.
- ``ctx.wait_for_update(name)`` / ``ctx.reply(update, value)``: the next update
  a client sent (``Conductor.send_update``), waited for as an event is, and
  the run's answer (``conductor.wait_update`` / ``reply_update``).

Checkpoint names: a base name used more than once in one execution is numbered
('charge', 'charge#2', ...), counted as the handler runs, one counter per base
name shared by step/spawn/wait/patched (spawn uses 'spawn:<kind>', waits
'children', 'event:<name>', 'update:<name>', 'sleep', patch markers
'patch:<marker>'). A replay
therefore asks for the same names in the same order: keep the calls
deterministic (no step inside a branch on the clock or on randomness that is
not itself a step's result).

Replay check (docs/protocol.md, "Replaying a run"; the Node worker keeps the
same rule): ``claim`` answers the recorded steps' names in the order they were
saved (``step_order``). While recorded names remain, each checkpoint the
handler asks for must be the next of them: the recorded result is returned
without running anything; any other name raises ReplayMismatch (QC211, a
NoRetry: the task fails at once, naming both steps) before anything runs. Once
every recorded name was asked for, checkpoints run and are saved as new.
``ctx.patched(marker)`` is how a deploy changes a handler under waiting runs:
True (and checkpointed) where the run has nothing left to replay, True where
it replays the marker, False where the run recorded another step there (it
passed this point on code without the marker). ``ctx.code_version`` is the
version of the code the run started on (the worker's ``code_version`` at its
first claim; None when none was declared).

Results and payloads must be JSON; a step returning anything else raises
TypeError in the handler.

The handler's own transaction (:mod:`pyconductor.transaction`):
``with ctx.transaction() as conn:`` (``async with`` in an async handler), with
``ctx.complete_in(conn, result)``, commits the handler's writes and the task's
success together; ``ctx.step(name, fn, conn=conn)`` checkpoints a step in it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pyconductor import queries, tracing
from pyconductor.errors import LeaseLost, NotFound, ReplayMismatch, TaskCancelled
from pyconductor.wire import dumps_json, interval_text, timestamp_text

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    import psycopg

    from pyconductor.profile import ConnectionProfile
    from pyconductor.tasklog import AttemptLog
    from pyconductor.transaction import HandlerTransaction

__all__ = ["EventTimeout", "TaskContext", "Update", "UpdateTimeout"]

T = TypeVar("T")

CHILD_MODES = ("all", "any")


class UpdateTimeout(TimeoutError):
    """``ctx.wait_for_update`` timed out before an update came (checkpointed: a
    resumed run raises it again at the same place; the update, when it comes,
    goes to the run's next wait for it). ``name`` is the update's name."""

    def __init__(self, name: str, task_id: int | None = None) -> None:
        super().__init__(f"no update {name!r} came before the wait's timeout"
                         + (f" (task {task_id})" if task_id is not None else ""))  # fmt: skip
        self.name = name
        self.task_id = task_id


class EventTimeout(TimeoutError):
    """``ctx.wait_for_event`` timed out before the event was emitted.

    The timeout itself is checkpointed, so a resumed run raises it again at the
    same place. ``event`` is the event's name."""

    def __init__(self, event: str, task_id: int | None = None) -> None:
        super().__init__(f"event {event!r} was not emitted before the wait's timeout"
                         + (f" (task {task_id})" if task_id is not None else ""))  # fmt: skip
        self.event = event
        self.task_id = task_id


@dataclass(frozen=True)
class Update:
    """An update a run received (``ctx.wait_for_update``): its id (what
    ``ctx.reply`` answers), name and payload."""

    id: int
    name: str
    payload: Any


class _Suspended(BaseException):  # control flow, not an error
    """The task is parked in SQL (its attempt closed 'suspended'): stop the handler.

    Private. The worker catches it and reports nothing else for the attempt."""


class _Runtime(Protocol):
    """What the worker gives a context for its SQL calls."""

    dsn: str
    profile: ConnectionProfile  # how the DSN reaches PostgreSQL (a pooler shares server sessions)

    def connection(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        """A connection of the handlers' pool, for a handler's own transaction."""

    def ctx_rows(self, ctx: TaskContext, query: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Run one statement (autocommit), Conductor errors mapped; retried on a lost connection."""

    def spawn_defaults(self, kind: str) -> dict[str, Any]:
        """The enqueue defaults registered for ``kind`` (queue, priority, ...)."""

    def waiting(self, ctx: TaskContext) -> None:
        """A wait was parked: the reaper should look at next_wake again."""


_CANCEL_LOCK = threading.Lock()


@dataclass(eq=False)
class TaskContext:
    """One claim of one task, as the handler sees it.

    ``attempt_id`` is the fencing token of the claim; ``attempt`` counts the
    attempts that count against ``max_attempts`` (1 for the first run).
    ``steps`` holds the task's checkpoints ({name: result}) as claimed, updated
    as the handler checkpoints more.
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
    steps: dict[str, Any] = field(default_factory=dict)
    # the W3C trace context its enqueuer stored (pyconductor.tracing); None: none
    traceparent: str | None = None
    # the code version the run started on (claim's code_version); None: none recorded
    code_version: str | None = None
    # the recorded steps' names in saved order (claim's step_order), replayed in that order
    step_order: list[str] = field(default_factory=list)
    # Set by cancel(); the Event exists only once a handler waits on it
    # (wait_cancelled): making one per claimed task was 14 % of a busy
    # worker's CPU (py-spy). _CANCEL_LOCK orders its creation against cancel().
    _cancelled: bool = field(default=False, repr=False)
    _cancel_event: threading.Event | None = field(default=None, repr=False)
    _reason: str | None = field(default=None, repr=False)
    _runtime: _Runtime | None = field(default=None, repr=False)
    _counts: dict[str, int] = field(default_factory=dict, repr=False)
    _replayed: int = field(default=0, repr=False)  # how many of step_order the handler asked for
    mismatch: ReplayMismatch | None = field(default=None, repr=False)
    """The run's replay mismatch once raised: the task fails with it even if the handler caught it."""
    _suspended: bool = field(default=False, repr=False)
    _refused: str | None = field(default=None, repr=False)
    # the log lines its handler emitted, not yet sent (pyconductor.tasklog); None: not captured
    _log: AttemptLog | None = field(default=None, repr=False)
    # the open ctx.transaction() block, if any; True once one committed the task's completion
    _transaction: HandlerTransaction | None = field(default=None, repr=False)
    _completed: bool = field(default=False, repr=False)

    @classmethod
    def from_claim(cls, row: dict[str, Any], worker_id: str | None = None,
                   runtime: _Runtime | None = None) -> TaskContext:  # fmt: skip
        """Build from a row of ``conductor.claim`` (a dict)."""
        return cls(
            task_id=row["task_id"], attempt_id=row["attempt_id"], attempt=row["attempt"],
            kind=row["kind"], queue=row["queue"], payload=row["payload"],
            priority=row.get("priority", 0), max_attempts=row.get("max_attempts", 1),
            recoveries=row.get("recoveries", 0), parent_id=row.get("parent_id"),
            root_id=row.get("root_id"), lease_expires_at=row.get("lease_expires_at"),
            worker_id=worker_id, steps=dict(row.get("steps") or {}), traceparent=row.get("traceparent"),
            code_version=row.get("code_version"), step_order=list(row.get("step_order") or []),
            _runtime=runtime,
        )  # fmt: skip

    # -- cancellation ------------------------------------------------------------

    @property
    def cancelled(self) -> bool:
        """True once the task was cancelled, its lease lost, or the worker handed it back."""
        return self._cancelled

    @property
    def cancel_reason(self) -> str | None:
        """Why ``cancelled`` is set: 'cancelled', 'lost', 'released' or 'timed_out'
        (the task's timeout passed); None while it is not."""
        return self._reason

    def cancel(self, reason: str) -> None:
        """Set ``cancelled`` (the worker calls this; the first reason given sticks)."""
        with _CANCEL_LOCK:
            if self._reason is None:
                self._reason = reason
            self._cancelled = True
            event = self._cancel_event
        if event is not None:
            event.set()

    def wait_cancelled(self, timeout: float | None = None) -> bool:
        """Sleep up to ``timeout`` seconds, waking early when cancelled; returns ``cancelled``."""
        with _CANCEL_LOCK:
            if self._cancelled:
                return True
            if self._cancel_event is None:
                self._cancel_event = threading.Event()
            event = self._cancel_event
        return event.wait(timeout)

    def raise_if_cancelled(self) -> None:
        """Raise TaskCancelledError when ``cancelled`` is set; otherwise do nothing."""
        if self._cancelled:
            raise TaskCancelled(
                f"task {self.task_id} ({self.kind}) attempt {self.attempt_id}: {self._reason or 'cancelled'}"
            )

    # -- durable steps -------------------------------------------------------------

    @property
    def suspended(self) -> bool:
        """True once a wait parked the task (the handler is being stopped)."""
        return self._suspended

    def _next_name(self, base: str) -> str:
        n = self._counts.get(base, 0) + 1
        self._counts[base] = n
        return base if n == 1 else f"{base}#{n}"

    @property
    def replaying(self) -> bool:
        """True while recorded steps remain that the handler has not asked for yet."""
        return self._replayed < len(self.step_order)

    def _replay(self, key: str) -> bool:
        """The replay rule (module doc): True when ``key`` is the next recorded
        step (its result is in ``steps``), False when nothing is left to replay;
        ReplayMismatch when another step was recorded here."""
        if self.mismatch is not None:
            raise self.mismatch  # nothing runs after a mismatch, even if the handler caught it
        if not self.step_order:
            return key in self.steps  # no order given (a context built by hand): by name
        if not self.replaying:
            return False
        expected = self.step_order[self._replayed]
        if key != expected:
            position = self._replayed + 1
            self.mismatch = ReplayMismatch(
                f"replay mismatch in task {self.task_id} ({self.kind}): step {position} of the run is "
                f"{expected!r}, the handler asks for {key!r} (recorded under code version "
                f"{self.code_version or 'none'}); the handler changed under the run: keep the old path "
                f"behind ctx.patched(), or let a worker that still runs the old code finish it",
                task_id=self.task_id, position=position, expected=expected, asked=key,
            )  # fmt: skip
            raise self.mismatch
        self._replayed += 1
        return True

    def _note_refusal(self, exc: BaseException) -> None:
        """A call about this claim was refused (LeaseLost, TaskCancelled, NotFound): the
        worker discards the attempt's outcome."""
        if isinstance(exc, (LeaseLost, NotFound)):
            self._refused = "lost"
            self.cancel("lost")
        elif isinstance(exc, TaskCancelled):
            self._refused = "cancelled"
            self.cancel("cancelled")

    def _call(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        if self._suspended:
            raise _Suspended(f"task {self.task_id} is waiting")
        if self._runtime is None:
            raise RuntimeError("this TaskContext has no database: durable steps run under a Worker")
        try:
            return self._runtime.ctx_rows(self, query, params)
        except (LeaseLost, TaskCancelled, NotFound) as exc:
            self._note_refusal(exc)
            raise

    def publish_state(self, value: Any) -> None:
        """Publish ``value`` (JSON) as the run's current state, replacing the last
        one: a client reads it with ``Conductor.run_state(task_id)`` while the run
        runs, waits or after it ended (``conductor.set_run_state``, fenced by this
        attempt as a step is). Not a step: a replay publishes again. Raises
        LeaseLost / TaskCancelled when the task is no longer held, TypeError for
        a value that is not JSON."""
        try:
            body = dumps_json(value)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"the state of task {self.task_id} is not JSON: {exc}") from exc
        self._call(queries.SET_RUN_STATE, {"attempt_id": self.attempt_id, "state": body})

    def wait_for_update(self, name: str, timeout: float | timedelta | None = None) -> Update:
        """The run's next update ``name`` (``Conductor.send_update``), sent
        before or after this call, in the order sent: the task waits without a
        worker slot until it comes (``conductor.wait_update``; step
        'update:<name>', numbered), or until ``timeout`` seconds: then
        UpdateTimeout. A replay gets the same update. Answer it with
        :meth:`reply`."""
        key = self._next_name(f"update:{name}")
        if self._replay(key):
            outcome = self.steps[key]
        else:
            rows = self._call(queries.WAIT_UPDATE, {"attempt_id": self.attempt_id, "step": key, "name": name,
                                                    "timeout": interval_text(timeout)})  # fmt: skip
            if rows[0]["state"] == "waiting":
                self._suspended = True
                if self._runtime is not None:
                    self._runtime.waiting(self)
                raise _Suspended(f"task {self.task_id} waits (update {name!r})")
            outcome = self.steps[key] = rows[0]["result"]
        if outcome.get("timed_out"):
            raise UpdateTimeout(name, self.task_id)
        sent = outcome["payload"]
        return Update(id=int(sent["update_id"]), name=sent["name"], payload=sent["payload"])

    def reply(self, update: Update | int, value: Any) -> Any:
        """Answer an update of this run (from :meth:`wait_for_update`) with
        ``value`` (JSON); returns the reply stored: the first one given, so a
        replay does not answer twice (``conductor.reply_update``)."""
        update_id = update.id if isinstance(update, Update) else int(update)
        try:
            body = dumps_json(value)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"the reply to update {update_id} is not JSON: {exc}") from exc
        rows = self._call(queries.REPLY_UPDATE, {"attempt_id": self.attempt_id, "update_id": update_id, "reply": body})
        return rows[0]["reply"]

    def dependencies(self) -> dict[str, Any]:
        """The outcomes of this task's dependencies in its graph (docs/graphs.md), by
        name: {name: {"task_id", "status", "result", "error"}}; {} for a task in no
        graph or without dependencies. Read from the database at each call
        (``conductor.dependency_results``); a released member's are all finished."""
        rows = self._call(queries.DEPENDENCY_RESULTS, {"task_id": self.task_id})
        results: dict[str, Any] = rows[0]["results"] or {}
        return results

    # -- the handler's own transaction ---------------------------------------------------

    @property
    def completed(self) -> bool:
        """True once a ``ctx.transaction()`` block committed the task's completion."""
        return self._completed

    def transaction(self) -> HandlerTransaction:
        """A transaction of the handler's own, for ``with`` (a psycopg Connection) or
        ``async with`` (a psycopg AsyncConnection), READ COMMITTED. Its clean exit
        commits; an exception leaving it rolls everything back. With
        :meth:`complete_in` inside, the task's completion commits with the writes
        (docs/transactions.md)."""
        from pyconductor.transaction import HandlerTransaction

        return HandlerTransaction(self, self._runtime)

    def complete_in(self, conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any], result: Any = None) -> None:
        """Complete the task with ``result`` (JSON) when the open ``ctx.transaction()``
        block whose connection is ``conn`` commits: the completion is sent on
        ``conn`` at the block's clean exit, before its COMMIT. Once per attempt
        (RuntimeError otherwise); the handler's return value is then ignored.
        Refusals raise at the block's exit: LeaseLost, TaskCancelled; after a replay
        mismatch, ReplayMismatch at once."""
        if self.mismatch is not None:
            raise self.mismatch  # a run whose handler changed under it fails, never completes
        tx = self._transaction
        if tx is None:
            raise RuntimeError("complete_in needs an open ctx.transaction() block")
        tx.complete_with(conn, result)

    def step(self, name: str, fn: Callable[[], T], *, conn: psycopg.Connection[Any] | None = None) -> T:
        """Run ``fn()`` once for the run: the stored result when step ``name``
        (numbered 'name#2', ... when used again in this execution) already
        finished, else ``fn()``'s result, checkpointed (``conductor.save_step``)
        and returned as stored. The result must be JSON (TypeError otherwise).
        Raises LeaseLost / TaskCancelled when the task is no longer held.
        ``conn``: the connection of the open (sync) ``ctx.transaction()`` block;
        the checkpoint is then saved in that transaction, so it commits with the
        writes ``fn`` made on ``conn``, or not at all."""
        tx = None
        if conn is not None:
            tx = self._transaction
            if tx is None or conn is not tx.conn or not tx.sync:
                raise ValueError("step(conn=...) needs the connection of the open (sync) ctx.transaction() block")
        key = self._next_name(name)
        if self._replay(key):
            # the stored JSON of what fn returned (as stored: a tuple comes back a list)
            done: T = self.steps[key]
            return done
        if self._suspended:
            raise _Suspended(f"task {self.task_id} is waiting")
        self.raise_if_cancelled()
        # a step that runs is a span of its own (pyconductor.tracing; nothing without opentelemetry)
        return tracing.step(self, key, lambda: self._run_step(key, fn, tx))

    def _run_step(self, key: str, fn: Callable[[], T], tx: HandlerTransaction | None = None) -> T:
        value = fn()
        try:
            body = dumps_json(value)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"step {key!r} of task {self.task_id} ({self.kind}) returned {type(value).__name__}, "
                f"which is not JSON ({exc}); return dict, list, str, int, float, bool or None"
            ) from exc
        params = {"attempt_id": self.attempt_id, "name": key, "result": body}
        stored = self._call(queries.SAVE_STEP, params) if tx is None else tx.save_step(params)
        result: T = stored[0]["result"]  # as stored, as above
        self.steps[key] = result
        if tx is not None:
            tx.steps.append(key)  # forgotten again should the transaction roll back
        return result

    def spawn(self, kind: str, payload: Any = None, **options: Any) -> int:
        """Enqueue a child task (same run, ``parent_id`` = this task) and return
        its id; a replay gets the same child, never a second one (step
        'spawn:<kind>', numbered). ``options``: queue, priority, run_at,
        max_attempts, dedupe_key, concurrency_key, max_recoveries, concurrency_limit, expires_in
        (seconds or a timedelta: how long after it is due the child may wait
        for its first start, then it ends 'expired'), rate_key (the child's key
        under per-key rate limits; never the kind's); those left out take the
        kind's registered defaults, else the database's.
        ``traceparent`` (W3C) defaults to the current span's (pyconductor.tracing).
        With a dedupe_key, the dedupe options of :meth:`Conductor.enqueue
        <pyconductor.client.Conductor.enqueue>` (dedupe_window, dedupe_states,
        on_duplicate, debounce, debounce_max; docs/uniqueness.md)."""
        unknown = set(options) - set(queries.SPAWN_OPTIONS)
        if unknown:
            raise TypeError(f"unknown spawn option(s): {', '.join(sorted(unknown))}")
        key = self._next_name(f"spawn:{kind}")
        done = self.steps.get(key) if self._replay(key) else None
        if isinstance(done, dict) and "task_id" in done:
            return int(done["task_id"])
        merged = dict(self._runtime.spawn_defaults(kind)) if self._runtime is not None else {}
        merged.update({k: v for k, v in options.items() if v is not None})
        if merged.get("traceparent") is None:  # the child continues the span that spawns it
            merged["traceparent"] = tracing.current_traceparent()
        if merged.get("run_at") is not None:
            merged["run_at"] = timestamp_text(merged["run_at"])
        for name in ("dedupe_window", "debounce", "debounce_max"):
            if merged.get(name) is not None:
                merged[name] = interval_text(merged[name])
        if merged.get("dedupe_states") is not None:
            merged["dedupe_states"] = [str(status) for status in merged["dedupe_states"]]
        if merged.get("expires_in") is not None:
            merged["expires_in"] = interval_text(merged["expires_in"])
        try:
            body = dumps_json({} if payload is None else payload)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"the payload of child {kind!r} is not JSON: {exc}") from exc
        # only the options given are named, so the others take spawn's own defaults
        given = [opt for opt in queries.SPAWN_OPTIONS if merged.get(opt) is not None]
        query = queries.SPAWN.format(options="".join(", " + queries.SPAWN_OPTIONS[opt] for opt in given))
        params = {opt: merged[opt] for opt in given}
        params.update(attempt_id=self.attempt_id, step=key, kind=kind, payload=body)
        child = int(self._call(query, params)[0]["spawn"])
        self.steps[key] = {"task_id": child}
        return child

    def _wait(self, key: str, wait_for: str, *, event: str | None = None,
              duration: float | timedelta | None = None, timeout: float | timedelta | None = None) -> Any:  # fmt: skip
        rows = self._call(queries.SUSPEND, {
            "attempt_id": self.attempt_id, "step": key, "wait_for": wait_for, "event": event,
            "duration": interval_text(duration), "timeout": interval_text(timeout),
        })  # fmt: skip
        state, result = rows[0]["state"], rows[0]["result"]
        if state == "waiting":
            self._suspended = True
            if self._runtime is not None:
                self._runtime.waiting(self)
            raise _Suspended(f"task {self.task_id} waits ({wait_for} {key!r})")
        self.steps[key] = result
        return result

    def wait_for_children(self, mode: str = "all", timeout: float | timedelta | None = None) -> list[dict[str, Any]]:
        """Wait until all (``mode='all'``) or any (``'any'``) of this task's
        children finished; returns their outcomes, oldest first: dicts with
        task_id, kind, status, result, error. Without waiting when they already
        did. ``timeout`` (seconds; default 4 h, in SQL): the task then ends
        ``timed_out`` and its unfinished children are cancelled."""
        if mode not in CHILD_MODES:
            raise ValueError(f"mode must be 'all' or 'any', not {mode!r}")
        key = self._next_name("children")
        children: list[dict[str, Any]] = (
            self.steps[key] if self._replay(key) else self._wait(key, f"children_{mode}", timeout=timeout)
        )
        return children

    def wait_for_event(self, name: str, timeout: float | timedelta | None = None) -> Any:
        """The payload of event ``name`` (``Conductor.emit_event``), emitted
        before or after this call; the task waits, without a worker slot, as
        long as it takes, or until ``timeout`` seconds: then EventTimeout."""
        key = self._next_name(f"event:{name}")
        outcome = self.steps[key] if self._replay(key) else self._wait(key, "event", event=name, timeout=timeout)
        if isinstance(outcome, dict) and outcome.get("timed_out"):
            raise EventTimeout(name, self.task_id)
        return outcome.get("payload") if isinstance(outcome, dict) else None

    def sleep(self, seconds: float | timedelta) -> None:
        """Sleep durably: the task waits ``seconds`` without a worker slot (the
        wake time is checkpointed, so a replay wakes at the same instant)."""
        key = self._next_name("sleep")
        self._replay(key)  # its place in the run is checked like any step's
        # always asked of SQL: the step holds the wake time, whether it passed is the database's call
        self._wait(key, "sleep", duration=seconds)

    def patched(self, marker: str) -> bool:
        """Whether this run takes the code path of patch ``marker`` (docs/versioning.md):
        True where the run has nothing left to replay (new work: the marker is
        checkpointed as step 'patch:<marker>', numbered like any step, so a replay
        answers True again), True where the run replays that marker, False where
        the run recorded another step at this point (it passed here on code
        without the marker: keep the old path). Replay-stable either way."""
        if not isinstance(marker, str) or not marker:
            raise ValueError(f"a patch marker is a non-empty string, not {marker!r}")
        key = self._next_name(f"patch:{marker}")
        if self.mismatch is not None:
            raise self.mismatch
        if self.replaying:
            if self.step_order[self._replayed] != key:
                return False
            self._replayed += 1
            return True
        if self._suspended:
            raise _Suspended(f"task {self.task_id} is waiting")
        self.raise_if_cancelled()
        self._call(queries.SAVE_STEP, {"attempt_id": self.attempt_id, "name": key, "result": "true"})
        self.steps[key] = True
        return True
