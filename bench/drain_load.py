"""Drain under load: what one finished task costs the server, with a producer keeping a depth.

    .venv/bin/python bench/drain_load.py --dsn URL [--concurrency 32] [--seconds 90]
        [--depth 4000] [--handler-ms 1] [--async] [--prefetch N] [--hold-snapshot S] [--queue-limit N]

The scenario of issue 26 (and of the external harness it quotes): a producer
thread keeps about --depth tasks queued with ``enqueue_many`` batches, one
``pyconductor.Worker`` at --concurrency runs --handler-ms no-op handlers, for
--seconds after a short warm-up. It needs a server on this machine (it reads
the server's processes in /proc) and a throwaway database (it deletes every
task first).

Per finished task it reports:

- server CPU: user + system time of every PostgreSQL process (the postmaster's
  children alive at either reading, plus the postmaster's own and its reaped
  children's), from /proc/<pid>/stat;
- commits: ``pg_stat_database.xact_commit`` of the database;
- calls of the engine's functions (``pg_stat_user_functions``; as a superuser it
  sets the database's ``track_functions`` to 'pl', else it says so and prints
  none): which calls the commits come from;
- WAL bytes: ``pg_current_wal_lsn()`` before and after;
- rows written per table of schema conductor (``pg_stat_user_tables``:
  inserted, updated, of which HOT, deleted);
- this process's CPU (the producer and the worker);
- the worker's slots, sampled 100 times a second: handlers running, claimed
  tasks buffered for a slot, results waiting for their report;

With --hold-snapshot S the drain runs --seconds clean, then S seconds while
another session holds a snapshot (a REPEATABLE READ transaction that read
conductor.tasks, left open: the xmin horizon stays put, so no dead row or index
entry can be removed), then --seconds after it ends, and reports each part's
tasks/s, its ratio to the clean part, and the dead tuples of conductor.tasks
when the hold ends (issue 26's held-snapshot goal).

It also reports whether the run was bound by CPU or by waiting: the machine's busy share
of its cores (/proc/stat) and, sampled 10 times a second, what the active
PostgreSQL backends were doing (``pg_stat_activity.wait_event_type``: CPU when
none, else the wait's type and name).
"""

from __future__ import annotations

import argparse
import collections
import itertools
import os
import resource
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import psycopg.sql

from pyconductor import Conductor, Worker

QUEUE = "drainload"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def proc_seconds(pid: int, children: bool = False) -> float:
    """utime + stime (and cutime + cstime with children) of a process, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # after the command: state is fields[0], utime is field 14 of stat (fields[11])
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / CLOCK_TICKS


def server_cpu(postmaster: int) -> dict[int, float]:
    """CPU seconds per PostgreSQL process: the postmaster (with its reaped
    children) under its own pid, each live child under its pid."""
    out = {postmaster: proc_seconds(postmaster, children=True)}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == postmaster:
                out[int(entry.name)] = proc_seconds(int(entry.name))
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    return out


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of all cores since boot (/proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    total = sum(values[:8])
    return total - idle, total


@dataclass
class Reading:
    at: float
    server: dict[int, float]
    machine: tuple[float, float]
    own_cpu: float
    commits: int
    wal_lsn: str
    tables: dict[str, tuple[int, int, int, int]]
    calls: dict[str, int]
    finished: int


def read(conn: psycopg.Connection[Any], postmaster: int, worker: Worker) -> Reading:
    conn.execute("select pg_stat_force_next_flush()") if conn.info.server_version >= 150000 else None
    commits, lsn = conn.execute(
        "select xact_commit, pg_current_wal_lsn()::text from pg_stat_database where datname = current_database()"
    ).fetchone() or (0, "0/0")
    tables = {str(r[0]): (int(r[1]), int(r[2]), int(r[3]), int(r[4])) for r in conn.execute(
        "select relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del from pg_stat_user_tables"
        " where schemaname = 'conductor'")}  # fmt: skip
    # the engine's calls (pg_stat_user_functions counts them with track_functions = 'pl', set below)
    calls = {str(r[0]): int(r[1]) for r in conn.execute(
        "select funcname, calls from pg_stat_user_functions where schemaname = 'conductor'"
        " and funcname not like '\\_%'")}  # fmt: skip
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return Reading(time.monotonic(), server_cpu(postmaster), machine_busy(), usage.ru_utime + usage.ru_stime,
                   int(commits), str(lsn), tables, calls, int(worker.stats["succeeded"]))


def producer(dsn: str, depth: int, batch: int, claimed: Callable[[], int], stop: threading.Event,
             errors: list[BaseException]) -> None:
    """Keeps about depth tasks queued: tops the queue up in enqueue_many batches, the
    depth counted here (enqueued less what the worker claimed), so that measuring it
    costs the server nothing."""
    try:
        app = Conductor(dsn)
        n = 0
        while not stop.is_set():
            missing = depth - (n - claimed())
            if missing < batch:
                stop.wait(0.005)
                continue
            for _ in range(missing // batch):
                app.enqueue_many([{"kind": "noop", "payload": {"n": n + i}, "queue": QUEUE} for i in range(batch)])
                n += batch
        app.close()
    except BaseException as exc:  # noqa: BLE001 - reported by the main thread
        errors.append(exc)


def sample_waits(dsn: str, stop: threading.Event, counts: collections.Counter[str]) -> None:
    """What active backends of the database do, 10 times a second."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        while not stop.wait(0.1):
            for event_type, event in conn.execute(
                "select wait_event_type, wait_event from pg_stat_activity"
                " where datname = current_database() and state = 'active' and pid <> pg_backend_pid()"
            ):
                counts["CPU" if event_type is None else f"{event_type}:{event}"] += 1


def sample_slots(worker: Worker, stop: threading.Event, sums: collections.Counter[str]) -> None:
    """The worker's slots, 100 times a second: handlers running, tasks buffered, results unreported."""
    ledger = worker.ledger
    while not stop.wait(0.01):
        with ledger.lock:
            running, held = len(ledger.running), len(ledger.held)
            buffered = getattr(ledger, "buffered", 0)
        sums["samples"] += 1
        sums["running"] += running
        sums["buffered"] += buffered
        sums["unreported"] += held - running - buffered


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--seconds", type=float, default=90.0, help="how long the measured drain runs")
    p.add_argument("--warmup", type=float, default=5.0, help="seconds of drain before the first reading")
    p.add_argument("--depth", type=int, default=4000, help="queued tasks the producer keeps")
    p.add_argument("--batch", type=int, default=500, help="tasks per enqueue_many call")
    p.add_argument("--handler-ms", type=float, default=1.0, help="each handler sleeps this long")
    p.add_argument("--async", dest="use_async", action="store_true", help="async handlers (asyncio.sleep)")
    p.add_argument("--prefetch", type=int, help="the Worker's prefetch (default: its own)")
    p.add_argument("--hold-snapshot", type=float, default=0.0, metavar="S",
                   help="after --seconds clean, hold a snapshot open for S seconds, then drain --seconds more")
    p.add_argument("--queue-limit", type=int, metavar="N",
                   help="cap the queue at N running (set_queue_limit) for the drain; default: no cap")
    args = p.parse_args(argv)

    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.execute("delete from conductor.attempts")
        conn.execute("delete from conductor.tasks")
        if args.queue_limit is not None or conn.execute("select to_regclass('conductor.queue_limits')").fetchone()[0]:
            conn.execute("select conductor.set_queue_limit(%s, %s)", [QUEUE, args.queue_limit])
        conn.execute("vacuum analyze conductor.tasks")
        conn.execute("vacuum analyze conductor.attempts")
        # count the engine's calls (calls per task); a superuser's setting, read by new sessions
        if (conn.execute("select rolsuper from pg_roles where rolname = current_user").fetchone() or [False])[0]:
            conn.execute("select set_config('track_functions', 'pl', false)")
            conn.execute(psycopg.sql.SQL("alter database {} set track_functions = 'pl'").format(
                psycopg.sql.Identifier(conn.info.dbname)))
        else:
            print("drain under load: not a superuser, so no calls per task (track_functions)")
        datadir = str((conn.execute("show data_directory").fetchone() or [""])[0])
    postmaster = int(Path(datadir, "postmaster.pid").read_text().split()[0])

    app = Conductor(args.dsn)
    delay = args.handler_ms / 1000
    if args.use_async:
        import asyncio

        @app.task("noop")
        async def noop_async(payload: dict[str, Any]) -> None:
            await asyncio.sleep(delay)
    else:
        @app.task("noop")
        def noop(payload: dict[str, Any]) -> None:
            time.sleep(delay)

    stop = threading.Event()
    errors: list[BaseException] = []
    options: dict[str, Any] = {} if args.prefetch is None else {"prefetch": args.prefetch}
    worker = Worker(app, queues=[QUEUE], concurrency=args.concurrency, run_scheduler=False, **options)
    feeder = threading.Thread(target=producer, daemon=True,
                              args=(args.dsn, args.depth, args.batch, lambda: int(worker.stats["claimed"]), stop, errors))
    feeder.start()
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            row = conn.execute("select count(*) from conductor.tasks where queue = %s", [QUEUE]).fetchone()
            if row and row[0] >= args.depth:
                break
            time.sleep(0.05)
    worker.start()
    waits: collections.Counter[str] = collections.Counter()
    slots: collections.Counter[str] = collections.Counter()
    try:
        time.sleep(args.warmup)
        sampler = threading.Thread(target=sample_waits, args=(args.dsn, stop, waits), daemon=True)
        slot_sampler = threading.Thread(target=sample_slots, args=(worker, stop, slots), daemon=True)
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            before = read(conn, postmaster, worker)
            sampler.start()
            slot_sampler.start()
            time.sleep(args.seconds)
            if args.hold_snapshot > 0:
                parts = [before, read(conn, postmaster, worker)]
                with psycopg.connect(args.dsn) as holder:
                    holder.execute("set transaction isolation level repeatable read")
                    holder.execute("select count(*) from conductor.tasks")
                    time.sleep(args.hold_snapshot)
                    parts.append(read(conn, postmaster, worker))
                    dead = (conn.execute("select n_dead_tup from pg_stat_user_tables"
                                         " where relid = 'conductor.tasks'::regclass").fetchone() or [0])[0]
                    holder.rollback()
                time.sleep(args.seconds)
            after = read(conn, postmaster, worker)
    finally:
        stop.set()
        worker.stop(grace=5)
        feeder.join(10)
        app.close()
    if errors:
        raise errors[0]

    done = after.finished - before.finished
    seconds = after.at - before.at
    if done <= 0:
        print("drain under load: no task finished in the measured window")
        return 1
    server = sum(after.server.get(pid, 0.0) - before.server.get(pid, 0.0)
                 for pid in after.server if pid in before.server)  # fmt: skip
    server += sum(after.server[pid] for pid in after.server if pid not in before.server)
    busy = (after.machine[0] - before.machine[0]) / max(1.0, after.machine[1] - before.machine[1])
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        wal = int((conn.execute("select pg_wal_lsn_diff(%s::pg_lsn, %s::pg_lsn)",
                                [after.wal_lsn, before.wal_lsn]).fetchone() or [0])[0])  # fmt: skip
    mode = "async" if args.use_async else "threads"
    if args.queue_limit is not None:
        mode += f", queue capped at {args.queue_limit}"
    print(f"drain under load ({mode}, concurrency {args.concurrency}, depth {args.depth}, "
          f"{args.handler_ms:g} ms handlers, {seconds:.0f} s): {done / seconds:.0f} tasks/s, {done} tasks")
    print(f"  server CPU per task:   {server / done * 1e6:.0f} us  ({server / seconds * 100:.0f} % of one core)")
    print(f"  process CPU per task:  {(after.own_cpu - before.own_cpu) / done * 1e6:.0f} us  "
          f"({(after.own_cpu - before.own_cpu) / seconds * 100:.0f} % of one core; producer + worker)")
    print(f"  commits per task:      {(after.commits - before.commits) / done:.3f}")
    calls = {name: n - before.calls.get(name, 0) for name, n in after.calls.items()}
    if any(calls.values()):
        print("  calls per task:        " + ", ".join(
            f"{name} {n / done:.3f}" for name, n in sorted(calls.items(), key=lambda c: -c[1]) if n))
    print(f"  WAL per task:          {wal / done:.0f} bytes")
    print(f"  machine busy:          {busy * 100:.0f} % of {os.cpu_count()} cores")
    for table in sorted(after.tables):
        b = before.tables.get(table, (0, 0, 0, 0))
        ins, upd, hot, dele = (x - y for x, y in zip(after.tables[table], b))
        if ins or upd or dele:
            print(f"  conductor.{table}: per task {ins / done:.2f} inserted, {upd / done:.2f} updated "
                  f"({hot / done:.2f} HOT), {dele / done:.2f} deleted")
    n = slots["samples"] or 1
    print(f"  worker's slots (mean of {slots['samples']} samples): {slots['running'] / n:.1f} of "
          f"{args.concurrency} running, {slots['buffered'] / n:.1f} buffered, {slots['unreported'] / n:.1f} "
          f"results waiting for their report")
    total = sum(waits.values()) or 1
    top = ", ".join(f"{name} {n / total * 100:.0f} %" for name, n in waits.most_common(6))
    print(f"  active backends' samples ({sum(waits.values())}): {top}")
    if args.hold_snapshot > 0:
        parts.append(after)
        rates = [(b.finished - a.finished) / max(1e-9, b.at - a.at) for a, b in itertools.pairwise(parts)]
        print(f"  held snapshot ({args.hold_snapshot:g} s): clean {rates[0]:.0f} tasks/s, held {rates[1]:.0f} "
              f"({rates[1] / max(1e-9, rates[0]):.2f} of clean), after {rates[2]:.0f} "
              f"({rates[2] / max(1e-9, rates[0]):.2f}); {dead} dead tuples in conductor.tasks when it ended")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
