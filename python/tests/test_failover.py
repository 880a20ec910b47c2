"""Failover to a synchronous standby, on real servers (issue 19).

Two local PostgreSQL clusters (python/tests/topology.py): a primary with
``synchronous_commit = on`` and ``synchronous_standby_names`` naming a standby
made by ``pg_basebackup -R``. Three real worker processes
(apps.failover_app) and a client enqueueing all along use the multi-host DSN
``host=h,h port=p1,p2 ... target_session_attrs=read-write``. During a drain
of durable runs (four checkpointed steps each) and a schedule firing every
second, the primary is stopped hard (``pg_ctl stop -m immediate``) and the
standby promoted (``pg_ctl promote``). Nothing restarts the workers.

Worker w2 is frozen (SIGSTOP) just before the crash, holding runs with
finished steps, and has a short lease (3 s): its leases are lost across the
failover and the reaper of the others, on the new primary, takes them back;
it is thawed after that, reconnects, and its late results are refused. w0 and
w1 (20 s lease, 1 s heartbeat) hold theirs across the failover: their leases
are honoured and their runs finish under the same attempts.

Executions are counted from a file the handlers append to (outside both
databases, so a lost commit cannot hide a run). Checked, and printed:

- every enqueue the client saw commit is a task that succeeded (lost: 0);
  an enqueue whose answer the crash swallowed ("in doubt") exists at most once;
- no execution the final database does not know (forgotten: 0);
- each run started once, except after an attempt the database marked lost
  (run twice, unexplained: 0); the runs w0 and w1 held started once;
- no step body ran after its result was saved (steps re-run: 0), but by
  an attempt already lost: thawed w2's handler threads run on until their
  next call to the database, and may start the body of a step another
  attempt finished meanwhile; its save is refused (counted apart);
- the schedule fired every due time from its first to its last fire once
  (duplicates: 0, gaps: 0: the outage is shorter than tick()'s one-minute
  grace, so missed due times are fired late, not skipped), each fire's
  task ran once;
- the worker processes are the same ones, and each completed work on the
  new primary.

A second test shows what the setting decides: the standby down, one write
of each kind on the primary (an enqueue, a completion, a step result, a
schedule fire), the primary crashed, the standby started and promoted. With
``off`` or ``local`` all four were acknowledged and the new primary has none;
with ``remote_write``, ``on`` or ``remote_apply`` none was acknowledged (each
waited for the standby until the crash).

Why ``on`` and not ``remote_apply`` in the first test: workers and clients read and write only
the primary (``target_session_attrs=read-write``); ``on`` waits until the
standby has flushed the commit's WAL, and a promotion replays everything
flushed, so no acknowledged commit is missing after it. ``remote_apply``
adds only that reads *on the standby* see it at once, which Conductor does
not do. (docs/scaling.md has the table for every setting.)
"""

from __future__ import annotations

import json
import shutil
import signal
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import wait_until
from processes import WorkerProcess, spawner
from topology import Pair, sync_pair

from pyconductor import Conductor
from pyconductor.migrate import migrate

APP = "apps.failover_app:app"
DBNAME = "failover"
STEPS = 4  # checkpointed steps per durable run
STEP_MS = 250  # each step body works this long
PRELOAD = 80  # runs enqueued before the drain starts
ENQUEUE_EVERY = 0.25  # then one more each this many seconds, through the failover
COMMON = ("--concurrency", "4", "--reap", "0.5", "--poll", "1", "--tick-interval", "1", "--shutdown-grace", "10")
HOLDING = ("--lease", "20", "--heartbeat", "1")  # w0, w1: a lease that outlasts the failover
SHORT_LEASE = ("--lease", "3", "--heartbeat", "0.5")  # w2: frozen past its lease across the failover


def q(dsn: str, query: str, params: Any = None) -> list[tuple[Any, ...]]:
    """One statement on a fresh autocommit connection (a crash never leaves the test a dead one)."""
    with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


@pytest.fixture
def workdir() -> Iterator[Path]:
    """Under /tmp and traversable: the servers run as the postgres OS user when we are root."""
    path = Path(tempfile.mkdtemp(prefix="conductor-failover-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def pair(workdir: Path) -> Iterator[Pair]:
    with sync_pair(workdir / "pair", synchronous_commit="on") as made:
        yield made


@dataclass
class Enqueuer:
    """A client enqueueing one durable run every ENQUEUE_EVERY seconds on the
    multi-host DSN. An enqueue that answered is acknowledged (committed, on the
    standby too); one that raised is in doubt (the crash may have cut its answer,
    not its commit). Never retried: a retry of an in-doubt enqueue would be a
    second task."""

    dsn: str
    next_seq: int
    acked: dict[int, int] = field(default_factory=dict)  # seq -> task id
    in_doubt: list[tuple[int, str]] = field(default_factory=list)  # (seq, error)
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.thread = threading.Thread(target=self._run, name="enqueuer", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)

    def _run(self) -> None:
        with Conductor(self.dsn, pool_min=1, pool_max=2) as client:
            while not self.stop.wait(ENQUEUE_EVERY):
                seq, self.next_seq = self.next_seq, self.next_seq + 1
                try:
                    self.acked[seq] = client.enqueue("durable", {"seq": seq, "steps": STEPS, "ms": STEP_MS})
                except Exception as exc:  # noqa: BLE001 - counted, and checked at the end
                    self.in_doubt.append((seq, " ".join(str(exc).split())[:200]))


def read_runlog(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def held_with_steps(dsn: str) -> dict[str, int]:
    """worker id -> durable runs it holds that have a finished step."""
    return dict(q(dsn, "select claimed_by, count(*) from conductor.tasks t where t.status = 'running' "
                       "and t.kind = 'durable' and exists (select from conductor.steps s where s.task_id = t.id) "
                       "group by 1"))  # fmt: skip


def test_failover_to_a_synchronous_standby_loses_nothing_and_reruns_nothing(
    pair: Pair, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pair.primary.connect() as conn:
        conn.execute(f"create database {DBNAME}")
    dsn = pair.dsn(DBNAME)
    migrate(dsn, progress=lambda line: None)
    # Every full claim scan counts as slow: claims remember their position in
    # conductor.claim_positions from the second claim on, the path a busy
    # database takes (by default, after two scans over 1 ms), so the failover
    # meets it every run rather than now and then.
    q(dsn, "update conductor.settings set claim_slow_scan = interval '0'")
    assert q(dsn, "select inet_server_port()")[0][0] == pair.primary.port

    runlog = tmp_path / "runlog.jsonl"
    runlog.touch()
    monkeypatch.setenv("FAILOVER_RUNLOG", str(runlog))
    with spawner(dsn, tmp_path, APP, *COMMON) as spawn:
        # w0 first: two workers declaring a new schedule at the same moment race in
        # conductor.create_schedule (the second insert's unique violation ends its start);
        # once w0 registered, its declaration is committed
        w0 = spawn(*HOLDING, name="w0")
        wait_until(lambda: q(dsn, "select 1 from conductor.workers where id = 'w0'"), timeout=60, interval=0.1,
                   message=lambda: w0.output()[-3000:])  # fmt: skip
        w1, w2 = spawn(*HOLDING, name="w1"), spawn(*SHORT_LEASE, name="w2")
        workers = [w0, w1, w2]
        pids = [w.pid for w in workers]
        wait_until(lambda: len(q(dsn, "select id from conductor.workers where id in ('w0', 'w1', 'w2')")) == 3,
                   timeout=60, interval=0.1, message=lambda: "\n".join(w.output()[-2000:] for w in workers))  # fmt: skip

        with Conductor(dsn) as client:
            preload = client.enqueue_many([("durable", {"seq": s, "steps": STEPS, "ms": STEP_MS})
                                           for s in range(PRELOAD)])  # fmt: skip
        enqueuer = Enqueuer(dsn, next_seq=PRELOAD)
        enqueuer.acked.update(enumerate(preload))
        enqueuer.start()
        try:
            failover = run_failover(pair, dsn, workers)
            # the client goes on until the thawed w2 has finished runs on the new primary
            wait_until(lambda: worked_since(dsn, "w2", failover.promoted_at), timeout=90, interval=0.2,
                       message=lambda: f"w2 finished nothing after the failover:\n{w2.output()[-3000:]}")  # fmt: skip
        finally:
            enqueuer.close()

        # a few more due times, then no more fires, so that the queue can drain
        first_after = q(dsn, "select now()")[0][0]
        wait_until(lambda: q(dsn, "select count(*) >= 3 from conductor.schedule_fires "
                                  "where schedule_name = 'every_second' and due_at > %s", (first_after,))[0][0],
                   timeout=60, interval=0.2, message="the schedule fires on the new primary")  # fmt: skip
        q(dsn, "select conductor.enable_schedule('every_second', false)")
        wait_until(lambda: q(dsn, "select count(*) = 0 from conductor.tasks "
                                  "where status in ('queued', 'running', 'waiting')")[0][0],
                   timeout=180, interval=0.2,
                   message=lambda: f"the drain: {q(dsn, 'select status, count(*) from conductor.tasks group by 1')}")  # fmt: skip

        assert [w.alive() for w in workers] == [True] * 3, "a worker process died"
        assert [w.pid for w in workers] == pids
        for w in workers:
            w.signal(signal.SIGTERM)
        codes = [w.wait(60) for w in workers]
        logs = {w.worker_id: w.output() for w in workers}
    assert codes == [0, 0, 0], codes

    counts = check(dsn, failover, runlog, enqueuer, logs)
    print("\nfailover: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


@dataclass
class Failover:
    """What the test saw of the failover, for the checks."""

    held: dict[int, tuple[str, int]]  # task id -> (worker, attempt id) of each run held at the crash
    saved: dict[int, int]  # task id -> steps saved at the crash
    promoted_at: Any  # the new primary's clock right after the promotion
    outage: float  # seconds from the crash until the DSN reached a writable primary


def run_failover(pair: Pair, dsn: str, workers: list[WorkerProcess]) -> Failover:
    """Freeze w2, crash the primary, promote the standby, thaw w2 once its leases were taken back."""
    w0, w1, w2 = workers
    wait_until(lambda: q(dsn, "select count(*) >= 3 from conductor.schedule_fires")[0][0], timeout=30,
               interval=0.1, message="the schedule firing")  # fmt: skip
    snapshot: dict[int, tuple[str, int, int]] = {}  # task id -> (worker, attempt id, steps saved)

    def freeze_w2_holding_a_saved_step() -> bool:
        # w2's runs start in one claim and move in step: look once it is frozen, thaw unless one
        # has saved a step and has steps left (then its handler cannot finish while frozen)
        w2.signal(signal.SIGSTOP)
        rows = q(dsn, "select t.id, t.claimed_by, t.attempt_id, (select count(*) from conductor.steps s "
                      "where s.task_id = t.id) from conductor.tasks t where t.status = 'running'")  # fmt: skip
        if any(worker == "w2" and 0 < steps < STEPS for _, worker, _, steps in rows):
            snapshot.update((r[0], (r[1], r[2], r[3])) for r in rows)
            return True
        w2.signal(signal.SIGCONT)
        return False

    wait_until(freeze_w2_holding_a_saved_step, timeout=60, interval=0.05,
               message=lambda: f"w2 holding a run with a saved step: {held_with_steps(dsn)}")  # fmt: skip
    held = {t: (worker, attempt) for t, (worker, attempt, _) in snapshot.items()}
    saved = {t: steps for t, (_, _, steps) in snapshot.items()}

    crashed = time.monotonic()
    pair.primary.stop("immediate")
    pair.standby.promote()
    wait_until(lambda: q(dsn, "select not pg_is_in_recovery()")[0][0], timeout=30, interval=0.05,
               message="the promoted standby accepting writes")  # fmt: skip
    outage = time.monotonic() - crashed
    assert q(dsn, "select inet_server_port()")[0][0] == pair.standby.port
    failover = Failover(held=held, saved=saved, promoted_at=q(dsn, "select now()")[0][0], outage=outage)

    # w0 and w1 reconnect by themselves and go on; w2's runs come back by the reaper
    for w in (w0, w1):
        wait_until(lambda w=w: worked_since(dsn, w.worker_id, failover.promoted_at), timeout=60, interval=0.2,
                   message=lambda w=w: f"{w.worker_id} finished nothing on the new primary:\n{w.output()[-3000:]}")  # fmt: skip
    # each attempt w2 held ends: lost (the reaper took it back), or succeeded if its report crossed the freeze
    w2_attempts = [a for w, a in held.values() if w == "w2"]
    wait_until(lambda: q(dsn, "select count(*) = %s from conductor.attempts where id = any(%s) and outcome is not null",
                         (len(w2_attempts), w2_attempts))[0][0],
               timeout=60, interval=0.2, message="the reaper taking w2's runs back")  # fmt: skip
    w2.signal(signal.SIGCONT)
    return failover


def worked_since(dsn: str, worker_id: str, promoted_at: Any) -> bool:
    """Whether ``worker_id`` completed a run it claimed on the new primary."""
    return bool(q(dsn, "select exists (select from conductor.attempts where worker_id = %s "
                       "and claimed_at > %s and outcome = 'succeeded')", (worker_id, promoted_at))[0][0])  # fmt: skip


def check(dsn: str, failover: Failover, runlog: Path, enqueuer: Enqueuer, logs: dict[str, str]) -> dict[str, Any]:
    """The checks of the module doc; returns the counts to print."""
    lines = read_runlog(runlog)
    tasks = {r[0]: r[1:] for r in q(dsn, "select id, kind, status::text, (payload->>'seq')::int, recoveries "
                                         "from conductor.tasks")}  # fmt: skip
    attempts = q(dsn, "select task_id, id, worker_id, outcome from conductor.attempts")
    lost_attempts = Counter(t for t, _, _, outcome in attempts if outcome == "lost")
    attempts_of = Counter(t for t, _, _, _ in attempts)

    # every acknowledged enqueue succeeded; an in-doubt one exists at most once
    durable = {task_id: row for task_id, row in tasks.items() if row[0] == "durable"}
    by_seq = Counter(row[2] for row in durable.values())
    lost = [seq for seq, task_id in enqueuer.acked.items() if tasks.get(task_id, (None, None))[1] != "succeeded"]
    assert not lost, f"{len(lost)} acknowledged enqueue(s) did not succeed, e.g. seq {lost[:5]}"
    twice_enqueued = [seq for seq, n in by_seq.items() if n > 1]
    assert not twice_enqueued, f"payload seq(s) enqueued twice: {twice_enqueued[:5]}"
    not_succeeded = [t for t, row in tasks.items() if row[1] != "succeeded"]
    assert not not_succeeded, f"{len(not_succeeded)} task(s) did not succeed: {not_succeeded[:5]}"
    doubt_landed = sum(1 for seq, _ in enqueuer.in_doubt if seq in by_seq)

    # every execution belongs to a task the new primary knows (with the same payload)
    forgotten = [ln for ln in lines if ln["task"] not in tasks or tasks[ln["task"]][0] != ln["kind"]
                 or (ln["kind"] == "durable" and tasks[ln["task"]][2] != ln["seq"])]  # fmt: skip
    assert not forgotten, f"{len(forgotten)} execution(s) of work the new primary does not know: {forgotten[:3]}"

    # each run started once, again only after an attempt the database marked lost
    starts = Counter(ln["task"] for ln in lines if ln["what"] == "start")
    never = [t for t in tasks if starts[t] == 0]
    assert not never, f"{len(never)} succeeded task(s) whose handler never ran: {never[:5]}"
    run_twice = {t: n for t, n in starts.items() if n > 1}
    unexplained = {t: n for t, n in run_twice.items() if n > 1 + lost_attempts[t]}
    assert not unexplained, f"run(s) started more often than 1 + their lost attempts: {list(unexplained.items())[:5]}"

    # the leases held across the failover: honoured (w0, w1) or reclaimed (w2; a run whose report
    # crossed the freeze finished under its attempt and was not held across)
    honoured = [t for t, (w, _) in failover.held.items() if w != "w2"]
    outcome_of = {attempt_id: outcome for _, attempt_id, _, outcome in attempts}
    reclaimed = [t for t, (w, a) in failover.held.items() if w == "w2" and outcome_of[a] == "lost"]
    crossed = [t for t, (w, a) in failover.held.items() if w == "w2" and outcome_of[a] != "lost"]
    assert reclaimed, "no run of w2 was held across the failover"
    broken = [t for t in honoured if starts[t] != 1 or attempts_of[t] != 1 or tasks[t][3] != 0]
    assert not broken, f"run(s) held by w0/w1 across the failover that did not finish under their attempt: {broken}"
    final = {t: attempt_id for t, attempt_id, _, outcome in attempts if outcome == "succeeded"}
    not_reclaimed = [t for t in reclaimed
                     if lost_attempts[t] < 1 or tasks[t][3] < 1 or final[t] == failover.held[t][1]]  # fmt: skip
    assert not not_reclaimed, f"run(s) w2 lost that the reaper did not give to another attempt: {not_reclaimed}"
    refused = "refused" in logs["w2"] or "lost; stopping its handler" in logs["w2"]
    assert refused, f"w2 was not told its runs were lost:\n{logs['w2'][-3000:]}"

    # no step body ran again after its result was saved, by an attempt that held its task. A
    # lost attempt may: thawed w2's handler threads run on until their next call to the
    # database (a step save) is refused; such a body is a zombie's, and its save must be refused.
    steps = {(t, int(name[1:])): (at.timestamp(), attempt_id)
             for t, name, at, attempt_id in q(dsn, "select task_id, name, saved_at, attempt_id "
                                                   "from conductor.steps")}  # fmt: skip
    lost_at = {attempt_id: at.timestamp() for attempt_id, at in
               q(dsn, "select id, finished_at from conductor.attempts where outcome = 'lost'")}  # fmt: skip
    step_lines = [ln for ln in lines if ln["what"] == "step"]
    after_save = [ln for ln in step_lines if ln["at"] > steps[(ln["task"], ln["step"])][0]]
    zombie = [ln for ln in after_save if ln["attempt"] in lost_at and ln["at"] >= lost_at[ln["attempt"]]]
    steps_rerun = [ln for ln in after_save if ln not in zombie]
    assert not steps_rerun, f"{len(steps_rerun)} finished step(s) ran again: {steps_rerun[:3]}"
    zombie_saved = [ln for ln in zombie if steps[(ln["task"], ln["step"])][1] == ln["attempt"]]
    assert not zombie_saved, f"a lost attempt's step result was stored: {zombie_saved}"
    step_bodies = Counter((ln["task"], ln["step"]) for ln in step_lines)
    in_flight_again = sum(n - 1 for n in step_bodies.values() if n > 1)
    saved_steps_of_reclaimed = sum(failover.saved[t] for t in reclaimed)
    assert saved_steps_of_reclaimed >= 1  # what the freeze waited for: the check above had finished steps to see

    # the schedule: every due time from the first fire to the last, once; each fire's task ran once
    fires = q(dsn, "select due_at, task_id from conductor.schedule_fires "
                   "where schedule_name = 'every_second' and not manual order by due_at")  # fmt: skip
    dues = [due for due, _ in fires]
    duplicates = len(dues) - len(set(dues)) + sum(1 for _, t in fires if starts[t] != 1)
    expected = int((dues[-1] - dues[0]).total_seconds()) + 1
    gaps = expected - len(set(dues))
    across = sum(1 for due in dues if due <= failover.promoted_at) and any(due > failover.promoted_at for due in dues)
    assert across, "the schedule did not fire on both sides of the failover"
    assert duplicates == 0, f"{duplicates} due time(s) fired or ran more than once"
    assert gaps == 0, f"{gaps} due time(s) between {dues[0]} and {dues[-1]} never fired"

    return {
        "outage (s)": f"{failover.outage:.1f}",
        "tasks enqueued (acknowledged)": len(enqueuer.acked),
        "enqueues in doubt": len(enqueuer.in_doubt),
        "in doubt but committed": doubt_landed,
        "succeeded": sum(1 for row in durable.values() if row[1] == "succeeded"),
        "lost": len(lost),
        "forgotten executions": len(forgotten),
        "run twice (unexplained)": len(unexplained),
        "runs held across the failover, leases honoured": len(honoured),
        "runs reclaimed by the reaper": len(reclaimed),
        "w2 runs whose result crossed the freeze": len(crossed),
        "their saved steps": saved_steps_of_reclaimed,
        "steps re-run after being saved": len(steps_rerun),
        "step bodies a lost attempt ran on (saves refused)": len(zombie),
        "in-flight step bodies run again": in_flight_again,
        "schedule fires": len(dues),
        "duplicates": duplicates,
        "gaps": gaps,
    }


# -- what synchronous_commit decides --------------------------------------------------

# One write of each kind a failover can lose, made on the primary while its standby is down.
WRITES = {
    "an enqueue": "select conductor.enqueue(kind => 'k', payload => '{\"n\": 1}'::jsonb)",
    "a completion": "select * from conductor.complete_many(attempt_ids => array[%(done)s]::bigint[], "
                    "results => array['{}']::jsonb[])",
    "a step result": "select conductor.save_step(attempt_id => %(step)s, name => 's1', result => '1'::jsonb)",
    "a schedule fire": "select count(*) from conductor.tick()",
}  # fmt: skip
ASYNCHRONOUS = ("off", "local")  # the synchronous_commit settings that do not wait for the standby
# ... and whether the new primary has it
PRESENT = {
    "an enqueue": "select count(*) > 0 from conductor.tasks where payload->>'n' = '1'",
    "a completion": "select status = 'succeeded' from conductor.tasks where id = %(done_task)s",
    "a step result": "select count(*) > 0 from conductor.steps where task_id = %(step_task)s and name = 's1'",
    "a schedule fire": "select count(*) > 0 from conductor.schedule_fires",
}


@pytest.mark.parametrize("mode", ["off", "local", "remote_write", "on", "remote_apply"])
def test_what_a_failover_loses_depends_on_synchronous_commit(workdir: Path, mode: str) -> None:
    """The standby is down (fallen behind, cut off) while the primary takes an
    enqueue, a completion, a step result and a schedule fire; then the primary
    crashes, and the standby is started and promoted.

    ``off`` and ``local`` answer all four, and the new primary has none of them: a task
    enqueued is gone, a completed task is running again (its lease will be
    reclaimed and it will run a second time), a step will run again, a due
    time will fire again. ``remote_write``, ``on`` and ``remote_apply`` answer
    none of them: each commit waits for
    the standby (wait event SyncRep) until the crash cuts its connection, so no
    client was told "done" of anything the new primary lacks."""
    with sync_pair(workdir / "pair", synchronous_commit=mode) as pair:
        with pair.primary.connect() as conn:
            conn.execute(f"create database {DBNAME}")
        dsn = pair.dsn(DBNAME)
        migrate(dsn, progress=lambda line: None)
        # replicated: two tasks claimed (one to complete, one to save a step of), a schedule
        q(dsn, "select conductor.enqueue_many(tasks => '[{\"kind\": \"k\"}, {\"kind\": \"k\"}]'::jsonb)")
        claimed = q(dsn, "select task_id, attempt_id from conductor.claim(worker_id => 'wx', max_tasks => 2) "
                         "order by task_id")  # fmt: skip
        assert len(claimed) == 2
        (done_task, done), (step_task, step) = claimed
        q(dsn, "select conductor.create_schedule(name => 'every_second', cron => '* * * * * *', kind => 'k')")
        wait_until(lambda: q(dsn, "select bool_and(next_due_at <= now()) from conductor.schedules")[0][0],
                   timeout=10, message="the schedule due")  # fmt: skip

        # all of that on the standby before it stops (with off or local nothing waited for it)
        setup_lsn = q(dsn, "select pg_current_wal_insert_lsn()::text")[0][0]
        wait_until(lambda: q(pair.standby.url(DBNAME), "select pg_last_wal_replay_lsn() >= %s::pg_lsn",
                             (setup_lsn,))[0][0], timeout=30, message="the standby replaying the set-up")  # fmt: skip
        pair.standby.stop("fast")
        params = {"done": done, "step": step, "done_task": done_task, "step_task": step_task}
        answers: dict[str, str] = {}

        def write(what: str) -> None:
            try:
                with psycopg.connect(pair.primary.url(DBNAME), autocommit=True, connect_timeout=5,
                                     application_name=f"write {what}") as conn:  # fmt: skip
                    conn.execute(WRITES[what], params).fetchall()
                answers[what] = "acknowledged"
            except psycopg.Error as exc:
                answers[what] = f"error: {' '.join(str(exc).split())[:120]}"

        threads = [threading.Thread(target=write, args=(what,), daemon=True) for what in WRITES]
        for thread in threads:
            thread.start()
        if mode in ASYNCHRONOUS:
            wait_until(lambda: len(answers) == len(WRITES), timeout=30, message=lambda: f"the writes: {answers}")
        else:
            waiting = ("select count(*) from pg_stat_activity "
                       "where wait_event = 'SyncRep' and application_name like 'write %'")
            wait_until(lambda: q(pair.primary.url(DBNAME), waiting)[0][0] == len(WRITES), timeout=30,
                       message="the writes waiting for the standby")  # fmt: skip
            assert answers == {}

        pair.primary.stop("immediate")
        for thread in threads:
            thread.join(30)
        pair.standby.start()
        pair.standby.promote()
        wait_until(lambda: q(dsn, "select not pg_is_in_recovery()")[0][0], timeout=30, message="the new primary")
        present = {what: bool(q(dsn, PRESENT[what], params)[0][0]) for what in WRITES}

    acknowledged = sorted(what for what, answer in answers.items() if answer == "acknowledged")
    lost = sorted(what for what in acknowledged if not present[what])
    print(f"\nsynchronous_commit = {mode}: writes acknowledged {len(acknowledged)} of {len(WRITES)}, "
          f"on the new primary {sum(present.values())}, acknowledged but lost {len(lost)} ({', '.join(lost) or '-'})")
    assert not any(present.values()), f"the standby was down, yet the new primary has {present}"
    if mode in ASYNCHRONOUS:
        assert lost == sorted(WRITES), answers
    else:
        assert acknowledged == [] and lost == [], answers
