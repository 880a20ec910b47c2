"""pyconductor.contrib.django's Tasks backend, in this process, against a real database.

Django is configured by django_project.harness (settings.configure, never
DJANGO_SETTINGS_MODULE), pointed at a fresh migrated database per test. The
backend enqueues on Django's own connection, in the caller's transaction: what
a rolled-back request enqueued is gone, what a committed one enqueued is one
row of conductor.tasks that other sessions see only from the commit on.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from types import ModuleType
from typing import Any

import psycopg
import pytest

from helpers import django_missing
from pyconductor import Conductor, PayloadTooLarge

if (missing := django_missing()) is not None:
    pytest.skip(missing, allow_module_level=True)

from django_project import harness  # noqa: E402 - after the skip

FULFIL = "django_project.shop.tasks.fulfil"


@pytest.fixture
def shop(db_dsn: str) -> Iterator[ModuleType]:
    """Django on a fresh database; the shop's tasks module."""
    harness.use(db_dsn)
    from django_project.shop import tasks

    yield tasks
    harness.close()


def rows(dsn: str, where: str = "true", params: Any = ()) -> list[dict[str, Any]]:
    """conductor.tasks as another session sees it."""
    with psycopg.connect(dsn, autocommit=True, row_factory=psycopg.rows.dict_row) as conn:
        return conn.execute(f"select id, kind, queue, priority, payload, status::text, run_at, enqueued_at "
                            f"from conductor.tasks where {where} order by id", params).fetchall()  # fmt: skip


def test_a_view_that_rolls_back_enqueues_nothing(shop: ModuleType, db_dsn: str) -> None:
    from django.test import Client

    from django_project.shop.models import Order

    response = Client(raise_request_exception=False).post("/orders/", {"item": "tea", "fail": "1"})
    assert response.status_code == 500
    assert rows(db_dsn) == []
    assert Order.objects.count() == 0


def test_a_view_that_commits_enqueues_one_task_beside_its_order(shop: ModuleType, db_dsn: str) -> None:
    from django.test import Client

    from django_project.shop.models import Order

    response = Client().post("/orders/", {"item": "tea"})
    assert response.status_code == 200, response.content
    body = response.json()
    order = Order.objects.get()
    assert body == {"order": order.id, "task": body["task"], "status": "READY"}
    (task,) = rows(db_dsn)
    assert str(task["id"]) == body["task"]
    assert (task["kind"], task["queue"], task["priority"], task["status"]) == (FULFIL, "default", 0, "queued")
    assert task["payload"] == {"args": [order.id], "kwargs": {}}
    assert task["run_at"] == task["enqueued_at"]
    result = shop.fulfil.get_result(body["task"])
    assert (str(result.status), result.args, result.kwargs, result.attempts) == ("READY", [order.id], {}, 0)
    assert result.task.func is shop.fulfil.func
    assert Client().get(f"/tasks/{body['task']}/").json() == {"id": body["task"], "status": "READY", "attempts": 0}


def test_other_sessions_see_the_task_from_the_commit_on(shop: ModuleType, db_dsn: str) -> None:
    from django.db import transaction

    with transaction.atomic():
        result = shop.send_receipt.enqueue("a@example.com", lines=["tea"])
        assert rows(db_dsn) == []  # not committed: no worker can claim it
        assert str(shop.send_receipt.get_result(result.id).status) == "READY"  # this transaction sees it
    (task,) = rows(db_dsn)
    assert str(task["id"]) == result.id
    assert task["payload"] == {"args": ["a@example.com"], "kwargs": {"lines": ["tea"]}}


def test_on_commit_enqueues_after_the_commit_and_not_after_a_rollback(shop: ModuleType, db_dsn: str) -> None:
    """The framework's documented way to enqueue only once the data is committed
    works here too (the enqueue then runs in autocommit, after the commit)."""
    from functools import partial

    from django.db import transaction

    try:
        with transaction.atomic():
            transaction.on_commit(partial(shop.send_receipt.enqueue, "rolled-back@example.com"))
            raise LookupError("rolled back")
    except LookupError:
        pass
    with transaction.atomic():
        transaction.on_commit(partial(shop.send_receipt.enqueue, "committed@example.com"))
        assert rows(db_dsn) == []
    assert [t["payload"]["args"] for t in rows(db_dsn)] == [["committed@example.com"]]


def test_task_enqueued_is_sent_with_the_result(shop: ModuleType) -> None:
    from pyconductor.contrib.django.compat import task_enqueued

    seen: list[Any] = []

    def receiver(sender: Any, task_result: Any, **kwargs: Any) -> None:
        seen.append(task_result)

    task_enqueued.connect(receiver)
    try:
        result = shop.send_receipt.enqueue("a@example.com")
    finally:
        task_enqueued.disconnect(receiver)
    assert [r.id for r in seen] == [result.id]


def test_a_rolled_back_savepoint_drops_only_its_task(shop: ModuleType, db_dsn: str) -> None:
    from django.db import transaction

    with transaction.atomic():
        kept = shop.send_receipt.enqueue("kept@example.com")
        try:
            with transaction.atomic():
                shop.send_receipt.enqueue("dropped@example.com")
                raise LookupError("inner block fails")
        except LookupError:
            pass
    assert [str(t["id"]) for t in rows(db_dsn)] == [kept.id]


def test_enqueue_answers_the_enqueue_time_the_row_stores(shop: ModuleType, db_dsn: str) -> None:
    from django.db import transaction

    outside = shop.fulfil.enqueue(1)
    assert outside.enqueued_at == shop.fulfil.get_result(outside.id).enqueued_at
    with transaction.atomic():
        shop.fulfil.enqueue(2)  # the transaction's clock starts here at the latest
        inside = shop.fulfil.enqueue(3)
        assert inside.enqueued_at == shop.fulfil.get_result(inside.id).enqueued_at
    assert inside.enqueued_at == rows(db_dsn, "id = %s", (int(inside.id),))[0]["enqueued_at"]


async def _closing_connections(work: Any) -> Any:
    """Await work, then close the Django connections of the thread the async API ran
    its queries in (the test's database is dropped after it)."""
    from asgiref.sync import sync_to_async
    from django.db import connections

    try:
        return await work
    finally:
        await sync_to_async(connections.close_all, thread_sensitive=True)()


def test_the_async_api_works_in_an_event_loop(shop: ModuleType, db_dsn: str) -> None:
    import asyncio

    async def view() -> tuple[Any, Any]:
        result = await shop.fulfil.aenqueue(5)
        fetched = await shop.fulfil.aget_result(result.id)
        await result.arefresh()
        return result, fetched

    result, fetched = asyncio.run(_closing_connections(view()))
    assert (str(result.status), fetched.id, fetched.args) == ("READY", result.id, [5])
    assert [str(t["id"]) for t in rows(db_dsn)] == [result.id]


def test_an_async_view_enqueues_and_reads_through_the_async_api(shop: ModuleType, db_dsn: str) -> None:
    import asyncio

    from django.test import AsyncClient

    response = asyncio.run(_closing_connections(AsyncClient().post("/async/orders/", {"item": "tea"})))
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "READY" and body["fetched"] == body["task"]
    assert [str(t["id"]) for t in rows(db_dsn)] == [body["task"]]


def test_outside_a_transaction_the_task_is_committed_at_once(shop: ModuleType, db_dsn: str) -> None:
    from django.db import connection

    assert connection.get_autocommit()
    result = shop.send_receipt.enqueue("now@example.com")
    assert [str(t["id"]) for t in rows(db_dsn)] == [result.id]


def test_a_refused_enqueue_raises_and_leaves_the_transaction_usable(shop: ModuleType, db_dsn: str) -> None:
    from django.db import transaction

    from django_project.shop.models import Order

    with transaction.atomic():
        Order.objects.create(item="tea")
        with pytest.raises(PayloadTooLarge) as raised:
            shop.send_receipt.enqueue(os.urandom(700_000).hex())  # 1.4 MB of text, the limit is 1 MiB
        assert raised.value.sqlstate == "QC103"
        assert Order.objects.count() == 1  # the statement failed in a savepoint of its own
    assert Order.objects.count() == 1
    assert rows(db_dsn) == []


def test_queue_priority_and_run_after_are_the_tasks_own(shop: ModuleType, db_dsn: str) -> None:
    later = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(hours=1)
    receipt = shop.send_receipt.enqueue("a@example.com")  # declared: queue emails, priority 10
    lowest = shop.fulfil.using(priority=-100).enqueue(1)
    deferred = shop.record.using(priority=100, run_after=later).enqueue("later")
    found = {str(t["id"]): t for t in rows(db_dsn)}
    assert (found[receipt.id]["queue"], found[receipt.id]["priority"]) == ("emails", 10)
    assert (found[lowest.id]["queue"], found[lowest.id]["priority"]) == ("default", -100)
    assert (found[deferred.id]["queue"], found[deferred.id]["priority"]) == ("reports", 100)
    assert found[deferred.id]["run_at"] == later
    back = shop.record.get_result(deferred.id)
    assert (back.task.priority, back.task.queue_name, back.task.run_after) == (100, "reports", later)
    assert shop.fulfil.get_result(lowest.id).task.run_after is None  # no run_after given: none read back


def flow_columns(dsn: str) -> dict[str, dict[str, Any]]:
    """Per task id (text), the options task_options gives, as stored."""
    with psycopg.connect(dsn, autocommit=True, row_factory=psycopg.rows.dict_row) as conn:
        found = conn.execute("select id::text, concurrency_key, concurrency_limit, dedupe_key, dedupe_until "
                             "  is not null as windowed, expires_in, rate_key, max_attempts "
                             "from conductor.tasks order by id").fetchall()  # fmt: skip
    return {row.pop("id"): row for row in found}


def test_task_options_give_conductors_options_to_the_enqueues_of_a_block(shop: ModuleType, db_dsn: str) -> None:
    from pyconductor.contrib.django import task_options

    with task_options(concurrency_key="customer:7", concurrency_limit=3, expires_in=timedelta(hours=1),
                      rate_key="customer:7", max_attempts=5):
        with task_options(dedupe_key="digest:7", dedupe_window=timedelta(hours=1)):  # nested: both apply
            digest = shop.fulfil.enqueue(7)
            again = shop.fulfil.enqueue(8)  # the same key within the hour: the first task answers
        plain_keyed = shop.send_receipt.enqueue("a@example.com")
    outside = shop.send_receipt.enqueue("b@example.com")
    assert again.id == digest.id
    found = flow_columns(db_dsn)
    assert list(found) == [digest.id, plain_keyed.id, outside.id]
    assert found[digest.id] == {"concurrency_key": "customer:7", "concurrency_limit": 3, "dedupe_key": "digest:7",
                                "windowed": True, "expires_in": timedelta(hours=1), "rate_key": "customer:7",
                                "max_attempts": 5}  # fmt: skip
    assert found[plain_keyed.id] == {**found[digest.id], "dedupe_key": None, "windowed": False}
    assert found[outside.id] == {"concurrency_key": None, "concurrency_limit": None, "dedupe_key": None,
                                 "windowed": False, "expires_in": None, "rate_key": None, "max_attempts": 1}  # fmt: skip
    (task,) = rows(db_dsn, "id = %s", (int(plain_keyed.id),))
    assert (task["queue"], task["priority"]) == ("emails", 10)  # the framework's own, as without the block


def test_task_options_reach_aenqueue(shop: ModuleType, db_dsn: str) -> None:
    import asyncio

    from pyconductor.contrib.django import task_options

    async def view() -> Any:
        with task_options(rate_key="tenant:1"):
            return await shop.fulfil.aenqueue(1)

    result = asyncio.run(_closing_connections(view()))
    assert flow_columns(db_dsn)[result.id]["rate_key"] == "tenant:1"


def test_task_options_refuse_what_the_task_carries_and_unknown_names(shop: ModuleType, db_dsn: str) -> None:
    from pyconductor.contrib.django import task_options

    with pytest.raises(TypeError, match="cannot set priority, queue"):
        with task_options(queue="emails", priority=3):
            pass
    with pytest.raises(TypeError, match="unknown task option.*: concurrency"):
        with task_options(concurrency=3):
            pass
    assert rows(db_dsn) == []


def test_task_options_values_are_the_databases_to_check(shop: ModuleType, db_dsn: str) -> None:
    from django.db import transaction

    from pyconductor import InvalidArgument
    from pyconductor.contrib.django import task_options

    with transaction.atomic():
        with task_options(concurrency_key="k", concurrency_limit=0), pytest.raises(InvalidArgument) as raised:
            shop.fulfil.enqueue(1)
        assert raised.value.sqlstate == "QC106" and "concurrency_limit 0" in str(raised.value)
        kept = shop.fulfil.enqueue(2)  # the block is over, the transaction still usable
    assert [str(t["id"]) for t in rows(db_dsn)] == [kept.id]


def test_what_the_framework_refuses_is_refused_before_the_database(shop: ModuleType, db_dsn: str) -> None:
    from pyconductor.contrib.django.compat import InvalidTaskError

    with pytest.raises(InvalidTaskError, match="Queue 'nope' is not valid"):
        shop.fulfil.using(queue_name="nope")
    with pytest.raises(InvalidTaskError, match="priority"):
        shop.fulfil.using(priority=101)
    with pytest.raises(InvalidTaskError, match="aware"):
        shop.fulfil.using(run_after=datetime(2030, 1, 1))
    assert rows(db_dsn) == []


@pytest.mark.parametrize(("args", "kwargs", "error", "message"), [
    ((datetime(2026, 1, 1),), {}, TypeError, r"fulfil: args\[0\] is a datetime.datetime; task arguments must be JSON"),
    ((), {"lines": {1: "a"}}, TypeError, r"kwargs\['lines'\] has the key 1 \(int\)"),
    ((float("nan"),), {}, ValueError, r"args\[0\] is nan"),
    (({"a": [1, {2, 3}]},), {}, TypeError, r"args\[0\]\['a'\]\[1\] is a builtins.set"),
])  # fmt: skip
def test_arguments_must_be_json(shop: ModuleType, db_dsn: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                                error: type[Exception], message: str) -> None:  # fmt: skip
    with pytest.raises(error, match=message):
        shop.fulfil.enqueue(*args, **kwargs)
    assert rows(db_dsn) == []


def nested(depth: int) -> list[Any]:
    """A list holding a list ... ``depth`` lists deep in all."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(("args", "kwargs", "message"), [
    (("a\x00b",), {}, r"fulfil: args\[0\] holds a NUL character \(at index 1\), which PostgreSQL cannot store"),
    ((), {"lines": {"k\x00": 1}}, r"kwargs\['lines'\] \(the key 'k\\x00'\) holds a NUL character"),
    (({"a": ["ok", "\ud800"]},), {}, r"args\[0\]\['a'\]\[1\] holds a lone surrogate \('\\ud800' at index 0\)"),
    ((), {"\udcff": 1}, r"kwargs \(the key '\\udcff'\) holds a lone surrogate"),
    ((nested(5000),), {}, r"fulfil: args(\[0\]){100} is nested more than 100 lists and dicts deep"),
    ((), {"tree": nested(101)}, r"kwargs\['tree'\](\[0\]){99} is nested more than 100"),
])  # fmt: skip
def test_arguments_postgresql_cannot_store_are_invalid_tasks(shop: ModuleType, db_dsn: str, args: tuple[Any, ...],
                                                              kwargs: dict[str, Any], message: str) -> None:  # fmt: skip
    """A NUL or a lone surrogate raised psycopg.DataError from the database, deep nesting a
    RecursionError: both are the framework's InvalidTaskError, before anything is enqueued."""
    from pyconductor.contrib.django.compat import InvalidTaskError

    with pytest.raises(InvalidTaskError, match=message):
        shop.fulfil.enqueue(*args, **kwargs)
    assert rows(db_dsn) == []


def test_arguments_as_deep_as_allowed_are_enqueued(shop: ModuleType, db_dsn: str) -> None:
    result = shop.fulfil.enqueue(nested(99), text="tab\tnewline\n é 🎉")  # args is the 100th level
    (row,) = rows(db_dsn)
    assert str(row["id"]) == result.id
    assert row["payload"]["kwargs"] == {"text": "tab\tnewline\n é 🎉"}
    assert row["payload"]["args"] == [nested(99)]


def test_tuples_become_lists_as_the_framework_makes_them(shop: ModuleType, db_dsn: str) -> None:
    result = shop.send_receipt.enqueue("a", lines=("x", "y"))
    assert result.kwargs == {"lines": ["x", "y"]}
    assert rows(db_dsn)[0]["payload"]["kwargs"] == {"lines": ["x", "y"]}


def test_get_result_of_what_is_no_django_task(shop: ModuleType, db_dsn: str) -> None:
    from pyconductor.contrib.django.compat import TaskResultDoesNotExist

    with Conductor(db_dsn) as app:
        foreign = app.enqueue("billing.invoice", {"n": 1})
        handmade = app.enqueue(FULFIL, {"order": 1})  # a Django task's kind, not its payload
    for result_id in ("abc", "0", "-3", str(2**63), "987654321", str(foreign), str(handmade)):
        with pytest.raises(TaskResultDoesNotExist):
            shop.fulfil.get_result(result_id)


def test_a_missing_result_leaves_the_callers_transaction_usable(shop: ModuleType) -> None:
    from django.db import transaction

    from django_project.shop.models import Order
    from pyconductor.contrib.django.compat import TaskResultDoesNotExist

    with transaction.atomic():
        Order.objects.create(item="tea")
        with pytest.raises(TaskResultDoesNotExist):
            shop.fulfil.get_result("987654321")  # get_task raised QC203, in a savepoint of its own
        assert Order.objects.count() == 1
    assert Order.objects.count() == 1


def test_get_result_through_another_task_is_the_frameworks_mismatch(shop: ModuleType) -> None:
    from pyconductor.contrib.django.compat import TaskResultMismatch

    result = shop.fulfil.enqueue(1)
    with pytest.raises(TaskResultMismatch):
        shop.record.get_result(result.id)


def test_a_cancelled_task_is_failed_and_says_why(shop: ModuleType, db_dsn: str) -> None:
    from pyconductor.errors import TaskCancelled

    result = shop.fulfil.enqueue(1)
    with Conductor(db_dsn) as app:
        app.cancel(int(result.id))
    result.refresh()
    assert str(result.status) == "FAILED"
    assert result.is_finished
    (error,) = result.errors
    assert error.exception_class is TaskCancelled
    with pytest.raises(ValueError, match="Task failed"):
        result.return_value


def test_an_expired_task_is_failed_and_names_its_deadline(shop: ModuleType, db_dsn: str) -> None:
    """A Django task whose kind has an expiry (configure_kind on its path) and that no
    worker started in time reads FAILED, its error a TaskExpired naming the deadline."""
    from pyconductor.errors import TaskExpired

    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("select conductor.configure_kind(kind => %s, expires_in => '1 minute')",
                     (shop.fulfil.module_path,))  # fmt: skip
        # due an hour ago: its minute to start has passed
        result = shop.fulfil.using(run_after=datetime.now(timezone.utc) - timedelta(hours=1)).enqueue(1)
        assert conn.execute("select tasks_expired from conductor.reap_report()").fetchone() == (1,)
    result.refresh()
    assert str(result.status) == "FAILED"
    (error,) = result.errors
    assert error.exception_class is TaskExpired
    assert error.traceback.startswith("expired: not started by its deadline ")


def test_the_backend_says_what_it_supports(shop: ModuleType) -> None:
    from pyconductor.contrib.django import ConductorBackend
    from pyconductor.contrib.django.compat import task_backends

    backend = task_backends["default"]
    assert isinstance(backend, ConductorBackend)
    assert (backend.supports_defer, backend.supports_async_task, backend.supports_get_result,
            backend.supports_priority) == (True, True, True, True)  # fmt: skip


def test_system_checks_name_what_is_wrong(shop: ModuleType) -> None:
    from pyconductor.contrib.django import ConductorBackend

    good = ConductorBackend("good", {"QUEUES": ["default", "a.b:c/d-e_f"], "OPTIONS": {"DATABASE": "default"}})
    assert list(good.check()) == []
    bad = ConductorBackend("bad", {"QUEUES": ["has space", "ok"], "ENQUEUE_ON_COMMIT": True,
                                   "OPTIONS": {"DATABASE": "elsewhere", "PRIORITY_MAP": {}}})  # fmt: skip
    found = {m.id: m.msg for m in bad.check()}
    assert set(found) == {"pyconductor.E001", "pyconductor.E002", "pyconductor.E004", "pyconductor.W001"}
    assert "PRIORITY_MAP" in found["pyconductor.E001"]
    assert "'elsewhere'" in found["pyconductor.E002"]
    assert "'has space'" in found["pyconductor.E004"]


# -- exception paths, as results.exception_path reads them from stored tracebacks ----------


class LocalError(Exception):
    pass


def _stored(exc: BaseException) -> tuple[str, str]:
    """(error, traceback) as the worker stores them for ``exc``."""
    try:
        raise exc
    except BaseException as caught:  # noqa: BLE001
        text = str(caught)
        name = type(caught).__qualname__
        return (f"{name}: {text}" if text else name), traceback.format_exc()


def _chained() -> BaseException:
    try:
        try:
            raise KeyError("inner")
        except KeyError as inner:
            raise LocalError("outer: LookupError: not this line") from inner
    except LocalError as outer:
        return outer


@pytest.mark.parametrize(("exc", "path"), [
    (ValueError("boom"), "builtins.ValueError"),
    (ValueError(), "builtins.ValueError"),
    (LocalError("two\nlines: KeyError: x"), f"{__name__}.LocalError"),
    (psycopg.errors.UniqueViolation("dup"), "psycopg.errors.UniqueViolation"),
    (_chained(), f"{__name__}.LocalError"),
])  # fmt: skip
def test_exception_paths_are_read_from_the_traceback(exc: BaseException, path: str) -> None:
    pytest.importorskip("django")
    from pyconductor.contrib.django.results import exception_path

    assert exception_path(*_stored(exc)) == path


def test_an_error_without_traceback_gets_a_generic_class() -> None:
    from pyconductor.contrib.django.results import exception_path

    assert exception_path("timed out after 5 s", None) == "builtins.TimeoutError"
    assert exception_path("the worker was lost", None) == "builtins.Exception"


# -- roles ---------------------------------------------------------------------------------


@pytest.fixture
def client_role(shop: ModuleType, db_dsn: str) -> Iterator[str]:
    """Django connected as a login role that holds conductor_client only."""
    from django.db import connections

    role = f"t_django_client_{os.getpid()}"
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(f"create role {role} login in role conductor_client")
    connections.close_all()
    connections["default"].settings_dict["USER"] = role
    try:
        yield role
    finally:
        connections.close_all()
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            conn.execute(f"drop role {role}")


def test_the_backend_needs_only_conductor_client(shop: ModuleType, client_role: str, db_dsn: str) -> None:
    from django.db import connection, transaction

    with transaction.atomic():
        result = shop.send_receipt.enqueue("a@example.com")
        with connection.cursor() as cur:
            cur.execute("select current_user")
            assert cur.fetchone()[0] == client_role
    assert str(shop.send_receipt.get_result(result.id).status) == "READY"
    assert [str(t["id"]) for t in rows(db_dsn)] == [result.id]
