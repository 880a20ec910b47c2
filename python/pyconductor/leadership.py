"""Leader leases: the client side of ``conductor.try_lead``.

One process of the fleet at a time leads each name: the scheduler
(``'scheduler'``), retention (``'retention'``), an app's singleton
(``'singleton:' || name``). The database keeps a lease per name
(``conductor.leader_leases``, written only by the engine's functions, so no
other session can hold or block it): ``try_lead(name, holder, lease)`` takes
it when it is free or expired and renews it for its holder, ``release_lead``
gives it up, ``conductor.leaders()`` lists who holds what. Each call is one
autocommit statement, so leases work through a transaction-mode pooler.

A :class:`Lease` is one process's claim on one name:

- ``keep(conn)`` takes or renews the lease when a renewal is due (every
  ``renew_every`` seconds, a third of the lease by default) and answers
  whether this process may act as leader now;
- it may act until ``lease - margin`` seconds after the last renewal that
  succeeded, counted from when that call was *sent* on this machine's
  monotonic clock: the database's expiry (its ``conductor.now()`` when the
  call ran, plus the lease) is never earlier, so a leader stops before anyone
  else can take over. ``margin`` is the time the leader's work needs to stop
  (a singleton's function is told to stop half a lease before the end);
- a renewal that fails (a lost connection, or the row busy with another
  process's try at that instant) changes nothing: the leader keeps acting
  until its time runs out, and ``keep`` tries again at every call meanwhile;
- ``release(conn)`` ends the lease at once on a clean stop, so another process
  takes over at its next try instead of waiting for the lease to run out.

Correctness never depends on leadership for the engine's own loops (tick()
fires each due time once, apply_retention() deletes with SKIP LOCKED): a lease
only saves the others duplicate work. A singleton relies on it.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from typing import Any

from pyconductor.queries import RELEASE_LEAD, TRY_LEAD

__all__ = ["Lease", "holder_name"]


def holder_name() -> str:
    """A holder string no other lease of the fleet uses: host, pid and a random part (at most 200 characters)."""
    return f"{socket.gethostname()[:150]}-{os.getpid()}-{secrets.token_hex(4)}"


class Lease:
    """This process's lease on leader ``name`` (see the module doc): ``ttl``
    seconds long, renewed every ``renew_every`` (default ``ttl / 3``) seconds,
    acted on until ``ttl - margin`` seconds after the last renewal sent."""

    def __init__(self, name: str, ttl: float, *, margin: float = 0.0, renew_every: float | None = None,
                 holder: str | None = None) -> None:  # fmt: skip
        if not name:
            raise ValueError("a leader lease needs a name")
        if not 0 < ttl <= 3600:
            raise ValueError(f"a leader lease lasts more than 0 s and at most an hour, got {ttl}")
        if not 0 <= margin < ttl:
            raise ValueError(f"the margin of a {ttl:g} s lease must be at least 0 and under it, got {margin}")
        self.name = name
        self.ttl = float(ttl)
        self.margin = float(margin)
        self.renew_every = float(renew_every) if renew_every is not None else self.ttl / 3
        self.holder = holder or holder_name()
        self._renewed = float("-inf")  # monotonic time the last successful call was sent

    def __repr__(self) -> str:
        return f"<Lease {self.name!r} held={self.held} ttl={self.ttl:g}s>"

    @property
    def held(self) -> bool:
        """Whether this process may act as leader now (see the module doc)."""
        return time.monotonic() < self._renewed + self.ttl - self.margin

    def due_in(self) -> float:
        """Seconds until the next renewal is due (0: due now, or not held)."""
        if not self.held:
            return 0.0
        return max(0.0, self._renewed + self.renew_every - time.monotonic())

    def keep(self, conn: Any) -> bool:
        """Take or renew the lease on ``conn`` (an autocommit connection) when a
        renewal is due; whether this process may act as leader now. A
        connection error is raised, the lease unchanged (held until its time
        runs out)."""
        if self.held and self.due_in() > 0:
            return True
        sent = time.monotonic()
        row = conn.execute(TRY_LEAD, {"name": self.name, "holder": self.holder,
                                      "lease": f"{self.ttl} seconds"}).fetchone()  # fmt: skip
        if row is not None and (row["leading"] if isinstance(row, dict) else row[0]):
            self._renewed = sent
        return self.held

    def release(self, conn: Any) -> None:
        """Give the lease up now (a clean stop); this process no longer leads,
        even when the call fails (the lease then runs out by itself)."""
        held, self._renewed = self.held, float("-inf")
        if held:
            conn.execute(RELEASE_LEAD, {"name": self.name, "holder": self.holder})

    def forget(self) -> None:
        """Stop acting as leader now without telling the database (the lease runs out by itself)."""
        self._renewed = float("-inf")
