"""Many workers: drain throughput with 1, 2, 4, 8 worker processes
(``python -m pyconductor worker --app noop_app:app --queues bench
--concurrency 32 --no-scheduler``, each its own process) against one database,
and what limits it.

For each process count: the workers are started on an empty queue and given
a few seconds to connect and go idle; then --tasks no-op tasks are inserted in
one set-based statement, then conductor._notify_queue('bench') as enqueue
does (one commit, one notification), followed at once by
ANALYZE conductor.tasks (--no-analyze to skip it: see bench/HISTORY.md, issue 5's
section 6, run A: the idle workers' cached claim plan was made on an empty table), and the drain is
timed from that commit until no task of the queue is queued or running. Meanwhile
pg_stat_activity is sampled --sample-hz times a second (wait_event_type /
wait_event of every active backend other than the sampler; "CPU" when it has
none), and CPU time is read from /proc: the whole machine (/proc/stat: user,
system, iowait, idle, steal) and per side (the worker processes vs the
PostgreSQL backends serving them, utime+stime of each pid).

    .venv/bin/python bench/workers.py --dsn URL [--procs 1,2,4,8] [--tasks 20000]

Destroys every task in the database. Prints a JSON line per run and a table.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return 0.0


def machine_cpu() -> list[int]:
    return [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]


def unfinished(conn: psycopg.Connection) -> int:
    return conn.execute("select count(*) from conductor.tasks where queue = 'bench'"
                        " and status in ('queued', 'running')").fetchone()[0]


def run(dsn: str, procs: int, tasks: int, hz: float, concurrency: int, analyze: bool) -> dict:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("delete from conductor.attempts")
        conn.execute("delete from conductor.tasks")
        conn.execute("delete from conductor.workers")
        conn.execute("vacuum analyze conductor.tasks")
        conn.execute("vacuum analyze conductor.attempts")
        conn.execute("checkpoint")
    env = {**os.environ, "CONDUCTOR_DSN": dsn, "PYTHONPATH": str(ROOT / "bench") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    workers = [subprocess.Popen(
        [sys.executable, "-m", "pyconductor", "worker", "--app", "noop_app:app", "--queues", "bench",
         "--concurrency", str(concurrency), "--no-scheduler", "--log-level", "WARNING"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(procs)]
    try:
        time.sleep(3 + procs * 0.5)
        conn = psycopg.connect(dsn, autocommit=True)
        sampler = psycopg.connect(dsn, autocommit=True)
        backends = [r[0] for r in sampler.execute(
            "select pid from pg_stat_activity where application_name like 'pyconductor%'").fetchall()]
        waits: collections.Counter[str] = collections.Counter()
        samples = 0
        stop = threading.Event()

        def sample() -> None:
            nonlocal samples
            while not stop.wait(1.0 / hz):
                rows = sampler.execute(
                    "select coalesce(wait_event_type || ':' || wait_event, 'CPU') from pg_stat_activity"
                    " where state = 'active' and pid <> pg_backend_pid() and backend_type = 'client backend'").fetchall()
                samples += 1
                waits.update(r[0] for r in rows)

        cpu_w0 = sum(proc_cpu(w.pid) for w in workers)
        cpu_b0 = sum(proc_cpu(p) for p in backends)
        m0 = machine_cpu()
        with conn.transaction():
            conn.execute(f"""insert into conductor.tasks (id, queue, kind, payload, run_at, enqueued_at, root_id)
                select id, 'bench', 'noop', jsonb_build_object('n', id), now(), now(), id
                  from (select nextval('conductor.tasks_id_seq') as id from generate_series(1, {tasks})) s""")
            # what enqueue does after its insert: tell the idle (sleeping) workers
            conn.execute("select conductor._notify_queue('bench')")
        t0 = time.perf_counter()
        if analyze:
            # what autoanalyze does a minute later: the idle workers planned their
            # claim on an empty table; ANALYZE invalidates those cached plans
            conn.execute("analyze conductor.tasks")
        thread = threading.Thread(target=sample, daemon=True)
        thread.start()
        while unfinished(conn) > 0:
            time.sleep(0.02)
            if time.perf_counter() - t0 > 600:
                raise RuntimeError("drain timed out")
        dt = time.perf_counter() - t0
        stop.set()
        thread.join()
        m1 = machine_cpu()
        cpu_w = sum(proc_cpu(w.pid) for w in workers) - cpu_w0
        cpu_b = sum(proc_cpu(p) for p in backends) - cpu_b0
        d = [b - a for a, b in zip(m0, m1)]
        total = sum(d) or 1
        user, nice, system, idle, iowait, irq, softirq, steal = d
        ok = conn.execute("select count(*) from conductor.tasks where queue = 'bench' and status = 'succeeded'").fetchone()[0]
        conn.close()
        sampler.close()
    finally:
        for w in workers:
            w.terminate()
        for w in workers:
            try:
                w.wait(timeout=40)
            except subprocess.TimeoutExpired:
                w.kill()
    top = waits.most_common(6)
    return {
        "procs": procs, "analyze_after_insert": analyze, "concurrency": concurrency, "tasks": tasks, "succeeded": ok, "seconds": round(dt, 2),
        "rate": round(tasks / dt, 1),
        "machine_cpu_pct": {"user": round(100 * (user + nice) / total), "system": round(100 * (system + irq + softirq) / total),
                            "iowait": round(100 * iowait / total), "idle": round(100 * idle / total),
                            "steal": round(100 * steal / total)},
        "cpu_seconds": {"workers": round(cpu_w, 2), "backends": round(cpu_b, 2), "wall": round(dt, 2)},
        "samples": samples,
        "top_waits": [(k, round(v / max(samples, 1), 2)) for k, v in top],
        "load": open("/proc/loadavg").read().split()[:3],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True)
    p.add_argument("--procs", default="1,2,4,8")
    p.add_argument("--tasks", type=int, default=20000)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--sample-hz", type=float, default=5.0)
    p.add_argument("--no-analyze", action="store_true",
                   help="do not ANALYZE right after the insert (the workers then keep plans made on an empty table)")
    args = p.parse_args()
    results = []
    for n in (int(x) for x in args.procs.split(",")):
        r = run(args.dsn, n, args.tasks, args.sample_hz, args.concurrency, not args.no_analyze)
        results.append(r)
        print(json.dumps(r), flush=True)
    print()
    print("| processes | tasks/s | vs 1 process | CPU s: workers / backends / wall | machine CPU user/sys/iowait/idle/steal % | top wait events (mean active backends in that state per sample) |")
    print("|---|---|---|---|---|---|")
    base = results[0]["rate"]
    for r in results:
        c, m = r["cpu_seconds"], r["machine_cpu_pct"]
        print(f"| {r['procs']} | {r['rate']:,.0f} | {r['rate'] / base:.2f} | {c['workers']} / {c['backends']} / {c['wall']} | "
              f"{m['user']}/{m['system']}/{m['iowait']}/{m['idle']}/{m['steal']} | "
              + ", ".join(f"{k} {v}" for k, v in r["top_waits"]) + " |")


if __name__ == "__main__":
    main()
