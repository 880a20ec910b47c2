"""The ledger's idle rule (pyconductor.ledger): a stop waits for the handlers that run and for
the outcomes of those that returned but are not queued for their report yet, or the reporter
could close before the last result reaches it (a full run once found a task still 'running'
after a clean stop with an unlimited grace)."""

from __future__ import annotations

import threading

from pyconductor.ledger import Ledger


def test_idle_waits_for_a_returned_handlers_outcome() -> None:
    ledger = Ledger(concurrency=1)
    ledger.settling = 1  # a handler returned; its report is not queued yet
    assert not ledger.wait_idle(0.05), "no handler runs, but an outcome is still on its way"
    waiter = threading.Thread(target=lambda: results.append(ledger.wait_idle(10)))
    results: list[bool] = []
    waiter.start()
    ledger.settled()
    waiter.join(10)
    assert results == [True]
    assert ledger.wait_idle(0)


def test_idle_waits_for_running_handlers_too() -> None:
    ledger = Ledger(concurrency=1)
    ledger.running[1] = object()  # type: ignore[assignment]  # a handler runs
    assert not ledger.wait_idle(0.05)
    with ledger.lock:
        ledger.running.clear()
        ledger.idle.notify_all()
    assert ledger.wait_idle(0)
