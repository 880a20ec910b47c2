"""The in-process supervisor (pyconductor.services): one start order, the reverse stop order,
a failed start undone; and the one run loop (pyconductor.signals.run_until_stopped)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from pyconductor.services import Services
from pyconductor.signals import StopRequest, run_until_stopped


def recorder(calls: list[str], name: str, fail: bool = False) -> tuple[Callable[[], None], Callable[[], None]]:
    def start() -> None:
        calls.append(f"start {name}")
        if fail:
            raise RuntimeError(f"{name} cannot start")

    def stop() -> None:
        calls.append(f"stop {name}")
        if name == "b":
            raise RuntimeError("b's stop fails")

    return start, stop


def test_services_start_in_order_and_stop_in_reverse_each_stop_tried(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[str] = []
    services = Services()
    for name in ("a", "b", "c"):
        services.add(name, *recorder(calls, name))
    assert services.names == ["a", "b", "c"]
    services.start()
    with caplog.at_level(logging.ERROR, logger="pyconductor"):
        services.stop()
    assert calls == ["start a", "start b", "start c", "stop c", "stop b", "stop a"]
    assert "b did not stop cleanly" in caplog.text  # and a was stopped all the same
    services.stop()
    assert len(calls) == 6, "what stopped is not stopped again"


def test_a_start_that_fails_stops_what_started_before_it() -> None:
    calls: list[str] = []
    services = Services()
    services.add("a", *recorder(calls, "a"))
    services.add("c", *recorder(calls, "c", fail=True))
    services.add("d", *recorder(calls, "d"))
    with pytest.raises(RuntimeError, match="c cannot start"):
        services.start()
    assert calls == ["start a", "start c", "stop a"]


def test_run_until_stopped_returns_the_exit_code_a_process_stopped_itself_with() -> None:
    calls: list[str] = []
    request = StopRequest()
    assert not request.exits_now()
    code = run_until_stopped(lambda: (calls.append("start"), request.exit_with(3)), lambda: calls.append("stop"),
                             request, "stopping", {})  # fmt: skip
    assert (code, calls) == (3, ["start", "stop"])
    assert not request.exits_now(), "a stop the process began itself: the first signal still only asks"
    asked = StopRequest()
    asked.ask()
    assert asked.exits_now(), "after a stop asked from outside, a signal means now"


def test_worker_settings_group_by_name_and_refuse_an_unknown_one() -> None:
    """Worker's timings and reporting: given grouped or each by its name, as run_worker(app,
    **options) and serve's worker_options pass them."""
    from pyconductor.worker_settings import Reporting, Timings, grouped

    timings, reporting = grouped({"lease": 60, "report_batch": 10}, Timings(shutdown_grace=5))
    assert timings == Timings(lease=60, shutdown_grace=5)
    assert reporting == Reporting(report_batch=10)
    with pytest.raises(TypeError, match="unexpected keyword argument 'leese'"):
        grouped({"leese": 60})


def test_the_worker_keywords_type_every_grouped_setting_and_nothing_else() -> None:
    """WorkerSettings (what a type checker reads for Worker(app, lease=60)) names each field of
    Timings and Reporting with the field's own type, so the two cannot drift apart."""
    from dataclasses import fields
    from typing import get_type_hints

    from pyconductor.worker_settings import Reporting, Timings, WorkerSettings

    grouped_fields = {name: hint for group in (Timings, Reporting) for name, hint in get_type_hints(group).items()}
    assert {f.name for group in (Timings, Reporting) for f in fields(group)} == set(grouped_fields)
    assert get_type_hints(WorkerSettings) == grouped_fields
