"""TaskContext cancellation without a database: the flag, the first reason, and
the waiter's wake-up (its Event is made only when a handler waits)."""

from __future__ import annotations

import threading

import pytest

from pyconductor.context import TaskContext
from pyconductor.errors import TaskCancelled


def _ctx() -> TaskContext:
    return TaskContext(task_id=1, attempt_id=10, attempt=1, kind="k", queue="q")


def test_a_fresh_context_is_not_cancelled_and_a_wait_times_out() -> None:
    ctx = _ctx()
    assert not ctx.cancelled
    assert ctx.cancel_reason is None
    assert ctx.wait_cancelled(0.01) is False
    ctx.raise_if_cancelled()


def test_cancel_before_the_wait_returns_at_once_and_the_first_reason_sticks() -> None:
    ctx = _ctx()
    ctx.cancel("lost")
    ctx.cancel("released")
    assert ctx.cancelled
    assert ctx.cancel_reason == "lost"
    assert ctx.wait_cancelled(30) is True  # would block 30 s if the flag were ignored
    with pytest.raises(TaskCancelled, match="lost"):
        ctx.raise_if_cancelled()


def test_cancel_from_another_thread_wakes_a_waiting_handler() -> None:
    ctx = _ctx()
    answers: list[bool] = []
    waiting = threading.Event()

    def handler() -> None:
        waiting.set()
        answers.append(ctx.wait_cancelled(30))

    thread = threading.Thread(target=handler, daemon=True)
    thread.start()
    assert waiting.wait(5)
    ctx.cancel("cancelled")
    thread.join(5)
    assert not thread.is_alive(), "the waiting handler was not woken by cancel()"
    assert answers == [True]


def test_many_waiters_and_a_cancel_racing_them_all_wake() -> None:
    for _ in range(200):
        ctx = _ctx()
        answers: list[bool] = []
        threads = [threading.Thread(target=lambda: answers.append(ctx.wait_cancelled(30)), daemon=True)
                   for _ in range(3)]  # fmt: skip
        for thread in threads:
            thread.start()
        ctx.cancel("cancelled")  # before, during or after the waiters make the Event
        for thread in threads:
            thread.join(5)
        assert answers == [True, True, True]
