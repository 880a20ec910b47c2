"""Notify only who waits (issue 16): the sleeper protocol of the worker and
the result waiters of result(), against a real PostgreSQL with in-process
Workers.

A notifying commit takes a database-wide lock, so an enqueue notifies only a
queue some worker sleeps on (conductor.sleepers) and a completion only a task
some result() waits for (conductor.result_waiters). What this must never
cost is a lost wake-up: the race test runs workers whose poll (60 s) can
never be the waker and checks every task starts within BOUND of its enqueue.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import psycopg
import pytest
from helpers import wait_until
from psycopg.types.json import Jsonb

from pyconductor import Conductor, Worker, queries
from pyconductor.aio import AsyncConductor
from pyconductor.endpoints import EndpointServer

Conn = psycopg.Connection[Any]

BOUND = 2.0  # seconds: every task starts within this of its enqueue (the poll is 60 s)
SENTINEL = "sentinel"


@pytest.fixture
def app(db_dsn: str) -> Iterator[Conductor]:
    with Conductor(db_dsn, pool_max=8) as app:
        yield app


def idle_worker(app: Conductor, **options: Any) -> Worker:
    """A worker that only a notification (or a free slot) can wake within a test."""
    defaults: dict[str, Any] = {"poll_interval": 60, "reap_interval": 60, "heartbeat_interval": 5,
                                "shutdown_grace": 5, "run_scheduler": False}  # fmt: skip
    return Worker(app, **{**defaults, **options})


def sleepers(conn: Conn, worker_id: str | None = None) -> list[tuple[str, str]]:
    return [(str(w), str(q)) for w, q in conn.execute(
        "select worker_id, queue from conductor.sleepers where %(w)s::text is null or worker_id = %(w)s"
        " order by 1, 2", {"w": worker_id}).fetchall()]  # fmt: skip


def waiters(conn: Conn, task_id: int) -> int:
    return int(conn.execute("select count(*) from conductor.result_waiters where task_id = %s", (task_id,)).fetchone()[0])


def notifications(listener: Conn, channel: str) -> list[str]:
    """The payloads ``listener`` got on ``channel`` up to now: a sentinel notified
    after everything before it committed arrives after their notifications."""
    listener.execute("select pg_notify(%s, %s)", (channel, SENTINEL))
    got: list[str] = []
    for note in listener.notifies(timeout=10):
        if note.channel == channel and note.payload == SENTINEL:
            return got
        if note.channel == channel:
            got.append(note.payload)
    raise AssertionError(f"the sentinel on {channel} never came")


@pytest.fixture
def listener(db_dsn: str) -> Iterator[Conn]:
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("listen conductor")
        conn.execute("listen conductor_done")
        yield conn


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # never leave a handler blocked


# -- the race --------------------------------------------------------------------------


def test_no_wakeup_is_lost_while_workers_keep_going_idle(app: Conductor, db_dsn: str, db_conn: Conn) -> None:
    """Workers go idle between bursts while enqueues commit, some in
    transactions that commit milliseconds after their enqueue read the
    sleepers (an application's request): a wake-up lost to the race between
    sleep() and an enqueue in flight leaves a task to the 60 s poll. Each
    thread enqueues into its own queue, served by one worker, and after each
    burst awaits its tasks' start within BOUND before pausing (0-30 ms, so
    the next burst meets the worker at a random point of going idle): no
    later enqueue covers for a lost wake-up."""
    tasks, pause_max, hold_max, burst_max = 3000, 0.03, 0.04, 6
    # per thread: the kind and queues it enqueues into; each worker below serves one of them
    targets = [("race.noop", ["wq1"]), ("race.noop", ["wq2"]), ("race.noop", ["wq3", "wq4"]), ("race.any", ["wq4"])]

    @app.task("race.noop")
    def noop(payload: Any) -> None:
        return None

    @app.task("race.any")
    def any_queue(payload: Any) -> None:
        return None

    workers = [
        idle_worker(app, worker_id="race-1", queues=["wq1"], kinds=["race.noop"], concurrency=4),
        idle_worker(app, worker_id="race-2", queues=["wq2"], kinds=["race.noop"], concurrency=1),
        idle_worker(app, worker_id="race-34", queues=["wq3", "wq4"], kinds=["race.noop"], concurrency=2),
        idle_worker(app, worker_id="race-all", kinds=["race.any"], concurrency=4),  # marks '*'
    ]
    errors: list[BaseException] = []
    enqueued: list[int] = []
    lock = threading.Lock()

    def enqueue_bursts(seed: int, quota: int, conn: Conn) -> None:
        rng = random.Random(seed)
        kind, queues = targets[seed]
        try:
            while quota > 0:
                queue = rng.choice(queues)
                n = min(quota, rng.randint(1, burst_max))
                specs = [{"kind": kind, "queue": queue} for _ in range(n)]
                style = rng.randrange(3)
                if style == 0:
                    ids = [app.enqueue(kind, {}, queue=queue) for _ in range(n)]
                elif style == 1:
                    ids = app.enqueue_many(specs)
                else:
                    with conn.transaction():  # commits up to hold_max after enqueue_many read the sleepers
                        ids = app.enqueue_many(specs, conn=conn)
                        time.sleep(rng.uniform(0, hold_max))
                with lock:
                    enqueued.extend(ids)
                quota -= n
                wait_until(lambda: not conn.execute("select exists (select from conductor.tasks where id = any(%s)"
                                                    " and status = 'queued')", (ids,)).fetchone()[0],
                           timeout=BOUND, interval=0.002,
                           message=f"tasks {ids} of {queue} not started: a lost wake-up")  # fmt: skip
                time.sleep(rng.uniform(0, pause_max))  # lets the worker go idle: a pause, not a wait for a condition
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    with ExitStack() as stack:
        for worker in workers:
            stack.enter_context(worker)
        conns = [stack.enter_context(psycopg.connect(db_dsn, autocommit=True)) for _ in targets]
        wait_until(lambda: len(sleepers(db_conn)) == 5, message=lambda: f"sleepers {sleepers(db_conn)}")
        threads = [threading.Thread(target=enqueue_bursts, args=(t, tasks // len(targets), conns[t]))
                   for t in range(len(targets))]  # fmt: skip
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors
        wait_until(lambda: finished_count(db_conn) == len(enqueued), timeout=30,
                   message=lambda: f"{finished_count(db_conn)} of {len(enqueued)} finished")  # fmt: skip
        assert sum(w.stats["succeeded"] for w in workers) == len(enqueued) == tasks

    waits = sorted(float(w) for (w,) in db_conn.execute(
        "select extract(epoch from min(a.claimed_at) - t.enqueued_at)::float8 from conductor.tasks t"
        "  join conductor.attempts a on a.task_id = t.id group by t.id, t.enqueued_at").fetchall())  # fmt: skip
    p99 = waits[int(0.99 * (len(waits) - 1))]
    print(f"\nrace: {len(waits)} tasks by {len(workers)} workers; wait from enqueue to claim: "
          f"max {waits[-1] * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, median {statistics.median(waits) * 1000:.1f} ms")
    assert len(waits) == len(enqueued)
    assert waits[-1] < BOUND, f"a task waited {waits[-1]:.3f} s for a worker"
    assert sleepers(db_conn) == [], "stop drops the marks"


def test_an_enqueue_in_flight_while_the_worker_marks_itself_is_found_by_the_recheck(
    app: Conductor, db_dsn: str, db_conn: Conn, listener: Conn, gate: threading.Event
) -> None:
    """The race of the stress test above, made to happen: an enqueue reads the
    sleepers while the worker is busy (none), the worker goes idle and marks
    itself, then the enqueue commits. It notifies nobody; the worker's
    sleep() said it was not settled, so it claims again shortly and finds the
    task (the poll is 60 s)."""

    @app.task("held", queue="held")
    def held(payload: Any) -> None:
        if payload.get("block"):
            gate.wait(30)

    with idle_worker(app, queues=["held"], concurrency=1) as worker, \
            psycopg.connect(db_dsn, autocommit=True) as request:  # fmt: skip
        wid = worker.worker_id
        wait_until(lambda: sleepers(db_conn) == [(wid, "held")])
        blocker = held.enqueue({"block": True})
        wait_until(lambda: worker.running == 1 and sleepers(db_conn) == [], message="busy: the claim came back full")
        notifications(listener, "conductor")
        with request.transaction():
            late = app.enqueue("held", {}, conn=request)  # reads the sleepers now: none
            gate.set()
            wait_until(lambda: app.get(blocker).status == "succeeded" and sleepers(db_conn) == [(wid, "held")],
                       message="the worker went idle and marked itself")  # fmt: skip
        wait_until(lambda: app.get(late).status != "queued", timeout=BOUND,
                   message="the task committed after the mark was not claimed: a lost wake-up")
        assert notifications(listener, "conductor") == [], "the late enqueue notified nobody: the re-check found it"


def queued(conn: Conn) -> int:
    return int(conn.execute("select count(*) from conductor.tasks where status = 'queued'").fetchone()[0])


def finished_count(conn: Conn) -> int:
    return int(conn.execute("select count(*) from conductor.tasks where status = 'succeeded'").fetchone()[0])


# -- the marks ---------------------------------------------------------------------------


def test_an_idle_worker_marks_itself_and_a_busy_one_does_not(
    app: Conductor, db_conn: Conn, gate: threading.Event
) -> None:
    @app.task("gated", queue="b")
    def gated(payload: Any) -> None:
        gate.wait(30)

    with idle_worker(app, queues=["b"], concurrency=2) as worker, idle_worker(app, concurrency=1) as anywhere:
        wid = worker.worker_id
        wait_until(lambda: sleepers(db_conn) == sorted([(wid, "b"), (anywhere.worker_id, "*")]),
                   message=lambda: f"sleepers {sleepers(db_conn)}")  # fmt: skip
        app.enqueue_many([("gated", {}) for _ in range(20)])
        # claims come back full: both have dropped their marks, and their slots are busy
        wait_until(lambda: worker.running == 2 and anywhere.running == 1 and sleepers(db_conn) == [],
                   message=lambda: f"running {worker.running}+{anywhere.running}, sleepers {sleepers(db_conn)}")  # fmt: skip
        gate.set()
        wait_until(lambda: queued(db_conn) == 0 and worker.running == anywhere.running == 0)
        wait_until(lambda: sleepers(db_conn) == sorted([(wid, "b"), (anywhere.worker_id, "*")]),
                   message=lambda: f"idle again: sleepers {sleepers(db_conn)}")  # fmt: skip
        anywhere.stop()
        assert sleepers(db_conn) == [(wid, "b")], "stop drops the marks"
    assert sleepers(db_conn) == []


def test_a_failing_sleep_is_logged_and_the_worker_polls(
    app: Conductor, db_conn: Conn, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    @app.task("poll.me")
    def poll_me(payload: Any) -> str:
        return "polled"

    # a server error in place of sleep(): the statement fails, the connection stays
    monkeypatch.setattr(queries, "SLEEP", "select %(worker_id)s::integer as settled")
    worker = idle_worker(app, poll_interval=0.3)
    with caplog.at_level("ERROR", logger="pyconductor"), worker:
        wait_until(lambda: "sleep failed" in caplog.text, message="the failure is logged")
        task_id = poll_me.enqueue()
        wait_until(lambda: app.get(task_id).status == "succeeded", message="the poll claims it")
        assert worker.producer.thread.is_alive()


# -- no notification when no one waits -----------------------------------------------------


def test_enqueues_into_a_busy_fleet_notify_nobody(
    app: Conductor, db_conn: Conn, listener: Conn, gate: threading.Event
) -> None:
    @app.task("deep", queue="deep")
    def deep(payload: Any) -> None:
        gate.wait(30)

    @app.task("nobody", queue="nobody")
    def nobody(payload: Any) -> None:
        return None

    with idle_worker(app, queues=["deep"], kinds=["deep"], concurrency=2) as worker:
        wait_until(lambda: sleepers(db_conn) == [(worker.worker_id, "deep")])
        notifications(listener, "conductor")
        for _ in range(5):
            nobody.enqueue()
        assert notifications(listener, "conductor") == [], "no one sleeps on queue 'nobody'"
        app.enqueue_many([("deep", {}) for _ in range(100)])
        wait_until(lambda: worker.running == 2 and sleepers(db_conn) == [],
                   message=lambda: f"running {worker.running}, sleepers {sleepers(db_conn)}")
        notifications(listener, "conductor")  # the first batch woke the sleeper
        for n in range(50):
            if n % 2:
                deep.enqueue()
            else:
                app.enqueue_many([("deep", {}), ("deep", {})])
        assert notifications(listener, "conductor") == [], "the worker is busy: nobody sleeps on 'deep'"
        assert sleepers(db_conn) == []
        gate.set()


def test_a_completion_without_a_waiter_notifies_nobody(app: Conductor, db_conn: Conn, listener: Conn) -> None:
    @app.task("quiet")
    def quiet(payload: Any) -> str:
        return "done"

    with idle_worker(app, concurrency=2):
        ids = [quiet.enqueue() for _ in range(5)]
        wait_until(lambda: all(app.get(i).status == "succeeded" for i in ids))
    assert notifications(listener, "conductor_done") == []


# -- result() ---------------------------------------------------------------------------


def claim_and_complete(conn: Conn, result: dict[str, Any]) -> int:
    """Run the one queued task by hand (a worker's claim and complete)."""
    attempt_id, task_id = conn.execute(
        "select attempt_id, task_id from conductor.claim(worker_id => 'hand', queues => array['hand'])").fetchone()
    conn.execute("select conductor.complete(attempt_id => %s, result => %s)", (attempt_id, Jsonb(result)))
    return int(task_id)


def test_result_watches_its_task_and_its_completion_notifies_it(
    app: Conductor, db_conn: Conn, listener: Conn
) -> None:
    task_id = app.enqueue("by.hand", {}, queue="hand")
    got: list[Any] = []
    waiter = threading.Thread(target=lambda: got.append(app.result(task_id, timeout=30)))
    waiter.start()
    try:
        wait_until(lambda: waiters(db_conn, task_id) == 1, message="result() registers its interest")
    finally:
        claim_and_complete(db_conn, {"by": "hand"})
        waiter.join(30)
    assert got and got[0].status == "succeeded" and got[0].result == {"by": "hand"}
    assert waiters(db_conn, task_id) == 0
    assert notifications(listener, "conductor_done") == [str(task_id)]


def test_result_timing_out_removes_its_row(app: Conductor, db_conn: Conn) -> None:
    task_id = app.enqueue("by.hand", {}, queue="hand")
    with pytest.raises(TimeoutError):
        app.result(task_id, timeout=0.3)
    assert waiters(db_conn, task_id) == 0


def test_result_of_a_finished_task_leaves_no_row(app: Conductor, db_conn: Conn) -> None:
    task_id = app.enqueue("by.hand", {}, queue="hand")
    claim_and_complete(db_conn, {})
    assert app.result(task_id, timeout=5).status == "succeeded"
    assert waiters(db_conn, task_id) == 0


def test_async_result_watches_times_out_and_unwatches(db_dsn: str, db_conn: Conn, listener: Conn) -> None:
    async def until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, "condition not met in time"
            await asyncio.sleep(0.01)

    async def main() -> tuple[Any, int, int]:
        async with AsyncConductor(db_dsn) as aapp:
            slow = await aapp.enqueue("by.hand", {}, queue="hand")
            with pytest.raises(TimeoutError):
                await aapp.result(slow, timeout=0.3)
            assert waiters(db_conn, slow) == 0, "a timeout unwatches"
            waiting = asyncio.create_task(aapp.result(slow, timeout=30))
            await until(lambda: waiters(db_conn, slow) == 1)
            done = await asyncio.to_thread(claim_and_complete, db_conn, {"async": True})
            return await asyncio.wait_for(waiting, 30), done, slow

    info, done, slow = asyncio.run(main())
    assert done == slow and info.status == "succeeded" and info.result == {"async": True}
    assert waiters(db_conn, slow) == 0
    assert notifications(listener, "conductor_done") == [str(slow)]


def test_result_honours_its_timeout_while_another_session_holds_the_task_row(
    app: Conductor, db_conn: Conn, db_dsn: str
) -> None:
    """A client's cancel() left open in its transaction holds the task's row:
    watch() waits for it at most 1 s (then 55P03) and result() looks again, so
    its timeout holds; v0.2.0's watch waited as long as the holder stayed open.
    Once the cancel commits, result() answers the task cancelled."""
    task_id = app.enqueue("by.hand", {}, queue="hand")
    db_conn.execute("select conductor.claim(worker_id => 'hand', queues => array['hand'])")
    outcome: list[Any] = []

    def wait(timeout: float) -> None:
        try:
            outcome.append(app.result(task_id, timeout=timeout))
        except Exception as exc:  # noqa: BLE001 - recorded for the assertion
            outcome.append(exc)

    with psycopg.connect(db_dsn) as holder:
        assert holder.execute("select conductor.cancel(%s)", (task_id,)).fetchone()[0] == 1
        started = time.monotonic()
        waiter = threading.Thread(target=wait, args=(0.5,), daemon=True)
        waiter.start()
        waiter.join(10)
        took = time.monotonic() - started
        if waiter.is_alive():
            holder.rollback()  # let it go, so the test ends
            waiter.join(10)
            pytest.fail("result() did not honour its timeout while another session held the task's row")
        assert isinstance(outcome[0], TimeoutError) and took < 3, (outcome, took)
        waiter = threading.Thread(target=wait, args=(30,), daemon=True)
        waiter.start()
        wait_until(lambda: db_conn.execute(
            "select count(*) from pg_stat_activity where wait_event_type = 'Lock' and query like '%conductor.watch%'"
        ).fetchone()[0] == 1, message="result() waits in watch for the held row")  # fmt: skip
        holder.commit()
        waiter.join(30)
    assert outcome[1].status == "cancelled"
    assert waiters(db_conn, task_id) == 0


# -- missed notifications: "if work keeps starting about 10 seconds late, check the pooler" --


@pytest.mark.parametrize("listener", ["cut off", "working"])
def test_work_the_poll_finds_instead_of_a_notification_is_counted_and_named(
    app: Conductor, listener: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27. Cut off: the listener LISTENs where nobody notifies (as a LISTEN through a
    transaction-mode pooler hears nothing), so each task enqueued while the worker sleeps
    waits for the poll (1 s): each such claim counts, the third in a row logs one WARNING
    naming the pooler, and /health and /metrics say so. Working: every task starts on its
    notification, and nothing counts."""
    if listener == "cut off":
        monkeypatch.setattr(queries, "LISTEN", "listen conductor_nobody_notifies")

    @app.task("late.or.not")
    def late_or_not(payload: Any) -> int:
        return int(payload["i"])

    caplog.set_level("INFO", logger="pyconductor")
    worker = idle_worker(app, queues=["missed"], poll_interval=1.0)
    started: list[float] = []
    with EndpointServer(worker, "127.0.0.1", 0) as server, worker:
        producer = worker.producer
        for i in range(4):
            # asleep, marked and settled: an enqueue now must notify it
            wait_until(lambda: producer.sleeping and producer._settled, timeout=10, interval=0.01)
            at = time.monotonic()
            task_id = app.enqueue("late.or.not", {"i": i}, queue="missed")
            assert app.result(task_id, timeout=10).result == i
            started.append(time.monotonic() - at)
        missed = worker.health()["missed_notifications"]
        with urllib.request.urlopen(server.url + "/health", timeout=10) as resp:
            body = json.loads(resp.read())
        with urllib.request.urlopen(server.url + "/metrics", timeout=10) as resp:
            metrics = resp.read().decode()
    warnings = [r for r in caplog.records if "check the pooler" in r.getMessage()]
    if listener == "cut off":
        assert min(started) > 0.5, started  # each waited for the poll
        assert missed["total"] == 4 and missed["in_a_row"] == 4 and "check the pooler" in missed["warning"], missed
        assert body["missed_notifications"] == missed and body["status"] == "ok", body
        assert [r.levelname for r in warnings] == ["WARNING"], warnings  # once, not per claim
        assert "LISTEN needs a session-mode or direct connection" in warnings[0].getMessage()
    else:
        assert max(started) < BOUND, started
        assert missed == {"total": 0, "in_a_row": 0, "warning": None}, missed
        assert body["missed_notifications"] == missed
        assert warnings == []
    assert f"conductor_worker_missed_notifications_total {float(missed['total'])}" in metrics
    assert f"conductor_worker_missed_notifications_in_a_row {float(missed['in_a_row'])}" in metrics
