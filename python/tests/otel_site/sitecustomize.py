"""The trace test's span collector for Python processes (python/tests/test_tracing.py).

A directory on the PYTHONPATH of the worker processes that test starts: Python
imports ``sitecustomize`` at start-up, so every one of them (``pyconductor
worker``, ``manage.py conductor_worker``) gets an SDK tracer provider whose
finished spans are written as JSON lines to the file $CONDUCTOR_TEST_SPANS names,
each when it ends (a simple processor: nothing waits for an exit), in the shape
workers/node/tracing_scenario.js writes the Node worker's. Without the variable
it does nothing.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence


def _install(path: str) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    lock = threading.Lock()

    def record(span: ReadableSpan) -> dict[str, object]:
        """A finished span as the test reads it (ids in lowercase hex, as W3C writes them)."""
        assert span.context is not None
        return {
            "process": f"python-{os.getpid()}",
            "name": span.name,
            "kind": span.kind.name,
            "trace_id": f"{span.context.trace_id:032x}",
            "span_id": f"{span.context.span_id:016x}",
            "parent_span_id": f"{span.parent.span_id:016x}" if span.parent is not None else None,
            "links": [
                {"trace_id": f"{link.context.trace_id:032x}", "span_id": f"{link.context.span_id:016x}"}
                for link in span.links
            ],
            "attributes": dict(span.attributes or {}),
            "status": span.status.status_code.name,
            "status_message": span.status.description,
            "events": [event.name for event in span.events],
        }

    class FileExporter(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            lines = [json.dumps(record(span)) + "\n" for span in spans]
            with lock, open(path, "a", encoding="utf-8") as out:
                out.writelines(lines)
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileExporter()))
    trace.set_tracer_provider(provider)


if os.environ.get("CONDUCTOR_TEST_SPANS"):
    _install(os.environ["CONDUCTOR_TEST_SPANS"])
