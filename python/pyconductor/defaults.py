"""Every default of the worker, in one place: the Worker, its services and the
CLI read them here (the SQL functions' own defaults are the contract for
other languages and say the same: a 60 s lease).

Times are seconds.
"""

from __future__ import annotations

import os

__all__ = [
    "BACKOFF_MAX",
    "BACKOFF_MIN",
    "CANCEL_GRACE",
    "CLAIM_LINGER",
    "CONCURRENCY",
    "CONNECT_TIMEOUT",
    "HEARTBEAT_INTERVAL",
    "LEASE",
    "POLL_INTERVAL",
    "POOLER_POLL_INTERVAL",
    "REAP_INTERVAL",
    "RECHECK_FIRST",
    "RECHECK_MAX",
    "REPORT_BATCH",
    "REPORT_LINGER",
    "SHUTDOWN_DB_TIMEOUT",
    "SHUTDOWN_GRACE",
    "TCP_OPTIONS",
    "TICK_INTERVAL",
    "default_concurrency",
]

CONCURRENCY = 32  # tasks running at once; $CONDUCTOR_WORKER_MAX_INFLIGHT overrides
LEASE = 60.0  # how long a claim holds a task without a heartbeat
HEARTBEAT_INTERVAL = 10.0  # one heartbeat call extends every lease the worker holds
POLL_INTERVAL = 10.0  # the backstop for a missed notification; idle workers wake sooner for due tasks
POOLER_POLL_INTERVAL = 1.0  # the longest poll behind a transaction-mode pooler (no LISTEN: polling finds new tasks)
RECHECK_FIRST = 0.005  # an idle worker whose sleep() was not settled claims again after this long, doubling ...
# ... up to RECHECK_MAX, while enqueues that may have missed its mark are in flight (or any session holds the key)
RECHECK_MAX = 1.0
REAP_INTERVAL = 30.0  # reap() at least this often (sooner when next_wake says so)
SHUTDOWN_GRACE = 30.0  # running handlers get this long to finish at stop; the rest are released
# a cancelled handler (or one whose lease was lost) still running after CANCEL_GRACE is stuck: its slot is freed
CANCEL_GRACE = 10.0
TICK_INTERVAL = 5.0  # the scheduler ticks at each due time and at least this often
REPORT_BATCH = 500  # at most this many results in one complete_many call
REPORT_LINGER = 0.005  # a result waits this long for company while other handlers run
CLAIM_LINGER = 0.002  # a claim waits this long for a quarter of the slots to be free
SHUTDOWN_DB_TIMEOUT = 5.0  # after the grace, stop() gives the database this long for reports and releases

CONNECT_TIMEOUT = 10  # libpq connect_timeout of every connection the worker opens
# libpq TCP options every connection gets unless its DSN sets them (dsn.tcp_options):
# a connection whose peer went silent (a network partition, a server gone) fails
# within about 30 s, under half the default lease, instead of hanging for about 15
# minutes (data in flight) or 2 hours (waiting for an answer the server dropped)
TCP_OPTIONS = {
    "keepalives": "1",
    "keepalives_idle": "10",
    "keepalives_interval": "5",
    "keepalives_count": "3",
    "tcp_user_timeout": "30000",  # ms
}
BACKOFF_MIN = 0.1  # a lost connection is retried after this long, doubling ...
BACKOFF_MAX = 5.0  # ... up to this


def default_concurrency() -> int:
    """$CONDUCTOR_WORKER_MAX_INFLIGHT, else :data:`CONCURRENCY`."""
    value = os.environ.get("CONDUCTOR_WORKER_MAX_INFLIGHT")
    return int(value) if value else CONCURRENCY
