"""The worker's reaper runs at its interval under load (issue 26).

Every claim tells the reaper when its lease ends (``Reaper.expect``). In
v0.2.0 that woke the reaper to reap again whenever a claim came while a reap
ran, so under load it reaped back to back (each pass walking the running
tasks) instead of every ``interval``. An expectation only moves the next reap
earlier; ``nudge`` (a handler parked a wait) reaps at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from helpers import wait_until

from pyconductor.link import Link
from pyconductor.maintenance import Reaper


@pytest.fixture
def reaper(db_dsn: str, request: pytest.FixtureRequest) -> Iterator[Reaper]:
    halt = threading.Event()
    link = Link(db_dsn, "reap", "test-reaper")
    service = Reaper(link, halt, interval=getattr(request, "param", 30.0))
    service.start()
    wait_until(lambda: service.passes >= 1, message="the first reap")
    yield service
    halt.set()
    service.stop()
    service.thread.join(timeout=5)
    link.close()


@pytest.mark.parametrize("reaper", [0.5], indirect=True)
def test_claims_that_expect_later_leases_leave_it_at_its_interval(reaper: Reaper) -> None:
    started = time.monotonic()
    stop_at = started + 1.5
    expectations = 0
    while time.monotonic() < stop_at:  # claims without pause (so some come while a reap runs), leases of 60 s
        reaper.expect(time.monotonic() + 60)
        expectations += 1
        time.sleep(0)
    assert expectations > 1000
    # the first reap, one every 0.5 s while the claims came, and one that may have begun as they ended
    passes = reaper.passes
    assert passes <= 1 + int((time.monotonic() - started) / 0.5) + 1, (
        f"{passes} reaps for {expectations} claims in 1.5 s, interval 0.5 s")


def test_a_lease_ending_before_the_next_reap_brings_that_reap_forward(reaper: Reaper) -> None:
    expected_at = time.monotonic() + 0.3
    reaper.expect(expected_at)
    wait_until(lambda: reaper.passes >= 2, timeout=5, message="a reap at the expected lease end")
    assert time.monotonic() >= expected_at


def test_nudge_reaps_at_once(reaper: Reaper) -> None:
    started = time.monotonic()
    reaper.nudge()
    wait_until(lambda: reaper.passes >= 2, timeout=5, message="a reap after nudge")
    assert time.monotonic() - started < 2
