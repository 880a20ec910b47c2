"""``pyconductor demo``: a realistic mixed workload against a real database.

:func:`run_demo` starts a :class:`~pyconductor.worker.Worker`, enqueues a few
thousand tasks over three queues while it runs (a wave of ``enqueue_many`` every
50 ms, 600 tasks/s by default, so pickup latency is measured on a live queue,
not on a backlog), shows a plain-text progress bar on stderr until every task
is finished, and returns a :class:`DemoSummary`.

The workload (fractions of ``tasks``; the failure plan is drawn from a seeded
random generator and written into each payload, so the expected outcome of
every task is known up front and the summary can be checked against it):

- ``demo.send_email`` (queue ``<prefix>.emails``, 50 %): 1-4 ms of "SMTP";
  10 % fail once, then succeed (max_attempts 3).
- ``demo.thumbnail`` (``<prefix>.thumbnails``, 35 %): 2-8 ms of "resizing";
  4 % are corrupt images that fail every time (max_attempts 3: three attempts,
  then ``failed``), 4 % fail once then succeed.
- ``demo.report`` (``<prefix>.reports``, 15 %): 5-20 ms of "querying"; 10 %
  fail twice then succeed, 5 % hit a bad template and fail for good at once
  (max_attempts 1).

Retries use a short backoff (0.1 s doubling, at most 0.5 s) and the worker
polls every 0.2 s, so retried tasks come back within the demo.

Each run uses a fresh queue prefix ``demo-<random>``, so a second run (or one
beside an interrupted one) never sees another run's tasks; finished tasks of
earlier runs stay in the tables as history, like any finished task.
"""

from __future__ import annotations

import random
import secrets
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

import psycopg

from pyconductor.client import Conductor
from pyconductor.context import TaskContext
from pyconductor.worker import Worker

__all__ = ["DemoSummary", "run_demo"]

BACKOFF = {"backoff_base": 0.1, "backoff_factor": 2.0, "backoff_max": 0.5}
KINDS = ("demo.send_email", "demo.thumbnail", "demo.report")


@dataclass
class DemoSummary:
    """What a demo run did. ``expected_*`` come from the failure plan; the
    others are read back from ``conductor.tasks`` and ``conductor.attempts``."""

    prefix: str
    total: int
    succeeded: int
    failed: int
    other: int  # finished in any other state (should be 0)
    tasks_retried: int  # tasks that took more than one attempt
    retries: int  # attempts beyond the first, over all tasks
    attempts: int
    elapsed_s: float  # first enqueue to last task finished
    throughput: float  # finished tasks per second over elapsed_s
    pickup_p50_ms: float  # enqueued_at -> handler start of the first attempt
    pickup_p99_ms: float
    expected_succeeded: int
    expected_failed: int
    expected_retries: int
    by_kind: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def consistent(self) -> bool:
        """The counts add up and match the failure plan."""
        return (
            self.succeeded + self.failed + self.other == self.total
            and self.other == 0
            and self.succeeded == self.expected_succeeded
            and self.failed == self.expected_failed
            and self.retries == self.expected_retries
            and self.attempts == self.total + self.retries
        )

    def render(self) -> str:
        lines = [
            f"demo {self.prefix}: {self.total} tasks in {self.elapsed_s:.2f} s",
            f"  succeeded  {self.succeeded:6d}   (expected {self.expected_succeeded})",
            f"  failed     {self.failed:6d}   (expected {self.expected_failed}: retries exhausted or max_attempts 1)",
            (
                f"  retried    {self.tasks_retried:6d} tasks, {self.retries} retries "
                f"(expected {self.expected_retries}), {self.attempts} attempts in all"
            ),
            f"  throughput {self.throughput:9.1f} tasks/s (first enqueue to last finish)",
            (
                "  pickup latency (enqueue to handler start, first attempt): "
                f"p50 {self.pickup_p50_ms:.1f} ms, p99 {self.pickup_p99_ms:.1f} ms"
            ),
        ]
        for kind, counts in sorted(self.by_kind.items()):
            parts = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
            lines.append(f"  {kind:16s} {parts}")
        if self.other:
            lines.append(f"  WARNING: {self.other} tasks finished in another state")
        lines.append("  counts add up: " + ("yes" if self.consistent else "NO"))
        return "\n".join(lines)


@dataclass
class _Plan:
    specs: list[dict[str, Any]]
    expected_succeeded: int
    expected_failed: int
    expected_retries: int


def _plan(tasks: int, prefix: str, rng: random.Random) -> _Plan:
    """The tasks to enqueue, in a shuffled order, and their expected outcome."""
    specs: list[dict[str, Any]] = []
    ok = failed = retries = 0
    n_email = tasks * 50 // 100
    n_thumb = tasks * 35 // 100
    n_report = tasks - n_email - n_thumb
    for i in range(n_email):
        r = rng.random()
        fail_times = 1 if r < 0.10 else 0
        specs.append(
            {
                "kind": "demo.send_email",
                "queue": f"{prefix}.emails",
                "max_attempts": 3,
                **BACKOFF,
                "payload": {"to": f"user{i}@example.com", "ms": rng.uniform(1, 4), "fail_times": fail_times},
            }
        )
        ok += 1
        retries += fail_times
    for i in range(n_thumb):
        r = rng.random()
        fail_times = 99 if r < 0.04 else 1 if r < 0.08 else 0
        specs.append(
            {
                "kind": "demo.thumbnail",
                "queue": f"{prefix}.thumbnails",
                "max_attempts": 3,
                **BACKOFF,
                "payload": {"image": f"img/{i}.jpg", "ms": rng.uniform(2, 8), "fail_times": fail_times},
            }
        )
        if fail_times >= 3:
            failed += 1
            retries += 2
        else:
            ok += 1
            retries += fail_times
    for i in range(n_report):
        r = rng.random()
        if r < 0.05:  # a bad template: fails for good, no retries
            specs.append(
                {
                    "kind": "demo.report",
                    "queue": f"{prefix}.reports",
                    "max_attempts": 1,
                    "payload": {"report": i, "ms": rng.uniform(5, 20), "fail_times": 99},
                }
            )
            failed += 1
            continue
        fail_times = 2 if r < 0.15 else 0
        specs.append(
            {
                "kind": "demo.report",
                "queue": f"{prefix}.reports",
                "max_attempts": 3,
                **BACKOFF,
                "payload": {"report": i, "ms": rng.uniform(5, 20), "fail_times": fail_times},
            }
        )
        ok += 1
        retries += fail_times
    rng.shuffle(specs)
    return _Plan(specs, ok, failed, retries)


class _DemoError(Exception):
    pass


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[k]


def _bar(done: int, total: int, failed: int, retried: int, elapsed: float, width: int = 30) -> str:
    filled = width * done // total if total else width
    rate = done / elapsed if elapsed > 0 else 0.0
    return (
        f"\r[{'#' * filled}{'.' * (width - filled)}] {done:5d}/{total} finished "
        f"({failed} failed, {retried} retries) {rate:7.1f}/s {elapsed:5.1f}s"
    )


def run_demo(
    dsn: str,
    tasks: int = 3000,
    *,
    concurrency: int = 16,
    rate: float = 600.0,
    seed: int | None = None,
    progress: TextIO | None = sys.stderr,
    timeout: float = 55.0,
    prefix: str | None = None,
    on_worker: Callable[[Worker], None] | None = None,
) -> DemoSummary:
    """Run the demo workload on ``dsn`` (a migrated database) and return its summary.

    ``rate``: tasks enqueued per second (in waves every 50 ms) while the
    worker runs. ``progress``: where the bar goes (None: no bar). Raises RuntimeError when
    the tasks are not all finished within ``timeout`` seconds."""
    if tasks < 1:
        raise ValueError(f"tasks must be 1 or more, got {tasks}")
    prefix = prefix or f"demo-{secrets.token_hex(4)}"
    rng = random.Random(seed)
    plan = _plan(tasks, prefix, rng)
    queues = [f"{prefix}.emails", f"{prefix}.thumbnails", f"{prefix}.reports"]

    started: dict[int, float] = {}  # task id -> wall time of the first handler start
    started_lock = threading.Lock()

    def begin(ctx: TaskContext) -> dict[str, Any]:
        now = time.time()
        with started_lock:
            started.setdefault(ctx.task_id, now)
        payload: dict[str, Any] = ctx.payload
        time.sleep(payload["ms"] / 1000)
        if ctx.attempt <= payload["fail_times"]:
            raise _DemoError(f"{ctx.kind} attempt {ctx.attempt} failed on purpose")
        return payload

    app = Conductor(dsn, pool_min=1, pool_max=2)

    @app.task("demo.send_email")
    def send_email(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
        p = begin(ctx)
        return {"sent_to": p["to"]}

    @app.task("demo.thumbnail")
    def thumbnail(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
        p = begin(ctx)
        return {"thumb": p["image"].replace(".jpg", "_128.jpg")}

    @app.task("demo.report")
    def report(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
        p = begin(ctx)
        return {"report": p["report"], "rows": 42}

    worker = Worker(app, queues=queues, concurrency=concurrency, poll_interval=0.2,
                    heartbeat_interval=5.0, shutdown_grace=5.0)  # fmt: skip
    if on_worker:
        on_worker(worker)

    count_sql = """
        select count(*) filter (where status <> all (conductor.unfinished_statuses())) as finished,
               count(*) filter (where status in ('failed', 'dead')) as failed,
               coalesce(sum(greatest(attempt - 1, 0)), 0) as retries
          from conductor.tasks where queue = any(%s)"""

    t0 = time.monotonic()
    worker.start()
    try:
        # Producer: a wave of enqueue_many every 50 ms, ``rate`` tasks/s in all.
        size = max(1, round(rate * 0.05))
        for w in range(0, len(plan.specs), size):
            due = t0 + (w / size) * 0.05
            time.sleep(max(0.0, due - time.monotonic()))
            app.enqueue_many(plan.specs[w : w + size])
        with psycopg.connect(dsn, autocommit=True) as conn:
            while True:
                row = conn.execute(count_sql, [queues]).fetchone()
                assert row is not None
                finished, failed, retries = int(row[0]), int(row[1]), int(row[2])
                elapsed = time.monotonic() - t0
                if progress is not None:
                    progress.write(_bar(finished, tasks, failed, retries, elapsed))
                    progress.flush()
                if finished >= tasks:
                    break
                if elapsed > timeout:
                    raise RuntimeError(f"demo {prefix}: only {finished} of {tasks} tasks finished in {timeout:.0f} s")
                time.sleep(0.1)
            if progress is not None:
                progress.write("\n")
                progress.flush()
    finally:
        worker.stop(grace=5)
        app.close()

    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            """select t.id, t.kind, t.status::text, t.attempt,
                      extract(epoch from t.enqueued_at)::float8,
                      extract(epoch from t.finished_at)::float8,
                      (select count(*) from conductor.attempts a where a.task_id = t.id)
                 from conductor.tasks t where t.queue = any(%s)""",
            [queues],
        ).fetchall()
    succeeded = sum(1 for r in rows if r[2] == "succeeded")
    failed = sum(1 for r in rows if r[2] in ("failed", "dead"))
    by_kind: dict[str, dict[str, int]] = {}
    for r in rows:
        k = by_kind.setdefault(r[1], {})
        k[r[2]] = k.get(r[2], 0) + 1
    first = min(r[4] for r in rows)
    last = max(r[5] for r in rows if r[5] is not None)
    pickups = sorted((started[r[0]] - r[4]) * 1000 for r in rows if r[0] in started)
    elapsed = max(last - first, 1e-6)
    retries = sum(max(r[3] - 1, 0) for r in rows)
    return DemoSummary(
        prefix=prefix,
        total=len(rows),
        succeeded=succeeded,
        failed=failed,
        other=len(rows) - succeeded - failed,
        tasks_retried=sum(1 for r in rows if r[3] > 1),
        retries=retries,
        attempts=sum(int(r[6]) for r in rows),
        elapsed_s=elapsed,
        throughput=len(rows) / elapsed,
        pickup_p50_ms=_percentile(pickups, 0.50),
        pickup_p99_ms=_percentile(pickups, 0.99),
        expected_succeeded=plan.expected_succeeded,
        expected_failed=plan.expected_failed,
        expected_retries=plan.expected_retries,
        by_kind=by_kind,
    )
