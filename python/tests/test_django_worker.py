"""``manage.py conductor_worker`` as a real process runs the project's Django tasks;
their results are read back through the framework's API (``get_result``,
``refresh``) in this process, on the same database.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg
import pytest

from helpers import django_missing, wait_until

if (missing := django_missing()) is not None:
    pytest.skip(missing, allow_module_level=True)

from django_project import harness  # noqa: E402 - after the skip
from django_project.harness import WORKER_APPNAME, ManagedWorker  # noqa: E402 - after the skip

Start = Callable[..., ManagedWorker]


@pytest.fixture
def shop(db_dsn: str) -> Iterator[ModuleType]:
    harness.use(db_dsn)
    from django_project.shop import tasks

    yield tasks
    harness.close()


@pytest.fixture
def start(db_dsn: str, tmp_path: Path) -> Iterator[Start]:
    """start(*args) runs a worker on the test's database; all are killed at the end."""
    started: list[ManagedWorker] = []

    def run(*args: str, env: dict[str, str] | None = None) -> ManagedWorker:
        worker = ManagedWorker(db_dsn, tmp_path / f"worker{len(started)}.log", *args, env=env)
        started.append(worker)
        return worker

    yield run
    for worker in started:
        worker.close()


def finished(result: Any, worker: ManagedWorker, timeout: float = 120) -> Any:
    """Wait until the worker finished ``result`` (refreshed through the framework); the result."""

    def done() -> bool:
        result.refresh()
        return bool(result.is_finished)

    wait_until(done, timeout=timeout, interval=0.1,
               message=lambda: f"task {result.id} is {result.status}; worker log:\n{worker.output()[-3000:]}")  # fmt: skip
    return result


def django_sessions(dsn: str) -> int:
    """Sessions the worker's task functions opened through Django, still open."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("select count(*) from pg_stat_activity where datname = current_database() "
                           "and application_name = %s", [WORKER_APPNAME]).fetchone()  # fmt: skip
        return int(row[0]) if row else 0


def test_a_task_enqueued_by_a_view_runs_and_its_result_reads_back(shop: ModuleType, db_dsn: str,
                                                                   start: Start) -> None:  # fmt: skip
    from django.test import Client

    from django_project.shop.models import Order

    posted = [Client().post("/orders/", {"item": item}).json() for item in ("tea", "cake", "jam")]
    worker = start("--concurrency", "2")
    for body in posted:
        result = finished(shop.fulfil.get_result(body["task"]), worker)
        assert str(result.status) == "SUCCESSFUL", result.errors
        assert result.return_value == {"order": body["order"], "item": Order.objects.get(id=body["order"]).item}
        assert (result.attempts, result.errors) == (1, [])
        assert result.started_at is not None and result.finished_at >= result.started_at
    assert set(Order.objects.values_list("status", flat=True)) == {"fulfilled"}
    view = Client().get(f"/tasks/{posted[0]['task']}/").json()
    assert view == {"id": posted[0]["task"], "status": "SUCCESSFUL", "attempts": 1,
                    "return_value": {"order": posted[0]["order"], "item": "tea"}}  # fmt: skip
    # each task's Django connection was closed after it (CONN_MAX_AGE 0), not kept by its thread
    wait_until(lambda: django_sessions(db_dsn) == 0, timeout=30,
               message=lambda: f"{django_sessions(db_dsn)} Django session(s) of the worker still open")  # fmt: skip

    worker.signal(signal.SIGTERM)
    assert worker.wait(60) == 0, worker.output()[-3000:]
    assert "stopped" in worker.output()


def test_a_failure_is_failed_with_the_exception_and_its_traceback(shop: ModuleType, start: Start) -> None:
    raised = shop.out_of_stock.enqueue("tea")
    not_json = shop.returns_a_date.enqueue()
    worker = start()
    result = finished(raised, worker)
    assert str(result.status) == "FAILED"
    (error,) = result.errors
    assert error.exception_class_path == "django_project.shop.tasks.OutOfStock"
    assert error.exception_class is shop.OutOfStock
    assert "no tea left" in error.traceback and "Traceback (most recent call last)" in error.traceback
    with pytest.raises(ValueError, match="Task failed"):
        result.return_value
    bad = finished(not_json, worker)
    assert str(bad.status) == "FAILED"
    assert "the return value of django_project.shop.tasks.returns_a_date is not JSON" in bad.errors[0].traceback


def test_takes_context_sees_its_result_and_attempt(shop: ModuleType, db_dsn: str, start: Start) -> None:
    # Django's task API has no retries; Conductor's kind policy gives them (configure_kind)
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("select conductor.configure_kind(kind => %s, max_attempts => 2, backoff_base => '0', "
                     "backoff_max => '0')", [shop.with_context.module_path])  # fmt: skip
    plain = shop.with_context.enqueue("plain")
    flaky = shop.with_context.enqueue("flaky")
    worker = start()
    once = finished(plain, worker)
    assert once.return_value == {"attempt": 1, "id": plain.id, "tag": "plain", "status": "RUNNING"}
    twice = finished(flaky, worker)
    assert str(twice.status) == "SUCCESSFUL", twice.errors
    assert twice.return_value == {"attempt": 2, "id": flaky.id, "tag": "flaky", "status": "RUNNING"}
    assert twice.attempts == 2
    assert [e.exception_class_path for e in twice.errors] == ["builtins.RuntimeError"]  # the first attempt's


def test_higher_priority_runs_first_and_queues_are_the_workers(shop: ModuleType, start: Start) -> None:
    low = shop.record.using(priority=-50).enqueue("low")
    mid = shop.record.enqueue("mid")
    high = shop.record.using(priority=50).enqueue("high")
    receipt = shop.send_receipt.enqueue("a@example.com")  # queue emails: this worker does not serve it
    worker = start("--queues", "reports", "--concurrency", "1")
    ran = [finished(r, worker).return_value for r in (high, mid, low)]  # Order ids: the order they ran in
    assert ran == sorted(ran)
    receipt.refresh()
    assert str(receipt.status) == "READY"


def test_an_async_task_runs_to_completion(shop: ModuleType, start: Start) -> None:
    result = finished(shop.ping.enqueue(3), start())
    assert result.return_value == {"pong": 3}


def test_sigterm_hands_a_running_task_back(shop: ModuleType, db_dsn: str, start: Start) -> None:
    result = shop.nap.enqueue(120)
    worker = start("--queues", "reports", "--shutdown-grace", "0.5")

    def running() -> bool:
        result.refresh()
        return str(result.status) == "RUNNING"

    wait_until(running, timeout=120, interval=0.1, message=lambda: worker.output()[-3000:])
    worker.signal(signal.SIGTERM)
    assert worker.wait(60) == 0, worker.output()[-3000:]
    result.refresh()
    assert str(result.status) == "READY"  # released: back in the queue at once, nothing counted
    assert result.attempts == 0


def test_the_worker_connects_as_its_own_role_with_dsn(shop: ModuleType, db_dsn: str, start: Start) -> None:
    """--dsn (or OPTIONS["WORKER_DSN"]): the worker's claims and reports as a
    conductor_worker login, the task functions on Django's database settings."""
    import os

    role = f"t_django_worker_{os.getpid()}"
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(f"create role {role} login in role conductor_worker")
    try:
        worker = start("--dsn", psycopg.conninfo.make_conninfo(db_dsn, user=role))
        result = finished(shop.fulfil.enqueue(0), worker)  # no order 0: fails as the task would
        assert str(result.status) == "FAILED"
        assert result.errors[0].exception_class_path == "django_project.shop.models.Order.DoesNotExist"
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            claimed_by = conn.execute("select w.worker_id, s.usename from conductor.attempts w "
                                      "left join pg_stat_activity s on s.application_name like "
                                      "'pyconductor claim ' || w.worker_id || '%%' "
                                      "where w.task_id = %s", [int(result.id)]).fetchone()  # fmt: skip
        assert claimed_by is not None and claimed_by[1] == role
        worker.signal(signal.SIGTERM)
        assert worker.wait(60) == 0, worker.output()[-3000:]
    finally:
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            conn.execute(f"drop role {role}")


def test_a_worker_without_tasks_for_its_backend_says_so(db_dsn: str, tmp_path: Path) -> None:
    out = harness.manage(db_dsn, "conductor_worker", "--backend", "nope")
    assert out.returncode == 1
    assert "no tasks backend 'nope'" in out.stderr


def test_an_idle_worker_exits_within_half_a_second_of_sigterm(shop: ModuleType, db_dsn: str, start: Start) -> None:
    """Issue 27: an idle ``manage.py conductor_worker`` took 0.5-0.7 s from SIGTERM to exit (the listener's
    0.5 s look at the halt, then up to 0.8 s of the interpreter's teardown on a loaded machine)."""
    worker = start("--no-scheduler")

    def sleeping() -> bool:  # idle: it claimed nothing and waits on its queues (conductor.sleepers)
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            row = conn.execute("select count(*) from conductor.sleepers").fetchone()
            return bool(row and row[0])

    wait_until(sleeping, timeout=120, interval=0.05, message=lambda: worker.output()[-3000:])
    sent = time.perf_counter()
    worker.signal(signal.SIGTERM)
    assert worker.wait(60) == 0, worker.output()[-3000:]
    took = time.perf_counter() - sent
    assert took < 0.5, f"{took:.2f} s from SIGTERM to exit:\n{worker.output()[-3000:]}"
    assert "stopped (0 released)" in worker.output()  # its last log line, flushed before the exit


# A path no module defines, an attribute its module lacks, and one that is no @task.
MISSING_PATHS = {
    "django_project.shop.gone.send": "ModuleNotFoundError: No module named 'django_project.shop.gone'",
    "django_project.shop.tasks.no_such_task": 'does not define a "no_such_task" attribute',
    "django_project.shop.tasks.OutOfStock": "names a type, not a Django task",
}


def test_a_task_path_that_names_no_task_fails_at_once_naming_it(shop: ModuleType, db_dsn: str,
                                                                 start: Start) -> None:  # fmt: skip
    """Issue 27: a task path no worker can import stayed queued (the worker claimed only the paths
    it discovered); the framework expects it to fail with an error naming the path. A worker
    serving a queue fails every path of it that names no task, at once, whatever retries its
    kind has; a queue it does not serve is another deployment's, left alone."""
    import subprocess
    import sys

    from pyconductor.contrib.django.compat import TaskResultStatus

    ids: dict[str, int] = {}
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        for path in MISSING_PATHS:  # as a web process of a later deploy enqueued them
            conn.execute("select conductor.configure_kind(kind => %s, max_attempts => 3, backoff_base => '0', "
                         "backoff_max => '0')", [path])  # fmt: skip
            row = conn.execute("select conductor.enqueue(kind => %s, payload => %s::jsonb, queue => 'default')",
                               [path, '{"args": [1], "kwargs": {}}']).fetchone()  # fmt: skip
            assert row is not None
            ids[path] = int(row[0])
        row = conn.execute("select conductor.enqueue(kind => 'elsewhere.tasks.job', payload => "
                           "'{\"args\": [], \"kwargs\": {}}'::jsonb, queue => 'other-deploy')").fetchone()  # fmt: skip
        assert row is not None
        foreign = int(row[0])
    # before any worker, get_result shows the task as it is (not TaskResultDoesNotExist)
    waiting = shop.fulfil.get_backend().get_result(str(ids["django_project.shop.gone.send"]))
    assert waiting.status == TaskResultStatus.READY and waiting.task.module_path == "django_project.shop.gone.send"
    assert waiting.args == [1]

    worker = start("--queues", "default,other-deploy-not-this", "--concurrency", "2")
    backend = shop.fulfil.get_backend()
    for path, why in MISSING_PATHS.items():
        result = finished(backend.get_result(str(ids[path])), worker)
        assert result.status == TaskResultStatus.FAILED, result.errors
        assert result.attempts == 1, result.errors  # not retried, though its kind allows 3 attempts
        (error,) = result.errors
        assert error.exception_class_path == "pyconductor.contrib.django.kinds.TaskPathError"
        assert issubclass(error.exception_class, ImportError)
        assert f"task path {path!r}" in error.traceback and why in error.traceback, error.traceback
        assert "deploy the code that defines it, then retry the task" in error.traceback
        assert result.task.module_path == path
        show = subprocess.run([sys.executable, "-m", "pyconductor", "tasks", "show", str(ids[path]), "--dsn", db_dsn],
                              capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        assert show.returncode == 0, show.stderr
        assert show.stdout.startswith(f"task {ids[path]}  failed  kind {path}"), show.stdout
        assert f"task path {path!r}" in show.stdout and why in show.stdout, show.stdout
    # the worker's own tasks still run beside them
    assert finished(shop.fulfil.enqueue(0), worker).errors[0].exception_class_path.endswith("Order.DoesNotExist")
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        row = conn.execute("select status::text from conductor.tasks where id = %s", [foreign]).fetchone()
    assert row == ("queued",)  # a queue this worker does not serve
    worker.signal(signal.SIGTERM)
    assert worker.wait(60) == 0, worker.output()[-3000:]


LATE_TASKS = """
try:  # Django 6
    from django.tasks import task
except ImportError:  # Django 5.2: the backport
    from django_tasks import task


@task()
def ship(n):
    return {"shipped": n}
"""


def test_a_path_enqueued_after_the_worker_started_waits_for_the_release_that_has_it(
        shop: ModuleType, db_dsn: str, start: Start, tmp_path: Path) -> None:  # fmt: skip
    """A rolling deploy: the web processes of a new release enqueue a task whose path only that
    release defines while workers of the older one still run. An older worker must not fail it:
    the task sleeps durably (no attempt counted) and a worker of the new release, claiming it
    next, runs it. A worker started after the enqueue, without the path, fails it (above)."""
    old = start("--queues", "default", "--concurrency", "2")

    def registered() -> bool:
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            row = conn.execute("select count(*) from conductor.workers").fetchone()
        return bool(row and row[0])

    wait_until(registered, timeout=60, message=lambda: old.output()[-3000:])
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        row = conn.execute("select conductor.enqueue(kind => 'latetasks.ship', payload => %s::jsonb, "
                           "queue => 'default')", ['{"args": [7], "kwargs": {}}']).fetchone()  # fmt: skip
        assert row is not None
        task_id = int(row[0])

        def state() -> tuple[Any, ...] | None:
            return conn.execute("select status::text, wait_for, attempt, error from conductor.tasks where id = %s",
                                [task_id]).fetchone()  # fmt: skip

        wait_until(lambda: state() == ("waiting", "sleep", 0, None), timeout=60,
                   message=lambda: f"{state()}; worker log:\n{old.output()[-3000:]}")  # fmt: skip
        assert "names no task in this worker, which started before it was enqueued" in old.output()
        old.signal(signal.SIGTERM)
        assert old.wait(60) == 0, old.output()[-3000:]

        (tmp_path / "latetasks.py").write_text(LATE_TASKS)
        new = start("--queues", "default", "--concurrency", "2", env={"PYTHONPATH": str(tmp_path)})
        # its sleep ends now rather than in 30 s: the reaper wakes it
        conn.execute("update conductor.tasks set wait_until = conductor.now() where id = %s", [task_id])
        conn.execute("select conductor.reap()")
        result = finished(shop.fulfil.get_backend().get_result(str(task_id)), new)
    assert str(result.status) == "SUCCESSFUL", result.errors
    assert result.return_value == {"shipped": 7}
    new.signal(signal.SIGTERM)
    assert new.wait(60) == 0, new.output()[-3000:]


def test_only_a_worker_of_named_queues_claims_every_path_of_them(shop: ModuleType, db_dsn: str) -> None:
    """The rule of the test above: QUEUES empty and no --queues means every queue, some of which
    may be another deployment's, so such a worker claims only the paths it discovered."""
    from pyconductor.contrib.django.backend import ConductorBackend
    from pyconductor.contrib.django.worker import build_worker

    every = ConductorBackend("default", {"QUEUES": [], "OPTIONS": {}})
    cases = [(shop.fulfil.get_backend(), None), (every, ["emails"]), (every, None)]
    claimed = []
    for backend, queues in cases:
        worker = build_worker(backend, queues, dsn=db_dsn)
        claimed.append((worker.queues, worker.claimed_kinds))
        worker.app.close()
    found = sorted(t.module_path for t in vars(shop).values() if type(t).__name__ == "Task")
    assert claimed == [(["default", "emails", "reports"], None), (["emails"], None), (None, found)]


def test_the_task_path_rule_reads_both_times_from_the_database(db_dsn: str) -> None:
    """Whether a task whose path no worker here loads fails at once compares the task's
    enqueued_at with its worker's registered started_at and conductor.now(): the database's
    clock, never the worker host's, which may run fast or slow."""
    from types import SimpleNamespace

    from pyconductor.client import Conductor
    from pyconductor.contrib.django.worker import _path_is_gone

    with Conductor(db_dsn) as app, psycopg.connect(db_dsn, autocommit=True) as conn:
        task_id = app.enqueue("gone.path", {})
        conn.execute("select conductor.register_worker(worker_id => 'w-clock', host => 'h', pid => 1, "
                     "queues => null, concurrency => 1, roles => '{worker}', version => 'v', "
                     "metadata => '{}'::jsonb, kinds => null)")  # fmt: skip
        ctx = SimpleNamespace(task_id=task_id, worker_id="w-clock")

        def shift(started: str, enqueued: str) -> bool:
            conn.execute(f"update conductor.workers set started_at = conductor.now() + interval '{started}' "
                         "where id = 'w-clock'")  # fmt: skip
            conn.execute(f"update conductor.tasks set enqueued_at = conductor.now() + interval '{enqueued}' "
                         "where id = %s", [task_id])  # fmt: skip
            return _path_is_gone(app, ctx)

        assert not shift("-2 minutes", "-1 minute")  # enqueued since the worker started: it waits
        assert shift("1 minute", "-1 minute")  # enqueued before the worker started: the code is gone
        assert shift("-20 minutes", "-11 minutes")  # past PATH_GRACE (10 minutes)
        conn.execute("delete from conductor.workers where id = 'w-clock'")
        assert not shift("0 s", "-1 minute")  # a worker whose row is gone counts as started after it
