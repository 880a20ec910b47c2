"""Durable runs from Python: ctx.step / spawn / wait_for_children / wait_for_event /
sleep, Conductor.result / emit_event / retry(keep_steps), against a real
PostgreSQL with workers embedded in the test process.

(Crashes with real processes and concurrency keys under load:
test_runs_processes.py.)
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from helpers import wait_until

from pyconductor import Conductor, EventTimeout, TaskCancelled, TaskContext, UpdateTimeout, Worker

Conn = psycopg.Connection[tuple[object, ...]]


@pytest.fixture
def app(db_dsn: str) -> Iterator[Conductor]:
    with Conductor(db_dsn, pool_max=4) as app:
        yield app


def fast_worker(app: Conductor, **options: Any) -> Worker:
    """Fast heartbeat and poll; reap_interval stays long (30 s) unless a test says
    otherwise, so a wait ending on time proves the reaper follows next_wake."""
    defaults: dict[str, Any] = {
        "heartbeat_interval": 0.2, "poll_interval": 0.5, "reap_interval": 30, "shutdown_grace": 5,
        "run_scheduler": False, "concurrency": 8,
    }  # fmt: skip
    return Worker(app, **{**defaults, **options})


def status(app: Conductor, task_id: int) -> str:
    return app.get(task_id).status


def statuses(conn: Conn, ids: list[int]) -> dict[str, int]:
    rows = conn.execute("select status::text, count(*) from conductor.tasks where id = any(%s) group by 1",
                        (ids,)).fetchall()  # fmt: skip
    return {str(s): int(n) for s, n in rows}  # type: ignore[call-overload]


def steps_of(conn: Conn, task_id: int) -> dict[str, Any]:
    rows = conn.execute("select name, result from conductor.steps where task_id = %s", (task_id,)).fetchall()
    return {str(name): result for name, result in rows}


# -- steps -------------------------------------------------------------------------------


def test_steps_are_numbered_checkpointed_and_skipped_on_retry(app: Conductor, db_conn: Conn) -> None:
    ran: list[tuple[int, str]] = []
    failed_once: set[int] = set()

    @app.task("steps.loop")
    def loop(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
        def work(name: str, value: Any) -> Any:
            ran.append((ctx.task_id, name))
            return value

        first = ctx.step("prepare", lambda: work("prepare", {"ready": True}))
        totals = [ctx.step("item", lambda i=i: work(f"item{i}", i * 10)) for i in range(3)]
        if ctx.task_id not in failed_once:
            failed_once.add(ctx.task_id)
            raise RuntimeError("after the steps")
        last = ctx.step("finish", lambda: work("finish", (1, 2)))  # a tuple is stored as a list
        return {"first": first, "totals": totals, "last": last}

    kept, fresh = loop.enqueue({}), loop.enqueue({})
    with fast_worker(app):
        for task_id in (kept, fresh):
            info = app.result(task_id, timeout=10)
            assert info.status == "failed" and "after the steps" in (info.error or "")
            assert steps_of(db_conn, task_id) == {"prepare": {"ready": True}, "item": 0, "item#2": 10, "item#3": 20}
        ran.clear()

        assert app.retry(kept) == kept  # keep_steps=True: resumes after them
        info = app.result(kept, timeout=10)
        assert info.status == "succeeded", info.error
        assert info.result == {"first": {"ready": True}, "totals": [0, 10, 20], "last": [1, 2]}
        assert ran == [(kept, "finish")], "finished steps never run again"

        ran.clear()
        app.retry(fresh, keep_steps=False)
        assert app.result(fresh, timeout=10).status == "succeeded"
        assert [name for _, name in ran] == ["prepare", "item0", "item1", "item2", "finish"], "every step again"


def test_a_non_json_step_result_is_a_type_error_in_the_handler(app: Conductor, db_conn: Conn) -> None:
    @app.task("steps.bad")
    def bad(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
        try:
            ctx.step("object", lambda: object())
        except TypeError as exc:
            caught = str(exc)
        ctx.step("nan", lambda: float("nan"))  # raises: the task fails with it
        return {"caught": caught}

    task_id = bad.enqueue({})
    with fast_worker(app):
        info = app.result(task_id, timeout=10)
    assert info.status == "failed"
    assert info.error is not None and info.error.startswith("TypeError: step 'nan' of task")
    assert "not JSON" in info.error
    assert steps_of(db_conn, task_id) == {}, "nothing is checkpointed"


def test_a_step_refused_because_the_task_was_cancelled_discards_the_outcome(app: Conductor, db_conn: Conn) -> None:
    started, go = threading.Event(), threading.Event()
    seen: list[BaseException] = []

    @app.task("steps.cancelled")
    def slow(payload: dict[str, Any], ctx: TaskContext) -> str:
        ctx.step("one", lambda: 1)
        started.set()
        go.wait(10)
        try:
            ctx.step("two", lambda: 2)
        except TaskCancelled as exc:
            seen.append(exc)
            raise
        return "unreachable"

    task_id = slow.enqueue({})
    # a slow heartbeat, so the refusal comes from save_step, not from a beat
    with fast_worker(app, heartbeat_interval=30) as worker:
        assert started.wait(10)
        app.cancel(task_id)
        go.set()
        wait_until(lambda: worker.stats["refused"] == 1, timeout=10)
        assert worker.stats["failed"] == 0 and worker.stats["succeeded"] == 0
        assert worker.held == []
    assert len(seen) == 1 and seen[0].sqlstate == "QC202"
    assert status(app, task_id) == "cancelled"
    assert steps_of(db_conn, task_id) == {"one": 1}


def test_a_step_refused_because_the_lease_was_lost_discards_the_outcome(app: Conductor, db_conn: Conn) -> None:
    """A zombie: the lease expires while the handler is stuck (no heartbeat), the
    task is reaped and runs again on the same worker; the stuck handler's next
    step is refused with LeaseLost, and only the second run's result counts."""
    started, go = threading.Event(), threading.Event()
    seen: list[BaseException] = []

    @app.task("steps.zombie")
    def zombie(payload: dict[str, Any], ctx: TaskContext) -> int:
        ctx.step("one", lambda: 1)
        if ctx.recoveries == 0:
            started.set()
            go.wait(10)
            try:
                ctx.step("two", lambda: "zombie")
            except Exception as exc:  # noqa: BLE001 - recorded and re-raised
                seen.append(exc)
                raise
        return ctx.step("two", lambda: ctx.attempt_id)

    task_id = zombie.enqueue({})
    with fast_worker(app, lease=1, heartbeat_interval=60) as worker:
        assert started.wait(10)
        info = app.result(task_id, timeout=10)  # the second run, woken by the reaper at the lease's expiry
        go.set()
        wait_until(lambda: worker.stats["refused"] == 1, timeout=10)
        assert worker.stats["failed"] == 0
    assert len(seen) == 1 and seen[0].sqlstate == "QC201", seen
    assert info.status == "succeeded" and info.recoveries == 1
    assert info.result == info.attempts[-1].id
    assert steps_of(db_conn, task_id) == {"one": 1, "two": info.attempts[-1].id}


def test_spawn_takes_the_childs_registered_defaults_and_options(app: Conductor, db_conn: Conn) -> None:
    @app.task("opt.child", queue="kids", priority=5)
    def child(payload: dict[str, Any]) -> None:
        return None

    @app.task("opt.parent")
    def parent(payload: dict[str, Any], ctx: TaskContext) -> list[int]:
        ids = [ctx.spawn("opt.child"), ctx.spawn("opt.child", {"x": 1}, priority=9, dedupe_key="opt-1",
                                                 concurrency_key="k"),
               ctx.spawn("opt.child", {"x": 2}, dedupe_key="opt-2", dedupe_window=timedelta(hours=1),
                         dedupe_states=["queued", "running", "waiting", "succeeded"]),
               ctx.spawn("opt.child", {"x": 3}, dedupe_key="opt-2", dedupe_window=3600, on_duplicate="ignore",
                         dedupe_states=["queued", "running", "waiting", "succeeded"])]  # fmt: skip
        ctx.wait_for_children()
        return ids

    task_id = parent.enqueue({})
    with fast_worker(app):
        info = app.result(task_id, timeout=10)
    assert info.status == "succeeded", info.error
    rows = db_conn.execute("select queue, priority, payload, dedupe_key, concurrency_key, parent_id, root_id"
                           " from conductor.tasks where id = any(%s) order by id", (info.result,)).fetchall()  # fmt: skip
    assert info.result[2] == info.result[3], "the second spawn of the held key answered the first child"
    assert rows == [("kids", 5, {}, None, None, task_id, task_id),
                    ("kids", 9, {"x": 1}, "opt-1", "k", task_id, task_id),
                    ("kids", 5, {"x": 2}, "opt-2", None, task_id, task_id)]  # fmt: skip
    with pytest.raises(TypeError, match="unknown spawn option"):
        TaskContext(task_id=1, attempt_id=1, attempt=1, kind="k", queue="q").spawn("x", nope=1)


# -- spawn and children ------------------------------------------------------------------


def test_fan_out_of_50_children_joined_by_the_parent(app: Conductor, db_conn: Conn) -> None:
    runs: list[int] = []
    parent_waits = threading.Event()

    @app.task("fan.child")
    def child(payload: dict[str, int]) -> int:
        # Children end only once the parent has parked its wait: else the 50 may
        # all finish while it still spawns, and its wait is ready without parking.
        if not parent_waits.is_set():
            wait_until(lambda: app.get(task_id).status == "waiting", timeout=30)
            parent_waits.set()
        return payload["n"] * 2

    @app.task("fan.parent")
    def parent(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
        runs.append(ctx.attempt_id)
        ids = [ctx.spawn("fan.child", {"n": n}) for n in range(50)]
        outcomes = ctx.wait_for_children()
        assert [o["task_id"] for o in outcomes] == ids
        return {"sum": sum(o["result"] for o in outcomes), "statuses": sorted({o["status"] for o in outcomes})}

    task_id = parent.enqueue({})
    with fast_worker(app, concurrency=8):
        info = app.result(task_id, timeout=30)
    assert info.status == "succeeded", info.error
    assert info.result == {"sum": 2 * sum(range(50)), "statuses": ["succeeded"]}
    assert len(runs) == 2, "ran once to spawn and wait, once when the last child woke it"
    children = db_conn.execute("select count(*), count(distinct root_id), min(root_id) from conductor.tasks"
                               " where parent_id = %s", (task_id,)).fetchone()  # fmt: skip
    assert children == (50, 1, task_id), "50 children (none spawned twice by the replay), one run"
    names = steps_of(db_conn, task_id)
    assert "spawn:fan.child" in names and "spawn:fan.child#50" in names and "children" in names


def test_a_failed_child_is_seen_by_the_parent(app: Conductor) -> None:
    @app.task("fail.child")
    def child(payload: dict[str, Any]) -> str:
        if payload["bad"]:
            raise ValueError("bad child")
        return "ok"

    @app.task("fail.parent")
    def parent(payload: dict[str, Any], ctx: TaskContext) -> list[Any]:
        ctx.spawn("fail.child", {"bad": False})
        ctx.spawn("fail.child", {"bad": True})
        return [(o["status"], o["result"], o["error"]) for o in ctx.wait_for_children()]

    task_id = parent.enqueue({})
    with fast_worker(app):
        info = app.result(task_id, timeout=10)
    assert info.status == "succeeded"
    assert info.result == [["succeeded", "ok", None], ["failed", None, "ValueError: bad child"]]


def test_wait_for_any_child(app: Conductor) -> None:
    @app.task("any.child")
    def child(payload: dict[str, Any], ctx: TaskContext) -> str:
        if payload["slow"]:
            ctx.wait_for_event("any.never")
        return "fast"

    @app.task("any.parent")
    def parent(payload: dict[str, Any], ctx: TaskContext) -> list[str]:
        ctx.spawn("any.child", {"slow": True})
        ctx.spawn("any.child", {"slow": False})
        return sorted(o["status"] for o in ctx.wait_for_children(mode="any"))

    task_id = parent.enqueue({})
    with fast_worker(app):
        info = app.result(task_id, timeout=10)
    assert info.status == "succeeded" and info.result == ["succeeded", "waiting"]


def test_children_wait_times_out_on_time_and_cancels_the_children(app: Conductor, db_conn: Conn) -> None:
    @app.task("slow.child")
    def child(payload: dict[str, Any], ctx: TaskContext) -> None:
        ctx.wait_for_event("slow.never")

    @app.task("slow.parent")
    def parent(payload: dict[str, Any], ctx: TaskContext) -> None:
        for _ in range(3):
            ctx.spawn("slow.child")
        ctx.wait_for_children(timeout=1)

    task_id = parent.enqueue({})
    start = time.monotonic()
    with fast_worker(app):  # reap_interval 30 s: only next_wake can end the wait on time
        info = app.result(task_id, timeout=10)
    elapsed = time.monotonic() - start
    assert info.status == "timed_out", info
    assert elapsed < 3.5, f"a 1 s timeout ended after {elapsed:.1f}s"
    kids = [r[0] for r in db_conn.execute("select id from conductor.tasks where parent_id = %s", (task_id,))]
    assert statuses(db_conn, kids) == {"cancelled": 3}


def test_cancelling_the_root_cancels_the_tree(app: Conductor, db_conn: Conn) -> None:
    @app.task("tree.leaf")
    def leaf(payload: dict[str, Any], ctx: TaskContext) -> None:
        ctx.wait_for_event("tree.never")

    @app.task("tree.mid")
    def mid(payload: dict[str, Any], ctx: TaskContext) -> None:
        ctx.spawn("tree.leaf")
        ctx.spawn("tree.leaf")
        ctx.wait_for_children()

    @app.task("tree.root")
    def root(payload: dict[str, Any], ctx: TaskContext) -> None:
        ctx.spawn("tree.mid")
        ctx.spawn("tree.mid")
        ctx.wait_for_children()

    root_id = root.enqueue({})

    def tree() -> list[int]:
        return [r[0] for r in db_conn.execute("select id from conductor.tasks where root_id = %s", (root_id,))]

    with fast_worker(app):
        wait_until(lambda: len(tree()) == 7 and statuses(db_conn, tree()) == {"waiting": 7}, timeout=10)
        assert app.cancel(root_id) == 7
        info = app.result(root_id, timeout=5)
    assert info.status == "cancelled"
    assert statuses(db_conn, tree()) == {"cancelled": 7}


# -- events and sleep --------------------------------------------------------------------


def test_event_emitted_before_the_wait(app: Conductor) -> None:
    @app.task("ev.before")
    def waiter(payload: dict[str, Any], ctx: TaskContext) -> Any:
        return ctx.wait_for_event("ev.early")

    assert app.emit_event("ev.early", {"v": 1}) == 0
    assert app.emit_event("ev.early", {"v": 2}) == 0  # the first payload wins
    task_id = waiter.enqueue({})
    with fast_worker(app) as worker:
        info = app.result(task_id, timeout=10)
        assert worker.stats["suspended"] == 0, "no waiting: the event was there"
    assert info.status == "succeeded" and info.result == {"v": 1}


def test_wait_before_emit_and_two_waiters(app: Conductor, db_conn: Conn) -> None:
    runs: list[int] = []

    @app.task("ev.after")
    def waiter(payload: dict[str, Any], ctx: TaskContext) -> Any:
        runs.append(ctx.task_id)
        before = ctx.step("before", lambda: payload["n"])
        got = ctx.wait_for_event("ev.approve")
        return {"before": before, "got": got}

    a, b = waiter.enqueue({"n": 1}), waiter.enqueue({"n": 2})
    with fast_worker(app) as worker:
        wait_until(lambda: statuses(db_conn, [a, b]) == {"waiting": 2}, timeout=10)
        # the handlers return just after their suspend commits
        wait_until(lambda: worker.running == 0 and worker.held == [], timeout=10)
        woken = app.emit_event("ev.approve", {"by": "alice"})
        # emit_event skips a waiter another transaction holds this instant (never waits);
        # reap() wakes it at its next pass, as here (CI on a loaded machine woke 1 of 2)
        assert woken in (1, 2)
        if woken == 1:
            db_conn.execute("select conductor.reap()")
        ra, rb = app.result(a, timeout=10), app.result(b, timeout=10)
    assert ra.result == {"before": 1, "got": {"by": "alice"}}
    assert rb.result == {"before": 2, "got": {"by": "alice"}}
    assert sorted(runs) == sorted([a, a, b, b]), "each ran twice: to wait, and woken"
    outcomes = [a.outcome for a in ra.attempts]
    assert outcomes == ["suspended", "succeeded"]
    assert app.emit_event("ev.approve", {"by": "bob"}) == 0, "no one waits any more"


def test_event_wait_times_out_on_time(app: Conductor, db_conn: Conn) -> None:
    @app.task("ev.timeout")
    def waiter(payload: dict[str, Any], ctx: TaskContext) -> Any:
        try:
            ctx.wait_for_event("ev.never", timeout=1)
        except EventTimeout as exc:
            return {"timed_out": exc.event}
        return "emitted"

    task_id = waiter.enqueue({})
    start = time.monotonic()
    with fast_worker(app):  # reap_interval 30 s
        info = app.result(task_id, timeout=10)
    elapsed = time.monotonic() - start
    assert info.result == {"timed_out": "ev.never"}
    assert 0.9 < elapsed < 3.0, f"a 1 s timeout ended after {elapsed:.2f}s"
    assert steps_of(db_conn, task_id) == {"event:ev.never": {"event": "ev.never", "timed_out": True}}
    assert app.emit_event("ev.never") == 0, "a timed-out wait is over"


def test_update_wait_times_out_on_time(app: Conductor, db_conn: Conn) -> None:
    @app.task("upd.timeout")
    def waiter(payload: dict[str, Any], ctx: TaskContext) -> Any:
        try:
            ctx.wait_for_update("never", timeout=1)
        except UpdateTimeout as exc:
            return {"timed_out": exc.name}
        return "received"

    task_id = waiter.enqueue({})
    start = time.monotonic()
    with fast_worker(app):  # reap_interval 30 s
        info = app.result(task_id, timeout=10)
    elapsed = time.monotonic() - start
    assert info.result == {"timed_out": "never"}
    assert 0.9 < elapsed < 3.0, f"a 1 s timeout ended after {elapsed:.2f}s"
    (step,) = steps_of(db_conn, task_id).values()
    assert step["timed_out"] is True and "payload" not in step


def test_durable_sleep_wakes_on_time(app: Conductor, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="pyconductor")

    @app.task("sleepy")
    def sleepy(payload: dict[str, Any], ctx: TaskContext) -> int:
        ctx.sleep(0.8)
        ctx.sleep(0.4)  # 'sleep#2'
        return ctx.attempt

    task_id = sleepy.enqueue({})
    start = time.monotonic()
    with fast_worker(app) as worker:  # reap_interval 30 s
        info = app.result(task_id, timeout=10)
        assert worker.stats["suspended"] == 2
    elapsed = time.monotonic() - start
    assert info.status == "succeeded"
    assert 1.1 < elapsed < 3.5, f"two sleeps of 1.2 s in all took {elapsed:.2f}s"
    # a sleep that ends is the reaper's routine, logged at INFO; only reclaims warn (issue 27)
    reaper = [r for r in caplog.records if r.getMessage().startswith("reaper ")]
    assert [r.levelname for r in reaper if "wait(s)" in r.getMessage()][:2] == ["INFO", "INFO"], reaper
    assert not [r for r in reaper if r.levelno >= logging.WARNING], reaper


def test_emit_racing_the_wait_never_loses_a_wake_up(db_dsn: str, db_conn: Conn) -> None:
    """Two connections, 100 rounds: one suspends a claimed task on an event inside a
    transaction while the other emits that event. Neither waits for the other (no lock
    between them). Whoever goes first, the wait's checkpoint holds the payload and the
    task is not left waiting: the emit wakes it, or, when each missed the other, the
    reap a worker runs after parking a wait does."""
    rounds = 100
    ids = [r[0] for r in db_conn.execute(
        "select conductor.enqueue(kind => 'race', payload => jsonb_build_object('i', g)) from generate_series(1, %s) g",
        (rounds,))]  # fmt: skip
    with psycopg.connect(db_dsn, autocommit=True) as waiter, psycopg.connect(db_dsn, autocommit=True) as emitter:
        rng = random.Random(4)
        outcomes: dict[str, int] = {"ready": 0, "waiting": 0, "woken by reap": 0}
        for i in range(rounds):
            (attempt_id, task_id), = waiter.execute(
                "select attempt_id, task_id from conductor.claim(worker_id => 'racer', max_tasks => 1)").fetchall()
            event = f"race-{i}"
            barrier = threading.Barrier(2)
            emitted: list[int] = []
            pause = rng.choice([0, 0, 0.0005, 0.001, 0.002])
            lead = rng.choice([0, 0, 0.002, 0.005])  # the emit first, now and then (pacing)

            def emit() -> None:
                barrier.wait()
                if pause:
                    time.sleep(pause)
                emitted.append(emitter.execute("select conductor.emit_event(name => %s, payload => %s::jsonb)",
                                               (event, f'{{"i": {i}}}')).fetchone()[0])  # fmt: skip

            thread = threading.Thread(target=emit)
            thread.start()
            with waiter.transaction():
                barrier.wait()
                if lead:
                    time.sleep(lead)
                state, result = waiter.execute(
                    "select * from conductor.suspend(attempt_id => %s, step => 'event:' || %s, wait_for => 'event',"
                    " event => %s)", (attempt_id, event, event)).fetchone()  # fmt: skip
                if rng.random() < 0.5:
                    waiter.execute("select pg_sleep(0.001)")  # hold the transaction open a little
            thread.join(10)
            outcomes[state] += 1
            if state == "waiting" and emitted == [0]:
                # each missed the other: the worker that parked the wait reaps next
                (reaped,), = waiter.execute("select conductor.reap()").fetchall()
                assert reaped == 1, f"round {i}: reap() woke {reaped}"
                outcomes["woken by reap"] += 1
            task_status, step = db_conn.execute(
                "select t.status::text, s.result from conductor.tasks t"
                " left join conductor.steps s on s.task_id = t.id and s.name = 'event:' || %s where t.id = %s",
                (event, task_id)).fetchone()  # fmt: skip
            assert step == {"event": event, "payload": {"i": i}}, f"round {i}: {state=} {task_status=} {step=}"
            if state == "ready":
                assert task_status == "running" and emitted == [0] and result == step
                waiter.execute("select conductor.complete(attempt_id => %s)", (attempt_id,))
            else:
                assert task_status == "queued", f"round {i}: lost wake-up, task {task_id} is {task_status}"
                db_conn.execute("select conductor.cancel(%s)", (task_id,))
        assert len(ids) == rounds
        print(f"\nemit racing suspend, {rounds} rounds: {outcomes}")
        # both orders happened, or the race was not a race
        assert outcomes["ready"] > 0 and outcomes["waiting"] > 0, outcomes


# -- slots -------------------------------------------------------------------------------


def test_waiting_runs_hold_no_slot(app: Conductor, db_conn: Conn) -> None:
    @app.task("slot.run")
    def run(payload: dict[str, Any], ctx: TaskContext) -> int:
        got = ctx.wait_for_event(f"slot-{payload['i']}")
        return int(got["i"]) * 3

    ids = app.enqueue_many([{"kind": "slot.run", "payload": {"i": i}} for i in range(100)])
    with fast_worker(app, concurrency=2, poll_interval=0.2) as worker:
        wait_until(lambda: statuses(db_conn, ids) == {"waiting": 100}, timeout=30,
                   message="all 100 runs waiting with 2 slots")  # fmt: skip
        wait_until(lambda: worker.running == 0 and worker.held == [], timeout=10)  # the last returns after its commit
        with app.connection() as conn, conn.transaction():
            for i in range(100):
                conn.execute("select conductor.emit_event(name => %s, payload => %s::jsonb)", (f"slot-{i}", f'{{"i": {i}}}'))
        wait_until(lambda: statuses(db_conn, ids) == {"succeeded": 100}, timeout=30)
        # the worker counts a success once complete_many has answered, just after the commit
        wait_until(lambda: worker.stats["succeeded"] == 100, timeout=10)
        assert worker.stats["suspended"] == 100
    results = dict(db_conn.execute("select id, result from conductor.tasks where id = any(%s)", (ids,)).fetchall())
    assert [results[t] for t in ids] == [i * 3 for i in range(100)]


# -- result() --------------------------------------------------------------------------------


def test_result_waits_for_a_task_finishing_in_another_thread(app: Conductor) -> None:
    go = threading.Event()

    @app.task("res.gated")
    def gated(payload: dict[str, Any]) -> dict[str, Any]:
        go.wait(10)
        return {"done": payload["x"]}

    task_id = gated.enqueue({"x": 7})
    other = gated.enqueue({"x": 8})
    got: list[Any] = []
    waiter = threading.Thread(target=lambda: got.append(app.result(task_id, timeout=10)))
    with fast_worker(app):
        waiter.start()
        time.sleep(0.3)  # the waiter is listening; nothing finished yet
        assert got == []
        go.set()
        waiter.join(10)
        assert app.result(other, timeout=10).result == {"done": 8}
    assert len(got) == 1 and got[0].status == "succeeded" and got[0].result == {"done": 7}


def test_result_times_out(app: Conductor) -> None:
    task_id = app.enqueue("res.nobody", {})
    start = time.monotonic()
    with pytest.raises(TimeoutError, match=f"task {task_id} is still queued"):
        app.result(task_id, timeout=0.5)
    assert 0.45 < time.monotonic() - start < 2.0


def test_result_of_a_finished_task_returns_at_once(app: Conductor, db_conn: Conn) -> None:
    task_id = app.enqueue("res.done", {})
    db_conn.execute("select conductor.cancel(%s)", (task_id,))
    assert app.result(task_id, timeout=0).status == "cancelled"


# -- the example ---------------------------------------------------------------------------


def test_the_order_pipeline_example_ships_an_order(db_dsn: str, db_conn: Conn, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    from helpers import REPO

    spec = importlib.util.spec_from_file_location("order_pipeline", REPO / "examples" / "order_pipeline.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)

    info = example.main(db_dsn, approver="bob")
    assert info.status == "succeeded", info.error
    assert info.result["status"] == "shipped" and info.result["approved_by"] == "bob"
    assert [r["sku"] for r in info.result["reserved"]] == ["SKU-1001", "SKU-2002", "SKU-3003"]
    out = capsys.readouterr().out
    # started, woken by the children (unless they had finished when it waited: then it went on), woken
    # by the approval; however many runs, each step ran once
    assert out.count("handler runs") in (2, 3), out
    assert out.count("charging") == 1 and out.count("shipping") == 1, out
    assert db_conn.execute("select count(*) from conductor.tasks where parent_id = %s", (info.id,)).fetchone() == (3,)
