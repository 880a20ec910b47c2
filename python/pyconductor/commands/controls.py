"""The queue controls: ``pause``, ``resume``, ``rate-limit`` and ``queue-limit``.

The database validates what they are given (QC104 a bad queue name, QC101 a bad
kind, QC106 a bad limit); these print what changed.
"""

from __future__ import annotations

import argparse
from typing import Any

from pyconductor import queries
from pyconductor.commands.connect import command

__all__ = ["run_pause", "run_queue_limit", "run_rate_limit", "run_resume"]


def _pause(args: argparse.Namespace, conn: Any) -> int:
    paused = conn.execute(queries.PAUSE_QUEUE, {"queue": args.queue}).fetchone()["changed"]
    print(f"queue {args.queue} paused: nothing is claimed from it, its tasks stay queued (`pyconductor resume "
          f"{args.queue}` resumes it)" if paused else f"queue {args.queue} was paused already")  # fmt: skip
    return 0


def _resume(args: argparse.Namespace, conn: Any) -> int:
    resumed = conn.execute(queries.RESUME_QUEUE, {"queue": args.queue}).fetchone()["changed"]
    print(f"queue {args.queue} resumed" if resumed else f"queue {args.queue} was not paused")
    return 0


def _rate_limit(args: argparse.Namespace, conn: Any) -> int:
    per_key = bool(getattr(args, "per_key", False))
    conn.execute(queries.SET_RATE_LIMIT, {"queue": args.queue, "kind": args.kind, "per_second": args.per_second,
                                          "burst": args.burst, "per_key": per_key})  # fmt: skip
    what = f"queue {args.queue}" if args.queue is not None else f"kind {args.kind}"
    if args.per_second is None:
        print(f"{what}: no rate limit")
    else:
        burst = f", bursts of up to {args.burst:g}" if args.burst is not None else ""
        each = " per rate_key" if per_key else ""
        print(f"{what}: at most {args.per_second:g} task starts per second{each} across the fleet{burst}")
    return 0


def _queue_limit(args: argparse.Namespace, conn: Any) -> int:
    conn.execute(queries.SET_QUEUE_LIMIT, {"queue": args.queue, "max_running": args.max_running})
    if args.max_running is None:
        print(f"queue {args.queue}: no cap")
    else:
        print(f"queue {args.queue}: at most {args.max_running} tasks running at once across the fleet")
    return 0


run_pause = command(_pause)
run_resume = command(_resume)
run_rate_limit = command(_rate_limit)
run_queue_limit = command(_queue_limit)
