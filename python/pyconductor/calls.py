"""The client's calls as data, shared by the sync client (:class:`~pyconductor.client.Conductor`)
and the asyncio one (:class:`~pyconductor.aio.AsyncConductor`).

A :class:`Call` is one statement of :mod:`pyconductor.queries`, its parameters
(built here from the caller's arguments and the kind's registered options) and
how its rows become the method's value. Each client only runs it, on its own
pool or on the caller's connection or cursor (``conn=``), so the two clients
cannot drift apart: neither builds an argument nor reads a row itself.

Also here: :class:`TaskInfo` / :class:`AttemptInfo` (what ``get`` and ``result``
return), for ``result`` :func:`watch` / :func:`unwatch` and :func:`names_task`
(whether a ``conductor_done`` notification is about a task), and
:func:`dict_cursor` (the cursor a call runs on when the caller gives a
connection or cursor of its own).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

import psycopg
from psycopg.rows import dict_row

from pyconductor import queries, statuses, tracing
from pyconductor.errors import InvalidArgument
from pyconductor.registry import INTERVAL_OPTIONS, KIND_OPTIONS, Registry
from pyconductor.wire import dumps_json, interval_text, load_infinite_times, timestamp_text

__all__ = [
    "DEDUPE_OPTIONS", "REPLY_POLL", "SPEC_KEYS", "AttemptInfo", "Call", "RunState", "TaskInfo", "UpdateReply", "cancel",
    "dict_cursor", "emit_event", "enqueue", "enqueue_many", "fork", "get_task", "is_idle", "names_task", "retry",
    "rewind", "run_state", "send_update", "task_spec", "unwatch", "update_reply", "watch",
]  # fmt: skip

T = TypeVar("T")
Rows = list[dict[str, Any]]

# The dedupe options (issue 30: docs/uniqueness.md, docs/debounce.md): per enqueue, not a kind's.
DEDUPE_OPTIONS = ("dedupe_window", "dedupe_states", "on_duplicate", "debounce", "debounce_max")
_DEDUPE_INTERVALS = frozenset({"dedupe_window", "debounce", "debounce_max"})
# Keys of one task spec, as conductor.enqueue_many reads them.
# rate_key (issue 30, docs/flow-control.md): a task's key for per-key rate limits, never a kind's.
SPEC_KEYS = ("kind", "payload", "dedupe_key", "run_at", "parent_id", *KIND_OPTIONS, "traceparent", *DEDUPE_OPTIONS,
             "rate_key")  # fmt: skip


def _parse_ts(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


@dataclass(frozen=True)
class AttemptInfo:
    """One claim of a task (a row of conductor.attempts)."""

    id: int
    attempt: int
    worker_id: str
    outcome: str | None
    error: str | None
    traceback: str | None
    claimed_at: datetime | None
    finished_at: datetime | None
    host: str | None = None
    pid: int | None = None

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> AttemptInfo:
        return cls(
            id=obj["id"], attempt=obj.get("attempt", 0), worker_id=obj.get("worker_id", ""),
            outcome=obj.get("outcome"), error=obj.get("error"), traceback=obj.get("traceback"),
            claimed_at=_parse_ts(obj.get("claimed_at")), finished_at=_parse_ts(obj.get("finished_at")),
            host=obj.get("host"), pid=obj.get("pid"),
        )  # fmt: skip


@dataclass(frozen=True)
class TaskInfo:
    """A task as ``conductor.get_task`` returns it, attempts oldest first.
    ``timeout``: each attempt's time limit (None: none; also from a database
    whose get_task does not return it yet). ``dedupe_states``,
    ``dedupe_until``, ``debounce_until``: the dedupe options it was enqueued
    with (docs/uniqueness.md; None: none, or a database without them).
    ``forked_from``, ``forked_at_step``: the task ``fork`` copied it from and
    the step (docs/workflows.md; None: not a fork). ``code_version``: the code
    version its run started on (docs/versioning.md; None: none recorded).
    ``graph_id``: the graph it belongs to (docs/graphs.md; None: none)."""

    id: int
    queue: str
    kind: str
    status: str
    payload: Any
    result: Any
    error: str | None
    priority: int
    run_at: datetime
    attempt: int
    max_attempts: int
    recoveries: int
    max_recoveries: int
    parent_id: int | None
    root_id: int
    dedupe_key: str | None
    concurrency_key: str | None
    enqueued_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    attempts: list[AttemptInfo] = field(default_factory=list)
    timeout: timedelta | None = None
    dedupe_states: list[str] | None = None
    dedupe_until: datetime | None = None
    debounce_until: datetime | None = None
    forked_from: int | None = None
    forked_at_step: str | None = None
    code_version: str | None = None
    graph_id: int | None = None

    @property
    def finished(self) -> bool:
        """Whether the task reached a terminal status."""
        return self.status not in statuses.UNFINISHED

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> TaskInfo:
        optional = ("timeout", "dedupe_states", "dedupe_until", "debounce_until", "forked_from", "forked_at_step",
                    "code_version", "graph_id")  # fmt: skip
        values = {k: row[k] for k in cls.__dataclass_fields__ if k != "attempts" and k not in optional}
        values["status"] = str(row["status"])
        values.update({k: row.get(k) for k in optional})
        values["dedupe_states"] = statuses.status_list(values["dedupe_states"])
        return cls(**values, attempts=[AttemptInfo.from_json(a) for a in row["attempts"] or []])


@dataclass(frozen=True)
class RunState:
    """What ``conductor.run_state`` answers: the value a run's handler published
    last (``ctx.publish_state``) and when; both None when it published none."""

    state: Any
    set_at: datetime | None


@dataclass(frozen=True)
class UpdateReply:
    """An update sent to a run (``conductor.update_reply``): its id, task and name,
    and the run's reply with when it was given (both None until it replied)."""

    update_id: int
    task_id: int
    name: str
    reply: Any
    replied_at: datetime | None

    @property
    def answered(self) -> bool:
        """Whether the run replied."""
        return self.replied_at is not None


# how a client waits for a reply: polls update_reply, 50 ms first, doubling to 1 s
REPLY_POLL = (0.05, 1.0)


def await_reply(read: Callable[[], UpdateReply], limit: float) -> UpdateReply:
    """``read()`` (the update, from ``update_reply``) until the run replied, polling as
    REPLY_POLL says, for ``limit`` seconds at most; then raises TimeoutError."""
    deadline = time.monotonic() + limit
    delay, longest = REPLY_POLL
    while True:
        answer = read()
        if answer.answered:
            return answer
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"update {answer.update_id} to task {answer.task_id} has no reply after {limit:g}s")
        time.sleep(min(delay, left))
        delay = min(delay * 2, longest)


@dataclass(frozen=True)
class Call(Generic[T]):
    """One statement to run (``query`` with ``params``, rows as dicts) and what
    its rows mean (``decode``)."""

    query: str
    params: Mapping[str, Any]
    decode: Callable[[Rows], T]


def _json(value: Any, what: str) -> str:
    try:
        return dumps_json(value)
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"{what} is not JSON-serialisable: {exc}") from exc


def task_spec(registry: Registry, kind: str, payload: Any = None, **options: Any) -> dict[str, Any]:
    """The JSON object ``conductor.enqueue_many`` reads for one task: the
    registered options of ``kind`` updated by ``options``; keys left None are
    left out, so the database applies the kind's configuration, else its own
    defaults. Durations become interval text, run_at ISO 8601 text. Without a
    ``traceparent`` the current span's is stored (pyconductor.tracing; none
    without opentelemetry or outside a span)."""
    unknown = set(options) - set(SPEC_KEYS)
    if unknown:
        raise TypeError(f"unknown enqueue option(s): {', '.join(sorted(unknown))}")
    task = registry.get(kind)
    merged: dict[str, Any] = task.options(**options) if task else dict(options)
    spec: dict[str, Any] = {"kind": kind, "payload": {} if payload is None else payload}
    for key, value in merged.items():
        if value is None:
            continue
        if key in INTERVAL_OPTIONS or key in _DEDUPE_INTERVALS:
            value = interval_text(value)
        elif key == "dedupe_states":
            value = [str(status) for status in value]
        elif key == "run_at":
            value = timestamp_text(value)
        spec[key] = value
    if "traceparent" not in spec:
        traceparent = tracing.current_traceparent()
        if traceparent is not None:
            spec["traceparent"] = traceparent
    return spec


def enqueue(registry: Registry, kind: str, payload: Any, options: Mapping[str, Any]) -> Call[int]:
    """``conductor.enqueue`` of one task, naming only the parameters given (by
    the caller or the registry); decodes to the task's id."""
    spec = task_spec(registry, kind, payload, **options)
    spec["payload"] = _json(spec["payload"], "a payload")
    return Call(queries.enqueue(spec), spec, lambda rows: int(rows[0]["id"]))


def enqueue_many(registry: Registry, specs: Iterable[Mapping[str, Any] | Sequence[Any]]) -> Call[list[int]] | None:
    """``conductor.enqueue_many`` of a batch (dicts with ``kind``, ``payload`` and
    options, or ``(kind, payload)`` pairs); decodes to the ids in input order.
    None for an empty batch (nothing to send)."""
    tasks: list[dict[str, Any]] = []
    for spec in specs:
        if isinstance(spec, Mapping):
            options = dict(spec)
            try:
                kind = options.pop("kind")
            except KeyError:
                raise InvalidArgument(f"task spec without a kind: {spec!r}") from None
            tasks.append(task_spec(registry, kind, options.pop("payload", None), **options))
        else:
            kind, payload = spec
            tasks.append(task_spec(registry, kind, payload))
    if not tasks:
        return None
    body = _json(tasks, "a payload")
    return Call(queries.ENQUEUE_MANY, {"tasks": body}, lambda rows: [int(row["id"]) for row in rows])


def _task_info(rows: Rows) -> TaskInfo:
    return TaskInfo.from_row(rows[0])


def get_task(task_id: int) -> Call[TaskInfo]:
    """``conductor.get_task``; decodes to a :class:`TaskInfo` (NotFound is the server's)."""
    return Call(queries.GET_TASK, {"task_id": task_id}, _task_info)


def watch(task_id: int) -> Call[TaskInfo]:
    """``conductor.watch``: the session waits for the task's end (its completion
    notifies ``conductor_done``); decodes as :func:`get_task`. Run it on the
    connection that listens."""
    return Call(queries.WATCH, {"task_id": task_id}, _task_info)


def unwatch(task_id: int) -> Call[None]:
    """``conductor.unwatch``: the session no longer waits for the task."""
    return Call(queries.UNWATCH, {"task_id": task_id}, lambda rows: None)


def cancel(task_id: int) -> Call[int]:
    return Call(queries.CANCEL, {"task_id": task_id}, lambda rows: int(rows[0]["cancel"]))


def retry(task_id: int, keep_steps: bool = True) -> Call[int]:
    params = {"task_id": task_id, "keep_steps": keep_steps}
    return Call(queries.RETRY_RUN, params, lambda rows: int(rows[0]["retry"]))


def rewind(task_id: int, from_step: str) -> Call[int]:
    """``conductor.rewind``: the finished task queued again, its steps from ``from_step`` on deleted."""
    params = {"task_id": task_id, "from_step": from_step}
    return Call(queries.REWIND, params, lambda rows: int(rows[0]["task_id"]))


def fork(task_id: int, from_step: str) -> Call[int]:
    """``conductor.fork``: a copy of the finished task carrying its steps before ``from_step``; the copy's id."""
    params = {"task_id": task_id, "from_step": from_step}
    return Call(queries.FORK, params, lambda rows: int(rows[0]["task_id"]))


def run_state(task_id: int) -> Call[RunState]:
    """``conductor.run_state``; decodes to a :class:`RunState`."""
    return Call(queries.RUN_STATE, {"task_id": task_id}, lambda rows: RunState(rows[0]["state"], rows[0]["set_at"]))


def send_update(task_id: int, name: str, payload: Any = None) -> Call[int]:
    """``conductor.send_update``; decodes to the update's id."""
    body = _json(payload, f"the payload of update {name!r}")
    params = {"task_id": task_id, "name": name, "payload": body}
    return Call(queries.SEND_UPDATE, params, lambda rows: int(rows[0]["update_id"]))


def update_reply(update_id: int) -> Call[UpdateReply]:
    """``conductor.update_reply``; decodes to an :class:`UpdateReply`."""

    def decode(rows: Rows) -> UpdateReply:
        row = rows[0]
        return UpdateReply(update_id, int(row["task_id"]), row["name"], row["reply"], row["replied_at"])

    return Call(queries.UPDATE_REPLY, {"update_id": update_id}, decode)


def emit_event(name: str, payload: Any = None) -> Call[int]:
    """``conductor.emit_event``; decodes to how many waiting tasks it woke."""
    body = _json({} if payload is None else payload, f"the payload of event {name!r}")
    return Call(queries.EMIT_EVENT, {"name": name, "payload": body}, lambda rows: int(rows[0]["woken"]))


def names_task(payload: str, task_id: int) -> bool:
    """Whether a ``conductor_done`` notification's payload (task ids, comma
    separated, or '*': anything may have finished) is about ``task_id``."""
    return payload == "*" or str(task_id) in payload.split(",")


def is_idle(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """Whether ``conn`` (sync or async) is open and ready for a statement (not
    broken, nor left in a statement or transaction by an interruption)."""
    return not conn.closed and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def dict_cursor(target: Any, *, is_async: bool) -> Any:
    """A new dict-row cursor on the caller's connection (``target``, or the
    connection of ``target`` when it is a cursor; the caller's cursor keeps its
    own results), reading infinite timestamps as the pool's connections do.
    TypeError for anything else, e.g. an async connection given to the sync
    client."""
    conn_types: tuple[type[Any], ...] = (psycopg.AsyncConnection,) if is_async else (psycopg.Connection,)
    cursor_types: tuple[type[Any], ...] = (psycopg.AsyncCursor,) if is_async else (psycopg.Cursor,)
    if isinstance(target, cursor_types):
        target = target.connection
    if not isinstance(target, conn_types):
        wanted = "psycopg.AsyncConnection or AsyncCursor" if is_async else "psycopg.Connection or Cursor"
        raise TypeError(f"conn must be a {wanted}, not {type(target).__name__}")
    cur = target.cursor(row_factory=dict_row)
    load_infinite_times(cur)
    return cur
