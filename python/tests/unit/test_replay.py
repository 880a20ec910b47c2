"""The replay rule of TaskContext without a database (docs/protocol.md, "Replaying a run"):
recorded steps are asked for in saved order, a different name is a ReplayMismatch before
anything runs, and ctx.patched answers from where the run is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from pyconductor.context import TaskContext
from pyconductor.errors import NoRetry, ReplayMismatch


class _Runtime:
    """Records the statements a context sends; save_step answers the value saved."""

    def __init__(self) -> None:
        self.saved: list[str] = []

    def ctx_rows(self, ctx: TaskContext, query: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        self.saved.append(params["name"])
        return [{"result": True if params["result"] == "true" else params["result"]}]

    def spawn_defaults(self, kind: str) -> dict[str, Any]:
        return {}

    def waiting(self, ctx: TaskContext) -> None:
        pass


def _ctx(steps: dict[str, Any], order: list[str]) -> tuple[TaskContext, _Runtime]:
    runtime = _Runtime()
    row = {"task_id": 7, "attempt_id": 70, "attempt": 1, "kind": "order", "queue": "q", "payload": {},
           "steps": steps, "step_order": order, "code_version": "v1"}  # fmt: skip
    return TaskContext.from_claim(row, runtime=runtime), runtime


def test_recorded_steps_replay_in_order_then_new_ones_run() -> None:
    ctx, runtime = _ctx({"charge": 1, "reserve": 2}, ["charge", "reserve"])
    ran: list[str] = []
    assert ctx.code_version == "v1"
    assert ctx.step("charge", lambda: ran.append("charge")) == 1
    assert ctx.replaying
    assert ctx.step("reserve", lambda: ran.append("reserve")) == 2
    assert not ctx.replaying
    ctx.step("ship", lambda: ran.append("ship") or 3)
    assert ran == ["ship"] and runtime.saved == ["ship"]


def test_an_inserted_step_is_a_mismatch_naming_both_steps_and_nothing_runs() -> None:
    ctx, runtime = _ctx({"charge": 1, "event:paid": {"payload": {}}}, ["charge", "event:paid"])
    ctx.step("charge", lambda: 0)
    ran: list[str] = []
    with pytest.raises(ReplayMismatch, match=r"step 2 of the run is 'event:paid', the handler asks for 'audit'") as err:
        ctx.step("audit", lambda: ran.append("audit"))
    assert (err.value.position, err.value.expected, err.value.asked) == (2, "event:paid", "audit")
    assert isinstance(err.value, NoRetry) and err.value.sqlstate == "QC211"
    assert ran == [] and runtime.saved == []
    # swallowed by the handler, it still stops every later step, and the worker fails the task with it
    with pytest.raises(ReplayMismatch):
        ctx.step("later", lambda: ran.append("later"))
    assert ran == [] and ctx.mismatch is err.value


def test_a_renamed_step_is_a_mismatch() -> None:
    ctx, _ = _ctx({"charge": 1}, ["charge"])
    with pytest.raises(ReplayMismatch, match="'charge', the handler asks for 'charge_card'"):
        ctx.step("charge_card", lambda: 1)


def test_patched_is_false_on_the_old_path_true_on_new_work_and_stable() -> None:
    # a run recorded by v1: charge, then the event; v2 inserted an audit step behind a marker
    ctx, runtime = _ctx({"charge": 1, "event:paid": {"payload": {}}}, ["charge", "event:paid"])
    ctx.step("charge", lambda: 0)
    assert ctx.patched("audit") is False  # the run recorded the event here: old path
    assert ctx.wait_for_event("paid") == {}
    assert ctx.patched("notify") is True  # nothing left to replay: new code, checkpointed
    assert runtime.saved == ["patch:notify"]
    # the replay of a run that took the new path answers True again, without saving
    again, runtime2 = _ctx({"charge": 1, "patch:audit": True}, ["charge", "patch:audit"])
    again.step("charge", lambda: 0)
    assert again.patched("audit") is True and runtime2.saved == []
    with pytest.raises(ValueError, match="non-empty string"):
        again.patched("")


def test_a_context_without_an_order_replays_by_name() -> None:
    ctx = TaskContext(task_id=1, attempt_id=10, attempt=1, kind="k", queue="q", steps={"b": 2})
    assert ctx.step("b", lambda: 0) == 2
