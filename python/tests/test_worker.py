"""Worker, embedded in the test process, against a real PostgreSQL."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from helpers import wait_until

from pyconductor import Conductor, TaskCancelledError, TaskContext, Worker

Conn = psycopg.Connection[tuple[object, ...]]


@pytest.fixture
def app(db_dsn: str) -> Iterator[Conductor]:
    with Conductor(db_dsn, pool_max=2) as app:
        yield app


def fast_worker(app: Conductor, **options: Any) -> Worker:
    defaults: dict[str, Any] = {"heartbeat_interval": 0.2, "poll_interval": 0.5, "reap_interval": 0.5, "shutdown_grace": 5}
    return Worker(app, **{**defaults, **options})


def status(app: Conductor, task_id: int) -> str:
    return app.get(task_id).status


def finished(app: Conductor, *ids: int) -> bool:
    return all(app.get(i).finished for i in ids)


def test_tasks_run_and_results_are_stored(app: Conductor, db_conn: Conn) -> None:
    seen: list[TaskContext] = []

    @app.task("math.add")
    def add(payload: dict[str, int]) -> dict[str, int]:
        return {"sum": payload["a"] + payload["b"]}

    @app.task("ctx.echo", queue="ctx")
    def echo(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
        seen.append(ctx)
        return {"task_id": ctx.task_id, "kind": ctx.kind, "queue": ctx.queue, "attempt": ctx.attempt}

    # a result and a payload that the batch report's array literal must escape
    awkward = {"quote": 'a"b', "backslash": "c\\d\\", "braces": "{,}", "null": "NULL", "none": None, "é": "✓"}

    @app.task("echo.payload")
    def echo_payload(payload: dict[str, Any]) -> dict[str, Any]:
        return payload

    a = add.enqueue({"a": 2, "b": 3})
    b = echo.enqueue({})
    c = echo_payload.enqueue(awkward)
    with fast_worker(app, concurrency=4) as worker:
        wait_until(lambda: finished(app, a, b, c))
        assert db_conn.execute(
            "select queues, concurrency, roles from conductor.workers where id = %s", (worker.worker_id,)
        ).fetchone() == (None, 4, ["worker", "scheduler"])
    assert app.get(a).result == {"sum": 5} and app.get(a).status == "succeeded"
    assert app.get(b).result == {"task_id": b, "kind": "ctx.echo", "queue": "ctx", "attempt": 1}
    assert app.get(c).result == awkward and app.get(c).status == "succeeded"
    assert seen[0].attempt_id == app.get(b).attempts[0].id
    assert db_conn.execute("select count(*) from conductor.workers").fetchone() == (0,), "deregistered at stop"


def test_a_raising_handler_leaves_error_and_traceback(app: Conductor, db_conn: Conn) -> None:
    @app.task("boom")
    def boom(payload: dict[str, Any]) -> None:
        inner_helper_that_raises(payload["why"])

    task_id = boom.enqueue({"why": "disk on fire"})
    with fast_worker(app):
        wait_until(lambda: finished(app, task_id))
    info = app.get(task_id)
    assert info.status == "failed"
    assert info.error == "RuntimeError: disk on fire"
    (attempt,) = info.attempts
    assert attempt.outcome == "failed" and attempt.error == "RuntimeError: disk on fire"
    assert attempt.traceback is not None
    assert attempt.traceback.startswith("Traceback (most recent call last):")
    assert "inner_helper_that_raises" in attempt.traceback and "def boom" not in attempt.traceback
    assert "in boom" in attempt.traceback


def inner_helper_that_raises(why: str) -> None:
    raise RuntimeError(why)


def test_a_kind_without_a_handler_stays_queued(app: Conductor, db_conn: Conn) -> None:
    # v0.1.0 claimed it and killed it at once: a rolling deploy adding a kind lost its tasks
    @app.task("known")
    def known(payload: Any) -> None:
        return None

    stranger = app.enqueue("nobody.handles.this")
    mine = known.enqueue()
    with fast_worker(app) as worker:
        wait_until(lambda: finished(app, mine))
        assert db_conn.execute("select kinds from conductor.workers where id = %s",
                               (worker.worker_id,)).fetchone() == (["known"],)  # fmt: skip
    info = app.get(stranger)
    assert (info.status, info.attempts) == ("queued", [])
    assert worker.stats["unknown"] == 0 and worker.stats["claimed"] == 1


def test_kinds_narrow_what_a_worker_claims(app: Conductor) -> None:
    @app.task("a")
    def a(payload: Any) -> str:
        return "a"

    @app.task("b")
    def b(payload: Any) -> str:
        return "b"

    with pytest.raises(ValueError, match="kinds without a handler on this app: nope"):
        Worker(app, kinds=["a", "nope"])
    a_id, b_id = a.enqueue(), b.enqueue()
    with fast_worker(app, kinds="a") as worker:
        assert worker.served_kinds == ["a"]
        wait_until(lambda: finished(app, a_id))
    assert app.get(b_id).status == "queued"


def test_a_claimed_kind_without_a_handler_is_dead_at_once(app: Conductor) -> None:
    """The defensive path: a claim cannot return such a task to a worker that names its
    kinds, so the executor is handed one directly."""
    from pyconductor.executor import Executor
    from pyconductor.ledger import Ledger
    from pyconductor.reporter import Report

    @app.task("known")
    def known(payload: Any) -> None:
        return None

    reports: list[Report] = []
    ledger = Ledger(1)
    executor = Executor(ledger, app.registry, reports.append, concurrency=1, worker_id="w", cancel_grace=1)
    ctx = TaskContext(task_id=1, attempt_id=7, attempt=1, kind="stranger", queue="default", worker_id="w")
    executor.submit(ctx, None, 0.0)
    assert [(r.what, r.error) for r in reports] == [("unknown", "this worker has handlers for: known")]
    assert ledger.held == {7: ctx} and ledger.running == {}, "held until the failure is reported; no slot taken"


def test_retries_are_honoured(app: Conductor) -> None:
    calls: list[int] = []

    @app.task("flaky", max_attempts=3, backoff_base=0)
    def flaky(payload: Any, ctx: TaskContext) -> str:
        calls.append(ctx.attempt)
        if ctx.attempt < 3:
            raise ValueError(f"attempt {ctx.attempt} fails")
        return "third time lucky"

    @app.task("hopeless", max_attempts=2, backoff_base=0)
    def hopeless(payload: Any) -> None:
        raise ValueError("never")

    a, b = flaky.enqueue(), hopeless.enqueue()
    with fast_worker(app):
        wait_until(lambda: finished(app, a, b))
    assert calls == [1, 2, 3]
    info = app.get(a)
    assert (info.status, info.result, info.attempt) == ("succeeded", "third time lucky", 3)
    assert [x.outcome for x in info.attempts] == ["failed", "failed", "succeeded"]
    assert [x.error for x in info.attempts[:2]] == ["ValueError: attempt 1 fails", "ValueError: attempt 2 fails"]
    assert [x.outcome for x in app.get(b).attempts] == ["failed", "failed"]
    assert app.get(b).status == "failed"


def test_a_non_json_result_fails_clearly(app: Conductor) -> None:
    @app.task("bad.result")
    def bad(payload: Any) -> object:
        return {"obj": object()}

    task_id = bad.enqueue()
    with fast_worker(app):
        wait_until(lambda: finished(app, task_id))
    info = app.get(task_id)
    assert info.status == "failed"
    assert "not JSON-serialisable" in (info.error or "") and "bad.result" in (info.error or "")


def test_results_are_reported_in_batches(app: Conductor, db_conn: Conn) -> None:
    # Every task one complete_many call finishes shares that transaction's
    # finished_at, so fewer distinct times than tasks shows batching.
    @app.task("quick")
    def quick(payload: dict[str, int]) -> int:
        return payload["n"]

    ids = app.enqueue_many([("quick", {"n": n}) for n in range(300)])
    with fast_worker(app, concurrency=50):
        wait_until(lambda: db_conn.execute(
            "select count(*) = 300 from conductor.tasks where status = 'succeeded'").fetchone()[0], timeout=30)  # fmt: skip
    batches = db_conn.execute(
        "select count(distinct finished_at) from conductor.tasks where id = any(%s)", (ids,)
    ).fetchone()[0]
    assert batches <= 150, f"{batches} completion transactions for 300 tasks"
    assert [app.get(i).result for i in ids[:3]] == [0, 1, 2]


def test_claims_only_free_slots(app: Conductor, db_conn: Conn) -> None:
    gate = threading.Event()

    @app.task("gated")
    def gated(payload: Any) -> None:
        gate.wait(30)

    ids = app.enqueue_many([("gated", {}) for _ in range(5)])
    with fast_worker(app, concurrency=2) as worker:
        wait_until(lambda: worker.running == 2)
        running = db_conn.execute("select count(*) from conductor.tasks where status = 'running'").fetchone()
        assert running == (2,)
        assert db_conn.execute("select count(*) from conductor.attempts").fetchone() == (2,)
        gate.set()
        wait_until(lambda: finished(app, *ids))
    assert db_conn.execute("select count(*) from conductor.attempts").fetchone() == (5,)


def test_results_waiting_for_their_report_hold_back_claims(app: Conductor, db_conn: Conn) -> None:
    # A stalled report connection must stop the claiming: each result not yet
    # reported is a task a crash would run again. The cap is 3 x concurrency
    # (no buffer here: with one, what it holds is handed back, test_buffer.py).
    @app.task("quick")
    def quick(payload: Any) -> None:
        return None

    gate = threading.Event()
    ids = app.enqueue_many([("quick", {}) for _ in range(12)])
    worker = fast_worker(app, concurrency=2, poll_interval=0.05, prefetch=0)
    send = worker.reporter.send

    def stalled_send(batch: Any) -> None:
        gate.wait(30)
        send(batch)

    worker.reporter.send = stalled_send  # type: ignore[method-assign]
    with worker:
        running = "select count(*) from conductor.tasks where status = 'running'"
        try:
            wait_until(lambda: db_conn.execute(running).fetchone() == (6,))
            # absence of further claims: ten poll intervals, each a chance to claim
            threading.Event().wait(0.5)
            assert db_conn.execute(running).fetchone() == (6,)
            assert worker.running == 0, "the two slots are idle, held back by six unreported results"
        finally:
            gate.set()
        wait_until(lambda: finished(app, *ids))


def test_outcome_listeners_hear_what_the_database_decided(app: Conductor, caplog: pytest.LogCaptureFixture) -> None:
    @app.task("flaky", max_attempts=2, backoff_base=0)
    def flaky(payload: Any, ctx: TaskContext) -> None:
        if ctx.attempt == 1:
            raise RuntimeError("first time")

    @app.task("doomed")
    def doomed(payload: Any) -> None:
        raise RuntimeError("always")

    heard: list[tuple[str, str, int, bool]] = []

    def broken(ctx: TaskContext, outcome: str, handler_ms: float | None) -> None:
        raise ValueError("a listener's bug")

    worker = fast_worker(app)
    worker.outcome_listeners.append(broken)
    worker.outcome_listeners.append(lambda ctx, outcome, ms: heard.append((ctx.kind, outcome, ctx.attempt, ms is not None)))
    ids = [flaky.enqueue(), doomed.enqueue()]
    with caplog.at_level(logging.ERROR, logger="pyconductor"), worker:
        wait_until(lambda: finished(app, *ids) and len(heard) == 3)
    assert sorted(heard) == [("doomed", "failed", 1, True), ("flaky", "retried", 1, True), ("flaky", "succeeded", 2, True)]
    assert [app.get(i).status for i in ids] == ["succeeded", "failed"]
    assert "outcome listener" in caplog.text, "a failing listener is logged, and reporting goes on"


def test_a_notification_wakes_an_idle_worker(app: Conductor) -> None:
    @app.task("ping", queue="pings")
    def ping(payload: Any) -> str:
        return "pong"

    @app.task("elsewhere", queue="other")
    def elsewhere(payload: Any) -> str:
        return "no"

    with fast_worker(app, queues=["pings"], poll_interval=60) as worker:
        # the first (empty) claim is done and the worker idles on its 60 s poll
        wait_until(lambda: worker.producer.sleeping and worker.listener is not None and worker.listener.thread.is_alive())
        other = elsewhere.enqueue()
        task_id = ping.enqueue()
        wait_until(lambda: finished(app, task_id), timeout=10, message="woken by NOTIFY, not the 60 s poll")
        assert app.get(other).status == "queued", "a worker claims only its queues"


def test_cancel_reaches_a_running_handler(app: Conductor) -> None:
    started = threading.Event()
    outcome: list[str] = []

    @app.task("long")
    def long(payload: Any, ctx: TaskContext) -> str:
        started.set()
        try:
            while not ctx.wait_cancelled(0.05):
                pass
            ctx.raise_if_cancelled()
        except TaskCancelledError as exc:
            outcome.append(f"{ctx.cancel_reason}: {exc}")
            raise
        return "finished"

    task_id = long.enqueue()
    with fast_worker(app) as worker:
        assert started.wait(10)
        assert app.cancel(task_id) == 1
        wait_until(lambda: outcome)
        wait_until(lambda: worker.running == 0)
    assert outcome[0].startswith("cancelled: ")
    info = app.get(task_id)
    assert info.status == "cancelled" and info.attempts[0].outcome == "cancelled"
    assert worker.stats["discarded"] == 1


def test_a_lost_lease_drops_the_result_and_the_worker_lives_on(
    app: Conductor, db_conn: Conn, caplog: pytest.LogCaptureFixture
) -> None:
    first_run = threading.Event()
    go = threading.Event()

    @app.task("slow")
    def slow(payload: Any, ctx: TaskContext) -> str:
        if ctx.recoveries == 0:
            first_run.set()
            go.wait(30)
            return "zombie result"
        return "second result"

    caplog.set_level(logging.WARNING, logger="pyconductor")
    task_id = slow.enqueue()
    # heartbeats and reaps far apart: the test plays the reaper with a clock an hour ahead
    with fast_worker(app, heartbeat_interval=3600, reap_interval=3600) as worker:
        assert first_run.wait(10)
        db_conn.execute("update conductor.settings set fake_clock = true")  # only this session sets fake_now
        db_conn.execute("select set_config('conductor.fake_now', %s, false)", ("2999-01-01T00:00:00Z",))
        assert db_conn.execute("select conductor.reap()").fetchone() == (1,)
        db_conn.execute("reset conductor.fake_now")
        wait_until(lambda: app.get(task_id).status == "succeeded")
        go.set()
        wait_until(lambda: worker.stats["refused"] == 1)
    info = app.get(task_id)
    assert info.result == "second result"
    assert [a.outcome for a in info.attempts] == ["lost", "succeeded"]
    assert any("refused" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    assert any(getattr(r, "task_id", None) == task_id for r in caplog.records)


def test_stop_releases_what_outlives_the_grace_period(app: Conductor) -> None:
    started = threading.Event()
    release_me = threading.Event()

    @app.task("stuck")
    def stuck(payload: Any) -> None:
        started.set()
        release_me.wait(30)

    @app.task("brief")
    def brief(payload: Any) -> str:
        return "done"

    stuck_id = stuck.enqueue()
    worker = fast_worker(app).start()
    try:
        assert started.wait(10)
        brief_id = brief.enqueue()
        wait_until(lambda: finished(app, brief_id))
        worker.stop(grace=0.3)
    finally:
        release_me.set()
    assert worker.abandoned == 1
    info = app.get(stuck_id)
    assert (info.status, info.attempt) == ("queued", 0)
    assert [a.outcome for a in info.attempts] == ["released"]
    assert app.get(brief_id).status == "succeeded"


def test_an_infinite_grace_waits_for_every_running_task(app: Conductor, caplog: pytest.LogCaptureFixture) -> None:
    started = threading.Event()
    finish = threading.Event()

    @app.task("slow")
    def slow(payload: Any) -> str:
        started.set()
        finish.wait(30)
        return "done"

    task_id = slow.enqueue()
    worker = fast_worker(app, shutdown_grace=float("inf")).start()
    assert started.wait(10)
    stopping = threading.Thread(target=worker.stop)
    with caplog.at_level(logging.INFO, logger="pyconductor"):
        stopping.start()
        wait_until(lambda: "grace unlimited" in caplog.text)
        stopping.join(1.0)
        assert stopping.is_alive(), "stop waits while the task runs"
        finish.set()
        stopping.join(15)
    assert not stopping.is_alive()
    assert worker.abandoned == 0
    assert app.get(task_id).status == "succeeded"


def test_an_idle_worker_stops_within_half_a_second(app: Conductor) -> None:
    @app.task("noop")
    def noop(payload: Any) -> None:
        return None

    worker = fast_worker(app, concurrency=4).start()
    wait_until(lambda: worker.producer.sleeping)  # idle: claimed nothing, waiting for work
    started = time.perf_counter()
    worker.stop()
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize("grace", [-1.0, float("nan")])
def test_a_grace_that_is_no_duration_is_refused(app: Conductor, grace: float) -> None:
    with pytest.raises(ValueError, match="shutdown grace must be 0 or more seconds, or inf"):
        fast_worker(app, shutdown_grace=grace)


def test_terminated_connections_are_reopened(app: Conductor, db_conn: Conn) -> None:
    @app.task("echo")
    def echo(payload: dict[str, int]) -> int:
        return payload["n"]

    with fast_worker(app) as worker:
        first = echo.enqueue({"n": 1})
        wait_until(lambda: finished(app, first))
        killed = db_conn.execute(
            "select count(pg_terminate_backend(pid)) from pg_stat_activity where application_name like %s",
            (f"%{worker.worker_id}%",),
        ).fetchone()[0]
        assert killed >= 3
        ids = [echo.enqueue({"n": n}) for n in range(2, 12)]
        wait_until(lambda: finished(app, *ids), timeout=30)
        assert worker.listener is not None
        assert all(service.thread.is_alive() for service in (worker.producer, worker.reporter, worker.heartbeat_service,
                                                             worker.reaper, worker.listener))
    assert [app.get(i).result for i in ids] == list(range(2, 12))


def test_a_server_restart_keeps_handlers_and_reports_held_results(app: Conductor, cluster: Any) -> None:
    started = threading.Event()
    go = threading.Event()

    @app.task("through.restart")
    def through(payload: Any) -> str:
        started.set()
        go.wait(30)
        return "survived"

    task_id = through.enqueue()
    with fast_worker(app) as worker:
        assert started.wait(10)
        app.close()  # the test's own pool would hold dead connections too
        cluster.restart()
        go.set()
        wait_until(lambda: finished(app, task_id), timeout=60)
        after = through.enqueue()
        wait_until(lambda: finished(app, after), timeout=30)
        # the reporter counts an outcome after its commit, which the test may see first
        wait_until(lambda: worker.stats["succeeded"] == 2, timeout=10,
                   message=lambda: f"succeeded counted: {worker.stats['succeeded']}")  # fmt: skip
    assert app.get(task_id).result == "survived"


def test_a_handler_asks_for_its_retry_time(app: Conductor, db_conn: Conn) -> None:
    from datetime import datetime, timedelta, timezone

    from pyconductor import RetryLater

    asked = datetime.now(timezone.utc) + timedelta(hours=2)

    @app.task("rate.limited", max_attempts=3)
    def limited(payload: dict[str, Any]) -> None:
        raise RetryLater("the API said 429", at=asked)

    @app.task("rate.once")
    def once(payload: dict[str, Any]) -> None:
        raise RetryLater("no attempts left for this one", delay=60)

    retried = limited.enqueue({})
    final = once.enqueue({})
    with fast_worker(app, concurrency=2):
        wait_until(lambda: app.get(retried).attempts and app.get(retried).status == "queued"
                   and app.get(final).finished)  # fmt: skip
    run_at = db_conn.execute("select run_at from conductor.tasks where id = %s", (retried,)).fetchone()[0]
    assert abs((run_at - asked).total_seconds()) < 0.01, "the retry is due when the handler asked"
    assert app.get(retried).attempts[0].error == "RetryLater: the API said 429"
    assert app.get(final).status == "failed", "with no attempts left the database fails it anyway"


def test_an_idle_worker_starts_a_delayed_task_at_its_run_at(app: Conductor, db_conn: Conn) -> None:
    # v0.1.0 noticed it at the next poll: a task due in 3 s ran 9.4 s late.
    # The goal is 100 ms (bench/delayed.py measures it); the bound here is for a busy CI machine.
    from datetime import datetime, timedelta, timezone

    from pyconductor import RetryLater

    @app.task("later")
    def later(payload: Any, ctx: TaskContext) -> str:
        if payload.get("retry") and ctx.attempt == 1:
            raise RetryLater("not yet", delay=1)
        return "on time"

    with fast_worker(app, poll_interval=60, reap_interval=60) as worker:
        wait_until(lambda: worker.producer.sleeping)
        delayed = later.enqueue({}, run_at=datetime.now(timezone.utc) + timedelta(seconds=1))
        retried = app.enqueue("later", {"retry": True}, max_attempts=2)
        wait_until(lambda: finished(app, delayed, retried), timeout=10, message="woken at run_at, not the 60 s poll")
    lateness = dict(db_conn.execute(
        "select t.id, extract(epoch from a.claimed_at - t.run_at)::float8 from conductor.tasks t"
        "  join conductor.attempts a on a.id = t.attempt_id where t.id = any(%s)", ([delayed, retried],)).fetchall())  # fmt: skip
    assert 0 <= lateness[delayed] < 1.0, f"the delayed task started {lateness[delayed]:.3f} s after its run_at"
    assert 0 <= lateness[retried] < 1.0, f"the retry started {lateness[retried]:.3f} s after its run_at"


def test_no_retry_fails_the_task_at_once_and_a_fallback_runs_every_other_kind(app: Conductor) -> None:
    """NoRetry ends a task whatever attempts it has left; a registry's fallback handles the kinds
    registered nowhere, and the worker then claims every kind of its queues (issue 27: the
    Django worker's task paths)."""
    from pyconductor import NoRetry
    from pyconductor.registry import Task

    @app.task("doomed", max_attempts=3, backoff_base=0)
    def doomed(payload: Any) -> None:
        raise NoRetry("cannot succeed")

    def other(payload: Any, ctx: TaskContext) -> str:
        return f"ran {ctx.kind}"

    app.registry.fallback = lambda kind: Task(app, kind, other, {})
    first = app.enqueue("doomed", {})
    stray = app.enqueue("anything.else", {}, queue="q1")
    with fast_worker(app, queues=["default", "q1"]) as worker:
        assert worker.claimed_kinds is None
        wait_until(lambda: status(app, first) == "failed" and status(app, stray) == "succeeded")
    info = app.get(first)
    assert [(a.outcome, a.error) for a in info.attempts] == [("failed", "NoRetry: cannot succeed")]
    assert app.get(stray).result == "ran anything.else"
