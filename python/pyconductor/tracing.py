"""OpenTelemetry traces, when ``opentelemetry-api`` is installed (the ``otel`` extra).

The only module that imports opentelemetry, and only on first use: without
the package every function here is a no-op (``current_traceparent`` answers
None, ``attempt`` and ``step`` open nothing), and nothing else of pyconductor
knows whether it is there.

Producer side. Every enqueue (``Conductor.enqueue`` / ``enqueue_many``, the
asyncio client, the Django backend, a handler's ``ctx.spawn``) stores the W3C
``traceparent`` of the caller's current span with the task
(:func:`current_traceparent`, through W3C's propagator of opentelemetry-api,
whatever global propagator the application configured), unless the caller
passed one. No span is current (no SDK, or nothing traced): none is stored.

Consumer side. The worker runs each attempt in a CONSUMER span
(:func:`attempt`) whose parent is the stored context, with a link to it too
(a tracing system that shows a task as its own trace still finds its
enqueuer), named ``process <kind>``, with the messaging semantic conventions'
attributes (``messaging.system`` 'conductor', ``messaging.operation.type`` and
``.name`` 'process', ``messaging.destination.name`` the queue,
``messaging.message.id`` the task id) and Conductor's (:data:`ATTRIBUTES`: the
kind, attempt id and number, run, parent, worker). The span is current in the
thread or asyncio task that runs the handler, so what the handler enqueues and
spawns continues it, and each durable step that runs is an INTERNAL child span
(:func:`step`; a step replayed from its checkpoint opens none). A handler's
exception is recorded on the span with ERROR status (as is a result that is
not JSON, and a time limit reached); a wait that parks the task ends the span
without error (``conductor.outcome`` 'waiting'); a cancelled, lost or
released attempt says so in ``conductor.outcome``.

The tracer is ``opentelemetry.trace.get_tracer("pyconductor")``: the
application's TracerProvider decides what is recorded and where it goes.
While no provider is set (the API alone, no SDK), an attempt whose task has no
stored traceparent opens nothing, as nothing would be recorded or propagated
(one with a traceparent still makes that context current, so what its handler
enqueues carries it on); the worker looks for a provider again every second.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from pyconductor.context import TaskContext

__all__ = ["ATTRIBUTES", "Attempt", "attempt", "available", "current_traceparent", "step"]

T = TypeVar("T")

# Conductor's own span attributes, beside the messaging conventions'
ATTRIBUTES = {
    "kind": "conductor.task.kind",
    "attempt_id": "conductor.attempt.id",
    "attempt": "conductor.attempt.number",
    "root_id": "conductor.run.id",
    "parent_id": "conductor.task.parent_id",
    "worker_id": "conductor.worker.id",
    "outcome": "conductor.outcome",
    "step": "conductor.step.name",
}
TRACER_NAME = "pyconductor"


class _Otel(NamedTuple):
    trace: Any  # the opentelemetry.trace module
    context: Any  # the opentelemetry.context module
    propagator: Any  # a TraceContextTextMapPropagator


@functools.cache
def _otel() -> _Otel | None:
    try:
        from opentelemetry import context, trace
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
    except ImportError:
        return None
    return _Otel(trace, context, TraceContextTextMapPropagator())


def available() -> bool:
    """Whether opentelemetry-api is installed (then spans are opened; an SDK decides whether they are kept)."""
    return _otel() is not None


def current_traceparent() -> str | None:
    """The W3C traceparent of the current span, None when there is none
    (opentelemetry-api not installed, no SDK, nothing traced)."""
    otel = _otel()
    if otel is None or not otel.trace.get_current_span().get_span_context().is_valid:
        return None  # (what the propagator would inject: nothing, but without building a carrier per task)
    carrier: dict[str, str] = {}
    otel.propagator.inject(carrier)
    return carrier.get("traceparent")


class Attempt:
    """The span of one attempt, current while its handler runs (:func:`attempt`)."""

    def __init__(self, span: Span | None) -> None:
        self.span = span

    def failed(self, error: str, exc: BaseException | None = None) -> None:
        """The attempt failed: ERROR status, the exception recorded when there is one."""
        if self.span is None:
            return
        from opentelemetry.trace import Status, StatusCode

        if exc is not None:
            self.span.record_exception(exc)
        self.span.set_status(Status(StatusCode.ERROR, error))

    def outcome(self, outcome: str) -> None:
        """How the attempt ended, when not by a result or a failure (waiting, cancelled, lost, released)."""
        if self.span is not None:
            self.span.set_attribute(ATTRIBUTES["outcome"], outcome)


_NO_ATTEMPT = Attempt(None)


def _attributes(ctx: TaskContext) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "messaging.system": "conductor",
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.destination.name": ctx.queue,
        "messaging.message.id": str(ctx.task_id),
        ATTRIBUTES["kind"]: ctx.kind,
        ATTRIBUTES["attempt_id"]: ctx.attempt_id,
        ATTRIBUTES["attempt"]: ctx.attempt,
    }
    for name in ("root_id", "parent_id", "worker_id"):
        value = getattr(ctx, name)
        if value is not None:
            attributes[ATTRIBUTES[name]] = value
    return attributes


class _NoSpan:
    """What :func:`attempt` gives without opentelemetry: one shared object, no generator per task."""

    def __enter__(self) -> Attempt:
        return _NO_ATTEMPT

    def __exit__(self, *exc: object) -> None:
        return None


_NO_SPAN = _NoSpan()


def attempt(ctx: TaskContext) -> AbstractContextManager[Attempt]:
    """The attempt's CONSUMER span, current inside the block (in this thread or
    asyncio task): parent and link the task's stored traceparent. An exception
    out of the block is recorded with ERROR status, but a wait that parked the
    task (``ctx.suspended``), which ends it without error."""
    otel = _otel()
    if otel is None or (ctx.traceparent is None and _no_sdk(otel)):
        # No SDK: the span would be the API's invalid one, current and ended for nothing (a
        # stored traceparent still goes through _attempt: its context stays current, so what
        # the handler enqueues carries it on).
        return _NO_SPAN
    return _attempt(otel, ctx)


_SDK_RECHECK = 1.0  # seconds between two looks for a provider while none is set


class _Provider:
    """Whether the application set a TracerProvider that records. The API sets the global
    provider once, so once one is found it stays; while none is, the answer is read again
    at most every _SDK_RECHECK seconds (the API's lookup reads the environment each time:
    a tenth of an untraced worker's CPU per task when asked at each attempt)."""

    sdk = False
    checked_at = -_SDK_RECHECK


def _no_sdk(otel: _Otel) -> bool:
    if _Provider.sdk:
        return False
    now = time.monotonic()
    if now - _Provider.checked_at < _SDK_RECHECK:
        return True
    provider = otel.trace.get_tracer_provider()
    _Provider.sdk = not isinstance(provider, (otel.trace.ProxyTracerProvider, otel.trace.NoOpTracerProvider))
    _Provider.checked_at = now
    return not _Provider.sdk


@contextmanager
def _attempt(otel: _Otel, ctx: TaskContext) -> Iterator[Attempt]:
    trace = otel.trace
    parent = None
    links = []
    if ctx.traceparent:
        parent = otel.propagator.extract({"traceparent": ctx.traceparent})
        remote = trace.get_current_span(parent).get_span_context()
        if remote.is_valid:
            links.append(trace.Link(remote))
        else:
            parent = None
    tracer = trace.get_tracer(TRACER_NAME)
    span = tracer.start_span(f"process {ctx.kind}", context=parent, kind=trace.SpanKind.CONSUMER,
                             attributes=_attributes(ctx), links=links)  # fmt: skip
    handle = Attempt(span)
    token = otel.context.attach(trace.set_span_in_context(span))
    try:
        yield handle
    except BaseException as exc:
        if ctx.suspended:
            handle.outcome("waiting")
        else:
            handle.failed(f"{type(exc).__name__}: {exc}", exc)
        raise
    finally:
        otel.context.detach(token)
        if ctx.suspended:
            handle.outcome("waiting")
        elif ctx.cancelled:
            reason = ctx.cancel_reason or "cancelled"
            handle.outcome(reason)
            if reason == "timed_out":
                handle.failed("timed out")
        span.end()


def step(ctx: TaskContext, name: str, fn: Callable[[], T]) -> T:
    """``fn()`` in an INTERNAL span ``step <name>``, a child of the current one (the attempt's)."""
    otel = _otel()
    if otel is None:
        return fn()
    tracer = otel.trace.get_tracer(TRACER_NAME)
    attributes = {ATTRIBUTES["step"]: name, ATTRIBUTES["kind"]: ctx.kind, "messaging.message.id": str(ctx.task_id)}
    with tracer.start_as_current_span(f"step {name}", kind=otel.trace.SpanKind.INTERNAL, attributes=attributes):
        return fn()
