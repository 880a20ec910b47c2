"""Conductor through a real pgbouncer in transaction mode (issue 19).

Each test starts Debian's pgbouncer (/usr/sbin/pgbouncer, 1.18: no
protocol-level prepared statements) in front of its own database of the test
cluster, ``pool_mode = transaction``, with fewer server connections than
clients, and stops it at the end. Through it:

- the lifecycle scenario (python/tests/lifecycle: succeed, fail and retry,
  fail for good, cancel while running, a durable run resumed after kill -9
  without re-running finished steps, SIGTERM hands back) with the Python
  worker in pooler mode (``--pooler transaction``) and the Node worker
  (``--no-listen``), while a sampler counts the pooler's clients and server
  connections;
- a drain by two pooler-mode worker processes while eight client
  connections enqueue through the same pooler (2 server connections);
- no session state: a second worker's claim on the same server session is not
  steered by the first's remembered position, and a pooler-mode worker leaves
  no LISTEN, advisory lock, prepared statement or setting on the session;
- leadership needs no session: two schedulers lead under one lease (every
  due time once), a singleton runs and hands its lease over, and only what
  needs a session (the dashboard's LISTEN, the event bus) refuses with a
  message that says a direct connection is needed.

The counts each test checked are printed (run with -s to see them).
"""

from __future__ import annotations

import asyncio
import csv
import io
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
from lifecycle.runner import assert_scenario_kept, node_problem, run_scenario, starter
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row

from helpers import wait_until
from processes import TESTS, WorkerProcess
from pyconductor import Conductor
from pyconductor.aio import AsyncConductor
from pyconductor.dev.devdb import free_port
from pyconductor.link import DirectConnectionNeeded
from pyconductor.scheduler import Scheduler
from pyconductor.singleton import SingletonRunner
from pyconductor.worker import Worker

PGBOUNCER = Path("/usr/sbin/pgbouncer")
TERMINAL = ("succeeded", "failed", "dead", "cancelled", "timed_out")
# parameters pgbouncer sets on a server session for each client it hands it to
TRACKED = ("application_name", "client_encoding", "DateStyle", "TimeZone", "standard_conforming_strings", "IntervalStyle")


@dataclass
class Bouncer:
    """A running pgbouncer in front of one database; ``url`` is the clients' DSN."""

    port: int
    user: str
    dbname: str
    psql: Path
    log: Path
    proc: subprocess.Popen[bytes]
    peak: dict[str, int] = field(default_factory=lambda: {"clients": 0, "servers": 0})

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{self.dbname}"

    def show(self, what: str) -> list[dict[str, str]]:
        """``SHOW <what>`` on the admin console (psql: the console speaks the simple protocol only)."""
        out = subprocess.run([str(self.psql), "-X", "--csv", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user,
                              "-d", "pgbouncer", "-c", f"show {what}"],
                             capture_output=True, text=True, timeout=10, check=True)  # fmt: skip
        return list(csv.DictReader(io.StringIO(out.stdout)))

    def counts(self) -> tuple[int, int]:
        """Client and server connections of this database now."""
        clients = sum(r["database"] == self.dbname for r in self.show("clients"))
        servers = sum(r["database"] == self.dbname for r in self.show("servers"))
        return clients, servers

    @contextmanager
    def sampling(self, interval: float = 0.2) -> Iterator[dict[str, int]]:
        """Record the most clients and server connections seen while the body runs."""
        done = threading.Event()

        def sample() -> None:
            while not done.wait(interval):
                try:
                    clients, servers = self.counts()
                except subprocess.SubprocessError:
                    continue
                self.peak["clients"] = max(self.peak["clients"], clients)
                self.peak["servers"] = max(self.peak["servers"], servers)

        thread = threading.Thread(target=sample, daemon=True)
        thread.start()
        try:
            yield self.peak
        finally:
            done.set()
            thread.join(5)


@contextmanager
def pgbouncer(cluster: Any, db_dsn: str, pool_size: int = 2) -> Iterator[Bouncer]:
    """pgbouncer, transaction mode, at most ``pool_size`` server connections to db_dsn's database."""
    if not PGBOUNCER.exists():
        pytest.fail("pgbouncer is not installed (/usr/sbin/pgbouncer): scripts/install-deps.sh installs it")
    info = conninfo_to_dict(db_dsn)
    dbname, user = str(info["dbname"]), str(info.get("user") or cluster.user)
    password = str(info.get("password") or "")
    workdir = Path(tempfile.mkdtemp(prefix="conductor-pgbouncer-"))
    workdir.chmod(0o755)
    port = free_port()
    server = f"host={cluster.host} port={cluster.port} dbname={dbname} user={user}"
    if password:
        server += f" password={password}"
    (workdir / "userlist.txt").write_text(f'"{user}" "{password}"\n')
    (workdir / "pgbouncer.ini").write_text(f"""\
[databases]
{dbname} = {server} pool_size={pool_size}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {workdir}/userlist.txt
admin_users = {user}
pool_mode = transaction
default_pool_size = {pool_size}
max_db_connections = {pool_size}
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = 500
logfile = {workdir}/pgbouncer.log
pidfile = {workdir}/pgbouncer.pid
""")
    command = [str(PGBOUNCER), str(workdir / "pgbouncer.ini")]
    if os.geteuid() == 0:  # pgbouncer will not run as root: it switches to postgres (-u)
        pw = pwd.getpwnam("postgres")
        for path in (workdir, *workdir.iterdir()):
            os.chown(path, pw.pw_uid, pw.pw_gid)
        command[1:1] = ["-u", "postgres"]
    out = (workdir / "stdout.log").open("wb")
    proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    bouncer = Bouncer(port, user, dbname, cluster.bindir / "psql", workdir / "pgbouncer.log", proc)

    def up() -> bool:
        assert proc.poll() is None, f"pgbouncer exited: {(workdir / 'stdout.log').read_text()}"
        try:
            bouncer.show("version")
        except subprocess.SubprocessError:
            return False
        return True

    try:
        wait_until(up, timeout=20, message="pgbouncer answers on its admin console")
        yield bouncer
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        out.close()
        shutil.rmtree(workdir, ignore_errors=True)


def pooled(url: str) -> psycopg.Connection[dict[str, Any]]:
    """A client connection through the pooler, as pooler mode makes them: no prepared statements."""
    return psycopg.connect(url, autocommit=True, prepare_threshold=None, row_factory=dict_row, connect_timeout=10)


def value(conn: psycopg.Connection[Any], query: str, params: Any = None) -> Any:
    row = conn.execute(query, params).fetchone()
    return None if row is None else next(iter(row.values())) if isinstance(row, dict) else row[0]


# -- the lifecycle ------------------------------------------------------------------


# each worker's own switch for a transaction-mode pooler
POOLER_ARGS = {"python": ("--pooler", "transaction"), "node": ("--no-listen",)}


@pytest.mark.parametrize("language", ["python", "node"])
def test_the_lifecycle_scenario_through_pgbouncer(language: str, cluster: Any, db_dsn: str, tmp_path: Path) -> None:
    """The whole lifecycle scenario, its workers through pgbouncer (2 server
    connections) in their pooler mode; the runner's own statements go direct.
    The Node case fails (never skips) without node: CI installs it."""
    if language == "node" and (problem := node_problem()):
        pytest.fail(f"the Node worker cannot run: {problem}")
    with pgbouncer(cluster, db_dsn, pool_size=2) as bouncer, bouncer.sampling() as peak, \
            starter(language, bouncer.url, tmp_path, *POOLER_ARGS[language]) as start:  # fmt: skip
        counts = run_scenario(start, db_dsn, label=f"{language} through pgbouncer (transaction mode)")
    print(f"pgbouncer peak: {peak['clients']} client connections over {peak['servers']} server connections")

    assert_scenario_kept(counts)
    # more clients than server connections: each worker holds several links
    assert peak["servers"] <= 2
    assert peak["clients"] > peak["servers"], peak


def test_two_workers_drain_what_eight_clients_enqueue_through_two_server_connections(
        cluster: Any, db_dsn: str, tmp_path: Path) -> None:  # fmt: skip
    """Eight client connections enqueue (Conductor.enqueue on a pooled
    connection) while two pooler-mode worker processes drain, all through two
    server connections: every task succeeds once, the flaky ones after their
    retries; none runs twice, none is lost."""
    per_client, clients = 40, 8
    with pgbouncer(cluster, db_dsn, pool_size=2) as bouncer, bouncer.sampling() as peak:
        app = Conductor(bouncer.url)
        workers = [WorkerProcess(bouncer.url, tmp_path / f"w{i}.log", "lifecycle.app:app", f"drain-{i}",
                                 "--pooler", "transaction", "--concurrency", "4", "--no-scheduler", "--poll", "0.5",
                                 "--lease", "30", "--reap", "1")  # fmt: skip
                   for i in range(2)]
        conns = [pooled(bouncer.url) for _ in range(clients)]
        try:
            with psycopg.connect(db_dsn, autocommit=True) as direct:
                wait_until(lambda: value(direct, "select count(*) from conductor.workers where id like 'drain-%%'") == 2,
                           timeout=60, message="both workers registered")  # fmt: skip
            # every client connected, both workers claiming: more clients than server connections now
            clients_open, servers_open = bouncer.counts()
            ids: list[int] = []
            lock = threading.Lock()
            errors: list[BaseException] = []

            def client(n: int) -> None:
                try:
                    with conns[n] as conn:
                        for i in range(per_client):
                            if i % 10 == 0:  # one in ten fails once, then succeeds (retried by the database)
                                task_id = app.enqueue("lifecycle.flaky", {"fail_times": 1}, max_attempts=3,
                                                      conn=conn)  # fmt: skip
                            else:
                                task_id = app.enqueue("lifecycle.echo", {"value": f"{n}-{i}"}, conn=conn)
                            with lock:
                                ids.append(task_id)
                except BaseException as exc:  # noqa: BLE001 - reported below
                    errors.append(exc)

            threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            assert not errors, errors
            with psycopg.connect(db_dsn, autocommit=True, row_factory=dict_row) as direct:
                def unfinished() -> int:
                    return int(value(direct, "select count(*) from conductor.tasks where id = any(%s) and "
                                             "status::text <> all(%s)", (ids, list(TERMINAL))))  # fmt: skip

                wait_until(lambda: unfinished() == 0, timeout=180, interval=0.2,
                           message=lambda: f"{unfinished()} of {len(ids)} tasks unfinished;\n"
                           + "\n".join(w.output()[-2000:] for w in workers))  # fmt: skip
                row = direct.execute(
                    "select count(*) filter (where t.status = 'succeeded') as succeeded,"
                    " count(*) filter (where t.status <> 'succeeded') as not_succeeded,"
                    " count(*) filter (where t.kind = 'lifecycle.flaky' and t.attempt = 2) as retried_once,"
                    " count(*) filter (where (select count(*) from conductor.attempts a where a.task_id = t.id"
                    "   and a.outcome = 'succeeded') > 1) as succeeded_twice,"
                    " count(*) filter (where t.kind = 'lifecycle.echo' and t.attempt <> 1) as echo_rerun,"
                    " count(distinct a.worker_id) as workers"
                    " from conductor.tasks t left join conductor.attempts a on a.task_id = t.id and a.attempt = 1"
                    " where t.id = any(%s)", (ids,)).fetchone()  # fmt: skip
        finally:
            for w in workers:
                w.close()
            for c in conns:
                c.close()
            app.close()
    assert row is not None
    enqueued = per_client * clients
    run_twice = row["succeeded_twice"] + row["echo_rerun"]
    lost = enqueued - row["succeeded"] - row["not_succeeded"]
    print(f"pgbouncer drain: enqueued={enqueued} succeeded={row['succeeded']} retried={row['retried_once']} "
          f"run_twice={run_twice} lost={lost} failed={row['not_succeeded']} workers={row['workers']}; "
          f"{clients_open} clients over {servers_open} server connections once all were connected, "
          f"at most {peak['servers']} server connections")  # fmt: skip
    assert len(set(ids)) == enqueued
    assert row["succeeded"] == enqueued and row["not_succeeded"] == 0
    assert row["retried_once"] == enqueued // 10
    assert run_twice == 0 and lost == 0
    assert row["workers"] == 2
    assert clients_open >= clients + 2 and servers_open <= 2, (clients_open, servers_open)
    assert peak["servers"] <= 2, peak


# -- no session state -----------------------------------------------------------------


def test_a_claim_leaves_nothing_on_the_session_for_the_next_client(cluster: Any, db_dsn: str) -> None:
    """One server connection, two clients: the first worker's claims remember a
    position (every scan counts as slow here); the second worker, on the same
    server session right after, claims in exact order (a task behind the first
    worker's position comes first): the position is the first worker's row of
    conductor.claim_positions, not session state the pooler hands on."""
    with pgbouncer(cluster, db_dsn, pool_size=1) as bouncer, \
            psycopg.connect(db_dsn, autocommit=True) as direct:  # fmt: skip
        direct.execute("update conductor.settings set claim_slow_scan = '0'")
        ids = [value(direct, "select conductor.enqueue('k', jsonb_build_object('n', %s::int), 'leak')", (n,))
               for n in range(4)]  # fmt: skip
        claim = "select task_id from conductor.claim(worker_id => %s, queues => array['leak'], max_tasks => 1)"
        with pooled(bouncer.url) as first, pooled(bouncer.url) as second:
            first_pid = value(first, "select pg_backend_pid()")
            assert [value(first, claim, ("leak-a",)) for _ in range(2)] == ids[:2]
            position = value(direct, "select task_id from conductor.claim_positions where worker_id = 'leak-a'"
                                     " order by seq desc limit 1")  # fmt: skip
            assert position == ids[1], "the first worker remembers the position after its second task"
            behind = value(direct, "select conductor.enqueue('k', '{}', 'leak', run_at => now() - interval '1 hour')")
            assert value(second, "select pg_backend_pid()") == first_pid, "one server session for both clients"
            assert value(second, claim, ("leak-b",)) == behind, \
                "the second worker's claim is in exact order, not steered by the first's position"
            assert value(second, "select current_setting('conductor.claim_position', true)") in (None, "")
            assert value(first, claim, ("leak-a",)) == ids[2], "the first worker goes on from its own position"
    print(f"pgbouncer session: 2 clients over 1 server session, claims in order {ids[:2]} + {behind}, {ids[2]}")


def test_a_pooler_mode_worker_leaves_no_session_state(cluster: Any, db_dsn: str) -> None:
    """An in-process Worker in pooler mode runs tasks through a one-connection
    pool; afterwards that server session listens on nothing, holds no advisory
    lock, has no prepared statement, and the worker ran no listener."""
    with pgbouncer(cluster, db_dsn, pool_size=1) as bouncer:
        app = Conductor(bouncer.url)
        ran: list[int] = []

        @app.task("pooled.add")
        def add(payload: dict[str, Any]) -> int:
            ran.append(payload["n"])
            return int(payload["n"]) + 1

        worker = Worker(app, concurrency=4, pooler="transaction", run_scheduler=False, poll_interval=0.2)
        assert worker.listener is None and worker.pooler == "transaction"
        with psycopg.connect(db_dsn, autocommit=True) as direct, worker:
            ids = [value(direct, "select conductor.enqueue('pooled.add', jsonb_build_object('n', %s::int))", (n,))
                   for n in range(30)]  # fmt: skip
            wait_until(lambda: value(direct, "select count(*) from conductor.tasks where id = any(%s) and status = "
                                             "'succeeded'", (ids,)) == len(ids), timeout=60)  # fmt: skip
        app.close()
        with pooled(bouncer.url) as conn:
            assert value(conn, "select count(*) from pg_listening_channels()") == 0
            assert value(conn, "select count(*) from pg_prepared_statements") == 0
            assert value(conn, "select count(*) from pg_locks where locktype = 'advisory'"
                               " and database = (select oid from pg_database where datname = current_database())") == 0
            # pgbouncer itself sets the parameters it tracks per client (application_name, client_encoding, ...)
            assert value(conn, "select count(*) from pg_settings where source = 'session' and name <> all(%s)",
                         (list(TRACKED),)) == 0
    assert sorted(ran) == list(range(30))
    print(f"pgbouncer worker: {len(ids)} tasks succeeded through 1 server session; it kept no LISTEN, "
          "advisory lock, prepared statement or session setting")


def test_the_client_enqueues_waits_for_results_and_serves_health_through_pgbouncer(cluster: Any, db_dsn: str) -> None:
    """Conductor(pooler='transaction') through a one-connection pool: more
    enqueues than psycopg's prepare threshold (a prepared statement would be
    missing on the next server session), result() by polling (no LISTEN to
    hear a completion on), subscribe() refused, and a worker that inherits the
    app's mode, its scheduler leading under its lease through the pooler; its
    /health reads through the pooler (PgBouncer refuses the `options` startup
    parameter)."""
    import json
    import urllib.request

    from pyconductor.endpoints import EndpointServer

    with pgbouncer(cluster, db_dsn, pool_size=1) as bouncer:
        app = Conductor(bouncer.url, pooler="transaction", pool_max=3)

        @app.task("pooled.echo")
        def echo(payload: dict[str, Any]) -> dict[str, Any]:
            return payload

        worker = Worker(app, concurrency=2, run_scheduler=True, poll_interval=0.2, tick_interval=0.5)
        assert worker.pooler == "transaction" and worker.listener is None
        with app, worker:
            ids = [echo.enqueue({"n": n}) for n in range(12)]
            infos = [app.result(task_id, timeout=60) for task_id in ids]

            async def through_asyncio() -> list[Any]:
                async with AsyncConductor(bouncer.url, app) as aio:
                    assert aio.pooler == "transaction"
                    more = [await aio.enqueue("pooled.echo", {"n": n}) for n in range(12, 20)]
                    return [await aio.result(task_id, timeout=60) for task_id in more]

            infos += asyncio.run(through_asyncio())
            with pytest.raises(DirectConnectionNeeded, match="the event bus"):
                app.subscribe("tasks")
            with psycopg.connect(db_dsn, autocommit=True) as direct:
                direct.execute("select conductor.create_schedule(name => 'pooled.every', cron => '0 0 1 1 *',"
                               " kind => 'pooled.echo')")  # fmt: skip
            wait_until(lambda: worker._scheduler is not None and worker._scheduler.is_leader, timeout=10,
                       message="the scheduler leads through the pooler")  # fmt: skip
            with EndpointServer(worker, "127.0.0.1", 0, schedule_grace=60) as server:
                with urllib.request.urlopen(server.url + "/health", timeout=20) as resp:
                    status, body = resp.status, json.loads(resp.read())
    assert [(i.status, i.result) for i in infos] == [("succeeded", {"n": n}) for n in range(20)]
    assert status == 200 and body["status"] == "ok", body
    assert body["database"]["reachable"] and body["database"]["error"] is None, body
    assert body["schedules"]["enabled"] == 1 and body["problems"] == [], body
    print(f"pgbouncer client: {len(infos)} enqueued and waited for (sync and asyncio) through 1 server session; "
          "/health ok through it")


# -- the scheduler and what needs a session ----------------------------------------------


def test_schedulers_and_singletons_lead_through_pgbouncer(cluster: Any, db_dsn: str) -> None:
    """Two pooler-mode schedulers through one pooler: one leads under the lease (a row,
    one statement at a time), each due time fires once, no advisory lock is left on the
    server sessions; a singleton runs through it and its stop hands the lease over."""
    with pgbouncer(cluster, db_dsn, pool_size=2) as bouncer, \
            psycopg.connect(db_dsn, autocommit=True) as direct:  # fmt: skip
        direct.execute("select conductor.create_schedule(name => 'every-second', cron => '* * * * * *', kind => 'tick.k')")
        schedulers = [Scheduler(bouncer.url, tick_interval=0.2, pooler="transaction") for _ in range(2)]
        assert all(s.use_leader_lock for s in schedulers)
        for s in schedulers:
            s.start()
        try:
            wait_until(lambda: value(direct, "select count(*) from conductor.tasks where kind = 'tick.k'") >= 4,
                       timeout=30, interval=0.1, message="four fires of an every-second schedule")  # fmt: skip
            assert sum(s.is_leader for s in schedulers) == 1, "one leads"
            leader = next(s for s in schedulers if s.is_leader)
            assert value(direct, "select holder from conductor.leaders(array['scheduler'])") == leader.lease.holder
        finally:
            for s in schedulers:
                s.stop()
        ran: list[str] = []

        def fn_of(who: str) -> Any:
            return lambda stop: (ran.append(who), stop.wait())

        first = SingletonRunner(bouncer.url, "pooled", fn_of("first"), failover=0.5, pooler="transaction").start()
        second = SingletonRunner(bouncer.url, "pooled", fn_of("second"), failover=0.5, pooler="transaction")
        try:
            wait_until(lambda: first.is_leader, timeout=10, message="a singleton leads through the pooler")
            second.start()
            assert first.stop(10)
            wait_until(lambda: second.is_leader, timeout=10, message="the other takes over at once")
        finally:
            first.stop(10)
            second.stop(10)
        assert ran == ["first", "second"]
        fires, due_times = direct.execute(
            "select count(*), count(distinct due_at) from conductor.schedule_fires where schedule_name = 'every-second'"
        ).fetchone()  # fmt: skip
        advisory = value(direct, "select count(*) from pg_locks where locktype = 'advisory'"
                                 " and database = (select oid from pg_database where datname = current_database())")  # fmt: skip
    print(f"pgbouncer scheduler: 2 schedulers under one lease fired {fires} times for {due_times} due times; "
          f"{advisory} advisory locks left")
    assert fires == due_times >= 4
    assert advisory == 0


def test_what_needs_a_session_refuses_with_a_clear_message(cluster: Any, db_dsn: str) -> None:
    """serve's web role refuses behind a transaction-mode pooler, saying a direct
    connection is needed (the API and the CLI); the scheduler's lease, singletons and
    the maintenance role do not need one any more."""
    Scheduler(db_dsn, pooler="transaction", use_leader_lock=True)
    SingletonRunner(db_dsn, "feed", lambda stop: None, pooler="transaction")
    with pytest.raises(ValueError, match="unknown pooler mode"):
        Worker(Conductor(db_dsn), pooler="statement")

    env = {**os.environ, "CONDUCTOR_DSN": db_dsn, "CONDUCTOR_POOLER": "transaction"}
    env.pop("CONDUCTOR_ROLES", None)
    for roles, refused in (("worker,maintenance,web", "web"), (None, "web")):
        argv = [sys.executable, "-m", "pyconductor", "serve", "--app", "lifecycle.app:app"]
        if roles:
            argv += ["--role", roles]
        out = subprocess.run(argv, cwd=TESTS, env=env, capture_output=True, text=True, timeout=60, check=False)
        assert out.returncode != 0, out
        assert f"the {refused} role needs a direct connection" in out.stderr, out.stderr
        assert "--role worker" in out.stderr, out.stderr
    help_text = subprocess.run([sys.executable, "-m", "pyconductor", "worker", "--help"], cwd=TESTS,
                               capture_output=True, text=True, timeout=60, check=True).stdout  # fmt: skip
    assert "--pooler" in " ".join(help_text.split()) and "needs a direct connection" in " ".join(help_text.split())
