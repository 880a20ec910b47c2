"""A :class:`~pyconductor.worker.Worker`'s settings, grouped as a person sets them.

What to run stays the Worker's own arguments (``queues``, ``concurrency``,
``kinds``, ``prefetch``, the roles, whether handlers' logs are captured); how long things take is a
:class:`Timings`, what the worker tells the database about itself and its
handlers a :class:`Reporting`::

    from pyconductor import Timings, Worker

    Worker(app, ["mail"], 8, timings=Timings(lease=60, shutdown_grace=120))

Each field may also be given by its name, as a keyword of the Worker
(``Worker(app, lease=60)``, what ``run_worker(app, **options)``, ``serve``'s
``worker_options`` and the docs' examples pass): :func:`grouped` puts it in
its group, and refuses a name no group has, as Python refuses an unknown
keyword. The defaults are :mod:`pyconductor.defaults`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from datetime import timedelta
from typing import Any, TypedDict

from pyconductor import defaults

__all__ = ["Reporting", "Timings", "WorkerSettings", "grouped"]


@dataclass(frozen=True)
class Timings:
    """How long things take, in seconds (or timedeltas)."""

    lease: float | timedelta = defaults.LEASE
    """How long a claim holds its task without a heartbeat."""
    heartbeat_interval: float | timedelta = defaults.HEARTBEAT_INTERVAL
    poll_interval: float | timedelta = defaults.POLL_INTERVAL
    """The backstop for missed notifications (at most 1 s behind a transaction-mode pooler)."""
    reap_interval: float | timedelta = defaults.REAP_INTERVAL
    shutdown_grace: float | timedelta = defaults.SHUTDOWN_GRACE
    """What running handlers get at a stop (``float('inf')``: wait for every one)."""
    cancel_grace: float | timedelta = defaults.CANCEL_GRACE
    """What a cancelled handler may keep running before its slot is freed."""
    tick_interval: float = defaults.TICK_INTERVAL
    """The scheduler ticks at each due time and at least this often."""
    claim_linger: float = defaults.CLAIM_LINGER


@dataclass(frozen=True)
class Reporting:
    """What the worker tells the database about itself and its handlers."""

    worker_id: str | None = None
    """Its id (default: host-pid-random)."""
    version: str | None = None
    """What ``conductor.workers`` shows (default: ``pyconductor <version>``)."""
    report_batch: int = defaults.REPORT_BATCH
    """Results one ``complete_many`` call sends at most."""
    report_linger: float = defaults.REPORT_LINGER
    """How long a result may wait for company (seconds) while other handlers run."""


class WorkerSettings(TypedDict, total=False):
    """Every field of :class:`Timings` and :class:`Reporting` as a Worker keyword, so that
    type checkers check ``Worker(app, lease=60)`` as they check the groups (a unit test
    holds the keys to the groups' fields)."""

    lease: float | timedelta
    heartbeat_interval: float | timedelta
    poll_interval: float | timedelta
    reap_interval: float | timedelta
    shutdown_grace: float | timedelta
    cancel_grace: float | timedelta
    tick_interval: float
    claim_linger: float
    worker_id: str | None
    version: str | None
    report_batch: int
    report_linger: float


_GROUP_OF = {f.name: group for group in (Timings, Reporting) for f in fields(group)}


def grouped(settings: Mapping[str, Any] | WorkerSettings, timings: Timings | None = None,
            reporting: Reporting | None = None) -> tuple[Timings, Reporting]:  # fmt: skip
    """``timings`` and ``reporting`` (default: the defaults) with each of ``settings`` (a
    field's name -> its value) put in its group; TypeError naming a name no group has."""
    by_group: dict[type, dict[str, Any]] = {Timings: {}, Reporting: {}}
    for name, value in settings.items():
        group = _GROUP_OF.get(name)
        if group is None:
            raise TypeError(f"Worker() got an unexpected keyword argument {name!r}")
        by_group[group][name] = value
    return (replace(timings or Timings(), **by_group[Timings]),
            replace(reporting or Reporting(), **by_group[Reporting]))  # fmt: skip
