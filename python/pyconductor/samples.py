"""Samples: the maintenance role's once-a-minute call of ``conductor.sample_queues()``.

What a sample holds is the database's decision (``\\df+ conductor.sample_queues``):
per queue and minute, the tasks that finished and failed (from the index
``tasks_finished``), and the ready depth and backlog age read at the call; the
minutes missed since the last sample are backfilled (finished and failed only),
and samples older than ``conductor.settings.retain_samples`` deleted. The
dashboard's queues page draws them (``conductor.queue_series``). This duty only
calls it, on one process of the fleet at a time:

- a leader duty (:mod:`pyconductor.leader`: on ``pyconductor serve``'s leader
  connection with the maintenance role) under the lease ``'samples'``, taken
  and renewed as the others are; while another process leads it tries every
  ``interval`` seconds;
- while leading, it calls ``sample_queues()`` just after each minute begins on
  the database's clock (:data:`OFFSET` seconds in), one autocommit statement. A
  second sampler at the same time (a lease taken over mid-call) writes nothing:
  each minute has one key in ``conductor.sample_minutes``;
- a minute the fleet missed (no maintenance process, a lost connection) is
  backfilled by the next call, up to a day back; its depth and age are not
  (nobody read them then).
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg

from pyconductor import queries
from pyconductor.leader import Duty
from pyconductor.leadership import Lease

__all__ = ["INTERVAL", "LEADER_LOCK", "OFFSET", "Sampler"]

logger = logging.getLogger("pyconductor")

LEADER_LOCK = "samples"
INTERVAL = 60.0  # seconds between tries for the lease while another process leads
OFFSET = 1.0  # seconds after the minute begins that the sample is taken
LEASE = 180.0  # seconds: three minutes, renewed every minute


class Sampler(Duty):
    """Samples the queues once a minute under the lease 'samples'; see the module doc."""

    label = "samples"

    def __init__(self) -> None:
        self.contend_every = INTERVAL
        self.lease: Lease = Lease(LEADER_LOCK, LEASE)
        self.minutes = 0
        """Minutes written since start (a backfill counts each minute it wrote)."""

    def __repr__(self) -> str:
        return f"<Sampler leader={self.is_leader} minutes={self.minutes}>"

    def lead(self, conn: psycopg.Connection[dict[str, Any]]) -> float:
        """One sample; seconds until the next minute begins (plus :data:`OFFSET`)."""
        row = conn.execute(queries.SAMPLE_QUEUES).fetchone()
        assert row is not None
        written = int(row["minutes"] or 0)
        self.minutes += written
        if written > 1:
            logger.info("samples: wrote %d minutes (the ones missed since the last sample)", written,
                        extra={"samples_written": written})  # fmt: skip
        return 60.0 - float(row["now"]) % 60.0 + OFFSET
