"""A worker host that loses the network, and gets it back (issue 19).

Three worker "hosts" are network namespaces on a bridge (python/tests/netns.py);
the PostgreSQL server runs in the root namespace and listens on the bridge's
address. Each host runs one ``pyconductor worker`` process
(``ip netns exec <host> python -m pyconductor worker``) of apps.partition_app,
whose handlers journal every start and every step body to a file on this
machine's disk, so what a cut-off worker runs is counted at the moment it runs.

The scenario, with a 5 s lease, 0.5 s heartbeat and reap:

1. A durable run (4 steps of 2 s) and a batch of slow tasks (2 s each) are
   spread over the three hosts.
2. Once the run has checkpointed two steps, the host holding it is cut off
   (its bridge port drops every frame, both ways, silently: no RST, no
   error; see netns.py) at the worst moment for its heartbeat: while the
   server is answering it. (The test locks conductor.workers until the
   host's heartbeat waits on it (a heartbeat skips a task row another session
   holds, but reads its worker's row first, waiting up to its lock_timeout of
   5 s), cuts the link, and lets go: the heartbeat commits, its answer is
   lost.) The server gives up on that
   connection (tcp_user_timeout = 2 s on this server; with PostgreSQL's
   defaults the kernel gives up after about 15 minutes of retransmissions,
   so a longer partition does the same).
3. The cut host's leases expire; the other hosts' reapers take its tasks
   back and the other hosts finish everything, the durable run from its
   first step not saved before the cut.
4. The link heals. The cut worker's late results are refused by fencing
   (complete_many answers 'lost' for them; its step checkpoint gets LeaseLost,
   SQLSTATE QC201), and the tasks keep the other hosts' results. The cut
   worker carries on without a restart: its heartbeat connects again (the
   one waiting for an answer the server will never send must notice that the
   connection is dead: TCP keepalives) and it claims and finishes new tasks
   (in a queue only it serves), each longer than its lease: none runs twice,
   so its heartbeat extends their leases again.

Printed: tasks enqueued, succeeded, run twice (handlers started twice: only
the cut host's tasks in flight at the cut, at most twice its concurrency),
lost (zero), late results refused.

Skipped, with the reason, where network namespaces cannot be made (not root,
no CAP_NET_ADMIN); CI runs as root.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import psycopg
import pytest
from helpers import WaitTimeout, wait_until
from netns import Host, Lan, lan, unavailable
from processes import TESTS

from pyconductor import Conductor
from pyconductor.dev.devdb import DevDB
from pyconductor.migrate import migrate

APP = "apps.partition_app:app"
LEASE = 5.0  # short, yet 10 heartbeats: a worker stalled a few seconds on a loaded machine keeps its tasks
CONCURRENCY = 3
WORKER_ARGS = ("--lease", str(LEASE), "--heartbeat", "0.5", "--reap", "0.5", "--poll", "0.5",
               "--concurrency", str(CONCURRENCY), "--no-scheduler", "--log-level", "INFO")  # fmt: skip
SERVER_GIVES_UP_MS = 2000  # the server's tcp_user_timeout: it drops a connection whose data goes unacknowledged
BATCH = 30  # slow tasks of the first phase
SLOW_MS = 2000
STEPS, STEP_MS = 4, 2000
AFTER = CONCURRENCY  # tasks for the cut host alone after the heal (its own queue), each longer than the lease
AFTER_MS = int(LEASE * 1000 + 2000)
WAIT = 90.0  # generous: the machine is shared


@pytest.fixture
def net() -> Iterator[Lan]:
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    with lan(3) as made:
        yield made


@pytest.fixture
def server(net: Lan) -> Iterator[DevDB]:
    """A cluster of its own, listening on 127.0.0.1 (the test) and the bridge (the hosts)."""
    parent = Path(tempfile.mkdtemp(prefix="conductor-partition-"))
    parent.chmod(0o755)  # the postgres OS user must traverse it
    db = DevDB(parent / "data", settings={
        "listen_addresses": f"127.0.0.1,{net.server_address}",
        "tcp_user_timeout": str(SERVER_GIVES_UP_MS),
    })  # fmt: skip
    try:
        db.init()
        with (db.datadir / "pg_hba.conf").open("a") as hba:
            hba.write(f"host    all             all     {net.subnet}    trust\n")
        db.start("conductor")
        migrate(db.url("conductor"), progress=lambda line: None)
        yield db
    finally:
        db.destroy()
        shutil.rmtree(parent, ignore_errors=True)


class HostWorker:
    """One ``pyconductor worker`` process inside ``host``'s namespace."""

    def __init__(self, host: Host, dsn: str, worker_id: str, logs: Path) -> None:
        self.host = host
        self.worker_id = worker_id
        self.log = logs / f"{worker_id}.log"
        self.journal = logs / f"{worker_id}.journal"
        self.journal.touch()
        self._out: IO[bytes] = self.log.open("wb")
        env = {**os.environ, "CONDUCTOR_DSN": dsn, "CONDUCTOR_JOURNAL": str(self.journal), "PYTHONUNBUFFERED": "1"}
        # every host serves 'default' and a queue of its own, for work only it may take
        argv = [sys.executable, "-m", "pyconductor", "worker", "--app", APP, "--worker-id", worker_id,
                "--queues", f"default,{worker_id}", *WORKER_ARGS]  # fmt: skip
        # ip netns exec execs the command: the pid is the worker's
        self.proc = subprocess.Popen(host.command(argv), cwd=TESTS, env=env, stdout=self._out,
                                     stderr=subprocess.STDOUT)  # fmt: skip

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def records(self) -> list[list[str]]:
        return [line.split() for line in self.journal.read_text().splitlines() if line.strip()]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self._out.close()


@dataclass
class Db:
    """The test's own queries: a fresh connection each (over 127.0.0.1)."""

    url: str

    def rows(self, query: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
            cur = conn.execute(query, params)
            return cur.fetchall() if cur.description else []

    def one(self, query: str, params: Sequence[Any] | None = None) -> Any:
        return self.rows(query, params)[0][0]

    def backends(self, name: str) -> int:
        """How many server backends the connection named ``name`` (application_name) has."""
        return int(self.one("select count(*) from pg_stat_activity where application_name = %s", [name]))

    def statuses(self, ids: Sequence[int]) -> Counter[str]:
        return Counter(s for (s,) in self.rows("select status from conductor.tasks where id = any(%s)", [list(ids)]))


def started(workers: Sequence[HostWorker]) -> dict[int, list[tuple[int, str]]]:
    """Per task, the handler starts journalled: (attempt id, worker id)."""
    runs: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for w in workers:
        for rec in w.records():
            if rec[0] == "start":
                runs[int(rec[1])].append((int(rec[2]), rec[3]))
    return runs


REFUSED_RESULT = re.compile(r"result of task (\d+) \((\w+)\) refused: (\w+); discarded")
REFUSED_FAIL = re.compile(r"fail of task (\d+) \((\w+)\) refused: ")
REFUSED_STEP = re.compile(r"task (\d+) \((\w+)\) (\w+) \(a step was refused\)")
DISCARDED = re.compile(r"task (\d+) \((\w+)\) (lost|cancelled); its outcome is discarded")


def refusals(worker: HostWorker) -> dict[int, str]:
    """The late outcomes the worker logged as refused, {task id: how}: 'result lost'
    (complete_many answered 'lost'), 'step lost' (a checkpoint got LeaseLost),
    'fail lost' (its failure report got LeaseLost: a checkpoint that could not be
    sent at all), 'discarded lost' (a heartbeat answered 'lost' before the
    handler ended)."""
    text = worker.output()
    found = {int(m.group(1)): f"result {m.group(3)}" for m in REFUSED_RESULT.finditer(text)}
    found.update({int(m.group(1)): f"step {m.group(3)}" for m in REFUSED_STEP.finditer(text)})
    found.update({int(m.group(1)): "fail lost" for m in REFUSED_FAIL.finditer(text)})
    found.update({int(m.group(1)): f"discarded {m.group(3)}" for m in DISCARDED.finditer(text)})
    return found


def late(worker: HostWorker, lost: dict[int, int]) -> dict[int, int]:
    """The lost attempts ({task id: attempt id}) whose handler ``worker`` started."""
    mine = {(int(r[1]), int(r[2])) for r in worker.records() if r[0] == "start"}
    return {t: a for t, a in lost.items() if (t, a) in mine}


def test_a_host_cut_off_and_healed_loses_nothing(net: Lan, server: DevDB, tmp_path: Path) -> None:
    db = Db(server.url("conductor"))
    host_dsn = f"postgresql://{server.superuser}@{net.server_address}:{server.port}/conductor"
    with ExitStack() as stack:
        workers = [HostWorker(host, host_dsn, f"h{i}", tmp_path) for i, host in enumerate(net.hosts)]
        for w in workers:
            stack.callback(w.close)

        def state() -> str:
            return "\n".join(f"--- {w.worker_id} ---\n{w.output()[-2500:]}" for w in workers)

        wait_until(lambda: db.one("select count(*) from conductor.workers") == 3, WAIT,
                   message=lambda: "three workers registered\n" + state())  # fmt: skip

        # 1. a durable run first, then the batch: every host busy
        with Conductor(db.url) as client:
            run = client.enqueue("durable", {"steps": STEPS, "ms": STEP_MS}, priority=10)
            batch = client.enqueue_many([("slow", {"ms": SLOW_MS}) for _ in range(BATCH)])
        first = [run, *batch]

        # 2. once the run checkpointed two steps, cut its host while the server answers its heartbeat
        holder = wait_until(lambda: db.rows(
            "select claimed_by from conductor.tasks where id = %s and status = 'running' "
            "and (select count(*) from conductor.steps where task_id = %s) >= 2", [run, run]), WAIT,
            message=lambda: "two steps of the run saved\n" + state())[0][0]  # fmt: skip
        cut = next(w for w in workers if w.worker_id == holder)
        heartbeat_name = f"pyconductor heartbeat {holder}"

        def heartbeat_blocked() -> bool:
            return bool(db.one("select count(*) from pg_stat_activity where application_name = %s "
                               "and wait_event_type = 'Lock'", [heartbeat_name]))  # fmt: skip

        with psycopg.connect(db.url, autocommit=False, connect_timeout=5) as locker:

            def lock_a_row_of_the_host() -> bool:
                """Lock conductor.workers (every heartbeat reads its worker's row first) until the
                host's heartbeat waits for it; give it back and say so when that does not come
                within a few beats (the other hosts' heartbeats wait meanwhile, well inside their
                lock_timeout)."""
                blocked = False
                try:
                    locker.execute("lock table conductor.workers in access exclusive mode")
                    blocked = wait_until(heartbeat_blocked, 2.0)
                except WaitTimeout:
                    pass
                finally:
                    if not blocked:
                        locker.rollback()
                return blocked

            wait_until(lock_a_row_of_the_host, WAIT,
                       message=lambda: f"{holder}'s heartbeat waits for the table the test locked\n" + state())  # fmt: skip
            # the server has read the heartbeat (it waits for the lock) and acknowledged it: the worker
            # has nothing left to send, and waits for the answer
            port = db.one("select client_port from pg_stat_activity where application_name = %s",
                          [heartbeat_name])  # fmt: skip
            wait_until(lambda: "unacked" not in cut.host.socket(port) and "ESTAB" in cut.host.socket(port), WAIT,
                       message=lambda: f"the server acknowledged the heartbeat: {cut.host.socket(port)}")  # fmt: skip
            net.cut(cut.host)
            locker.rollback()  # the heartbeat commits; its answer is lost in the partition
        cut_at = time.monotonic()
        assert net.port_state(cut.host) == "disabled" and net.carrier(cut.host) == (True, True)
        cut_db_time = db.one("select clock_timestamp()")
        saved_before = {name for (name,) in db.rows("select name from conductor.steps where task_id = %s", [run])}

        # the server gives up on the heartbeat's connection (its answer never acknowledged)
        wait_until(lambda: db.backends(heartbeat_name) == 0, WAIT,
                   message=f"the server dropped {heartbeat_name}'s connection")  # fmt: skip

        # 3. its tasks come back by lease expiry; the other hosts finish everything
        wait_until(lambda: db.statuses(first) == Counter(succeeded=len(first)), WAIT,
                   message=lambda: f"the other hosts finish every task: {db.statuses(first)}\n" + state())  # fmt: skip
        lost = {t: a for t, a in db.rows("select task_id, id from conductor.attempts "
                                         "where worker_id = %s and outcome = 'lost'", [holder])}  # fmt: skip
        # what came back is what the cut host held: claimed before the cut, the run among them
        assert run in lost
        assert db.one("select bool_and(claimed_at < %s) from conductor.attempts where id = any(%s)",
                      [cut_db_time, list(lost.values())])  # fmt: skip
        history = db.rows("select task_id, id, worker_id, outcome, claimed_at, finished_at from conductor.attempts "
                          "where task_id = any(%s) order by task_id, id", [list(lost)])  # fmt: skip
        assert db.one("select bool_and(recoveries = 1) from conductor.tasks where id = any(%s)", [list(lost)]), (
            "\n".join(map(str, history)) + f"\ncut at {cut_db_time}\n" + state())
        assert not db.rows("select 1 from conductor.attempts a join conductor.tasks t on t.id = a.task_id "
                           "where a.worker_id = %s and a.outcome = 'succeeded' and t.id = any(%s)",
                           [holder, list(lost)])  # fmt: skip
        partition_s = time.monotonic() - cut_at

        # 4. heal: the late results are refused, the cut worker carries on
        net.heal(cut.host)
        healed_at = time.monotonic()
        wait_until(lambda: refusals(cut).keys() >= late(cut, lost).keys(), WAIT,
                   message=lambda: f"{holder} logs every late outcome refused: {refusals(cut)} of "
                                   f"{late(cut, lost)}\n" + state())  # fmt: skip
        wait_until(lambda: db.backends(heartbeat_name) == 1, WAIT,
                   message=lambda: f"{holder}'s heartbeat connects again after the heal (its connection "
                                   f"waits for an answer the server dropped: only TCP keepalives end "
                                   f"that wait)\n" + state())  # fmt: skip
        back_s = time.monotonic() - healed_at

        with Conductor(db.url) as client:
            after = client.enqueue_many([{"kind": "slow", "payload": {"ms": AFTER_MS}, "queue": holder}
                                         for _ in range(AFTER)])  # fmt: skip
        wait_until(lambda: db.statuses(after) == Counter(succeeded=AFTER), WAIT + AFTER_MS / 1000,
                   message=lambda: f"{holder} finishes the tasks of its own queue enqueued after the heal: "
                                   f"{db.statuses(after)}\n" + state())  # fmt: skip
        assert all(w.proc.poll() is None for w in workers), state()

        # -- what happened, checked -------------------------------------------------
        every = first + after
        runs = started(workers)
        twice = {t for t, starts in runs.items() if len(starts) > 1}
        refused = refusals(cut)
        stale = late(cut, lost)
        statuses = db.statuses(every)
        by_cut_after = int(db.one("select count(*) from conductor.attempts where worker_id = %s "
                                  "and outcome = 'succeeded' and task_id = any(%s)", [holder, after]))  # fmt: skip
        journal_refused = [r for r in cut.records() if r[0] == "refused"]
        results = {t: r for t, r in db.rows("select id, result from conductor.tasks where id = any(%s)",
                                            [list(lost)])}  # fmt: skip
        final = db.one("select result from conductor.tasks where id = %s", [run])
        step_runs = Counter(r[4] for w in workers for r in w.records() if r[0] == "step" and int(r[1]) == run)

        print(f"\npartition: {holder} cut for {partition_s:.1f}s, heartbeat back {back_s:.1f}s after the heal")
        print(f"tasks enqueued {len(every)} (1 durable run of {STEPS} steps, {BATCH} + {AFTER} slow); "
              f"succeeded {statuses['succeeded']}; "
              f"run twice {len(twice)} (taken back from {holder}: {len(lost)}); "
              f"lost {len(every) - statuses['succeeded']}; "
              f"late results refused {len(refused)} of {len(stale)} ({dict(Counter(refused.values()))}); "
              f"step bodies run {dict(sorted(step_runs.items()))}; "
              f"tasks after the heal finished by {holder}: {by_cut_after}")

        assert statuses == Counter(succeeded=len(every)), "lost: none"
        # a handler starts twice only for the cut host's tasks in flight at the cut, each at most twice;
        # it holds at most 3 x concurrency that ran (running, and finished but unreported)
        assert twice <= lost.keys(), (twice, lost, {t: runs[t] for t in twice}, state())
        assert all(len(runs[t]) == 2 for t in twice), {t: runs[t] for t in twice}
        assert len(twice) <= 3 * CONCURRENCY
        assert not twice & set(after), "nothing after the heal runs twice: the cut worker heartbeats again"
        # fencing: every late outcome of the cut worker refused; the tasks keep the other hosts' results
        assert stale.keys() <= refused.keys(), (stale, refused)
        assert set(refused.values()) <= {"result lost", "step lost", "fail lost", "discarded lost"}, refused
        # the run's third checkpoint, sent in the partition, reached the server after the heal: LeaseLost
        assert [r[4] for r in journal_refused] == ["QC201"], journal_refused
        for task, result in results.items():
            assert task == run or result["worker"] != holder, (task, result)
        # no finished step runs again: those saved before the cut (s1, s2 at least) ran once, on the
        # cut host, and the run's result keeps them; the later ones are the other hosts'
        assert saved_before >= {"s1", "s2"}
        for name in saved_before:
            assert step_runs[name] == 1, step_runs
        assert all((step["worker"] == holder) == (f"s{step['step']}" in saved_before) for step in final), final
        assert all(count <= 2 for count in step_runs.values()), step_runs
        # the cut worker carries on: same process, new work done
        assert by_cut_after == AFTER, f"{holder} finished {by_cut_after} of its {AFTER} tasks after the heal\n{state()}"
