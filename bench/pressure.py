"""Pressure: throughput while another session holds an open transaction with
an xid (``begin; select txid_current();`` then idle: the xmin horizon is pinned,
so neither VACUUM nor HOT pruning may remove the rows the queue kills), then
after it ends; table and index sizes before, at the end of the hold, and after.

Workload: pgbench -c 2 -j 2 running bench/pressure_cycle.sql (enqueue 50,
claim 50, complete_many 50 per transaction, a constant backlog of --backlog
tasks, growing only by what claims that came back short left, reported at the
end), with -P 5 progress lines; three phases back to back:

1. clean  (--clean-seconds, default 60): nobody pins the horizon;
2. during (--hold-seconds, default 300 = 5 minutes; BENCH_PRESSURE_SECONDS in
   run.sh): a second connection holds the transaction open;
3. after  (--after-seconds, default 120): the holder committed; autovacuum may
   now clean up (nothing else is done to help it). A watcher notes when
   autovacuum's first pass over conductor.tasks and conductor.attempts since
   the hold ended (pg_stat_user_tables.autovacuum_count) finished, and the
   throughput from then on is reported as "recovered".

    .venv/bin/python bench/pressure.py --dsn URL [--hold-seconds 300] [--control]

--control runs the same three phases with nobody holding a transaction: the
workload never prunes, so the table grows through all three phases, and
the control run's after/clean ratio is what growth alone costs; the pinned
run's after/clean beside it is what the pin left behind.

Destroys every task in the database. Prints per-phase throughput (tasks/s =
tps x 50, mean of the progress intervals, and the last interval), ratios
during/clean and after/clean, and the sizes (pg_total_relation_size of
conductor.tasks / conductor.attempts, pg_relation_size of each index, and
n_dead_tup).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import threading
import time
from pathlib import Path

import psycopg

from pyconductor.dev.devdb import find_bindir

ROOT = Path(__file__).resolve().parent.parent


def sizes(conn: psycopg.Connection) -> dict:
    out = {}
    for rel in ("conductor.tasks", "conductor.attempts"):
        total, dead, live = conn.execute(
            "select pg_total_relation_size(%s::regclass), n_dead_tup, n_live_tup from pg_stat_user_tables"
            " where relid = %s::regclass", [rel, rel]).fetchone()
        idx = dict(conn.execute(
            "select indexrelid::regclass::text, pg_relation_size(indexrelid) from pg_index"
            " where indrelid = %s::regclass order by 1", [rel]).fetchall())
        out[rel] = {"total": total, "heap": conn.execute("select pg_relation_size(%s::regclass)", [rel]).fetchone()[0],
                    "n_dead_tup": dead, "n_live_tup": live, "indexes": idx}
    return out


def run_phase(dsn: str, seconds: int) -> list[float]:
    proc = subprocess.run(
        [str(find_bindir() / "pgbench"), "-n", "-M", "simple", "-c", "2", "-j", "2", "-T", str(seconds), "-P", "5",
         "-f", str(ROOT / "bench/pressure_cycle.sql"), dsn], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"pressure: pgbench failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return [float(m.group(1)) * 50 for m in re.finditer(r"^progress: [0-9.]+ s, ([0-9.]+) tps", proc.stderr, re.M)]


class VacuumWatch:
    """When autovacuum finishes its first pass begun after start() over each of
    conductor.tasks and conductor.attempts, in seconds from start() (a pass
    already running at start() does not count: it began under the pinned
    horizon); polls once a second."""

    RELS = ("conductor.tasks", "conductor.attempts")

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.done_at: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _counts(self, conn: psycopg.Connection) -> dict[str, int]:
        return dict(conn.execute("select relid::regclass::text, autovacuum_count from pg_stat_user_tables"
                                 " where relid = any(%s::regclass[])", [list(self.RELS)]).fetchall())

    def start(self) -> None:
        self._conn = psycopg.connect(self.dsn, autocommit=True)
        running = {r for (r,) in self._conn.execute(
            "select relid::regclass::text from pg_stat_progress_vacuum where relid = any(%s::regclass[])",
            [list(self.RELS)]).fetchall()}
        self._need = {rel: n + (2 if rel in running else 1) for rel, n in self._counts(self._conn).items()}
        self._t0 = time.monotonic()
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(1.0) and len(self.done_at) < len(self.RELS):
            self._conn.execute("select pg_stat_clear_snapshot()")
            for rel, n in self._counts(self._conn).items():
                if n >= self._need[rel] and rel not in self.done_at:
                    self.done_at[rel] = round(time.monotonic() - self._t0, 1)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._conn.close()


def mb(n: int) -> str:
    return f"{n / 1048576:.1f} MB"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True)
    p.add_argument("--clean-seconds", type=int, default=60)
    p.add_argument("--hold-seconds", type=int, default=300)
    p.add_argument("--after-seconds", type=int, default=120)
    p.add_argument("--backlog", type=int, default=10_000)
    p.add_argument("--control", action="store_true",
                   help="hold nothing in the middle phase: what the same run costs without a pinned horizon")
    args = p.parse_args()

    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.execute("delete from conductor.attempts")
        conn.execute("delete from conductor.tasks")
        conn.execute(f"""insert into conductor.tasks (id, queue, kind, payload, run_at, enqueued_at, root_id)
            select id, 'bench', 'bench', jsonb_build_object('n', id), now(), now(), id
              from (select nextval('conductor.tasks_id_seq') as id from generate_series(1, {args.backlog})) s""")
        conn.execute("vacuum full conductor.tasks")
        conn.execute("vacuum full conductor.attempts")
        conn.execute("vacuum analyze conductor.tasks")
        conn.execute("checkpoint")
        phases: dict[str, list[float]] = {}
        report: dict = {"sizes_before": sizes(conn)}
        phases["clean"] = run_phase(args.dsn, args.clean_seconds)
        report["sizes_after_clean"] = sizes(conn)
        report["control"] = args.control
        with psycopg.connect(args.dsn) as holder:
            if not args.control:
                xid = holder.execute("select txid_current()").fetchone()[0]  # idle in transaction from here
                report["holder_xid"] = xid
            phases["during"] = run_phase(args.dsn, args.hold_seconds)
            report["sizes_end_of_hold"] = sizes(conn)
            holder.commit()
        watch = VacuumWatch(args.dsn)
        watch.start()
        phases["after"] = run_phase(args.dsn, args.after_seconds)
        watch.stop()
        report["sizes_after"] = sizes(conn)
        report["autovacuum_done_after_s"] = watch.done_at
        # every transaction enqueues 50 and claims up to 50: what a short claim left stays queued
        report["left_by_short_claims"] = conn.execute(
            "select count(*) from conductor.tasks where queue = 'bench' and status = 'queued'").fetchone()[0] - args.backlog
    for name, series in phases.items():
        report[name] = {"mean": round(statistics.fmean(series), 1) if series else None,
                        "first": series[0] if series else None, "last": series[-1] if series else None,
                        "series": [round(x) for x in series]}
    clean = report["clean"]["mean"]
    report["ratio_during_clean"] = round(report["during"]["mean"] / clean, 2)
    report["ratio_after_clean"] = round(report["after"]["mean"] / clean, 2)
    report["ratio_last_after_clean"] = round(report["after"]["last"] / clean, 2)
    # the 5 s progress intervals that began once both tables had been vacuumed
    vacuumed = max(watch.done_at.values()) if len(watch.done_at) == len(VacuumWatch.RELS) else None
    recovered = [x for i, x in enumerate(phases["after"]) if vacuumed is not None and 5 * i >= vacuumed]
    report["recovered"] = {"from_s": vacuumed, "mean": round(statistics.fmean(recovered), 1) if recovered else None,
                           "intervals": len(recovered)}
    report["ratio_recovered_clean"] = round(report["recovered"]["mean"] / clean, 2) if recovered else None
    report["load"] = open("/proc/loadavg").read().split()[:3]
    print(json.dumps(report), flush=True)
    print()
    if args.control:
        print("control run: nobody held a transaction during the middle phase ('during').")
    print(f"| phase | seconds | tasks/s mean | first 5 s | last 5 s | ratio to clean |")
    print("|---|---|---|---|---|---|")
    secs = {"clean": args.clean_seconds, "during": args.hold_seconds, "after": args.after_seconds}
    for name in phases:
        r = report[name]
        print(f"| {name} | {secs[name]} | {r['mean']:,.0f} | {r['first']:,.0f} | {r['last']:,.0f} | {r['mean'] / clean:.2f} |")
    rec = report["recovered"]
    if rec["mean"] is not None:
        print(f"| after, once vacuumed (from {rec['from_s']:.0f} s) | {args.after_seconds - 5 * (len(phases['after']) - rec['intervals'])} "
              f"| {rec['mean']:,.0f} | | | {report['ratio_recovered_clean']:.2f} |")
    else:
        print(f"| after, once vacuumed | autovacuum had not finished both tables ({watch.done_at}) | | | | |")
    print(f"Claims that came back short left {report['left_by_short_claims']:,} tasks queued over the three phases"
          " (tasks/s above counts 50 per transaction).")
    print()
    print("| relation | before | after clean phase | end of hold | after |")
    print("|---|---|---|---|---|")
    keys = ["sizes_before", "sizes_after_clean", "sizes_end_of_hold", "sizes_after"]
    for rel in ("conductor.tasks", "conductor.attempts"):
        print(f"| {rel} total | " + " | ".join(mb(report[k][rel]["total"]) for k in keys) + " |")
        print(f"| {rel} heap | " + " | ".join(mb(report[k][rel]["heap"]) for k in keys) + " |")
        print(f"| {rel} n_dead_tup | " + " | ".join(str(report[k][rel]["n_dead_tup"]) for k in keys) + " |")
        for idx in report["sizes_before"][rel]["indexes"]:
            print(f"| {idx} | " + " | ".join(mb(report[k][rel]["indexes"].get(idx, 0)) for k in keys) + " |")


if __name__ == "__main__":
    main()
