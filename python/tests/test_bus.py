"""The event bus against a real PostgreSQL: app.publish / app.subscribe across two
applications, skipping one's own messages, delivery at commit only, the size
limit, the engine's 'tasks' topic, and a subscriber whose backend the server
terminates: it reconnects by itself and says that messages may have been missed.

Absence is shown without sleeping where a later message can stand in for it: a
marker published after the message that must not come arrives first (messages
of one subscription arrive in commit order)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from helpers import wait_until
from pyconductor import Conductor, InvalidArgument, PayloadTooLarge
from pyconductor.aio import AsyncConductor
from pyconductor.bus import Message, Missed, Subscription

TIMEOUT = 10.0


@pytest.fixture
def app_a(dsn: str) -> Iterator[Conductor]:
    with Conductor(dsn, pool_max=4) as app:
        yield app


@pytest.fixture
def app_b(dsn: str) -> Iterator[Conductor]:
    with Conductor(dsn, pool_max=4) as app:
        yield app


def next_message(sub: Subscription) -> Message | Missed:
    msg = sub.get(timeout=TIMEOUT)
    assert msg is not None, f"no message within {TIMEOUT}s on {sub!r}"
    return msg


def subscribed(conn: psycopg.Connection[Any], sub: Subscription) -> list[str]:
    rows = conn.execute("select topic from conductor.subscriptions where pid = %s order by topic",
                        [sub.backend_pid]).fetchall()  # fmt: skip
    return [r[0] for r in rows]


def test_a_message_published_by_one_app_reaches_the_other(app_a: Conductor, app_b: Conductor) -> None:
    with app_b.subscribe(["orders"]) as sub:
        assert app_a.publish("orders", {"id": 7, "total": 9.5}) is True
        assert next_message(sub) == Message("orders", app_a.origin, {"id": 7, "total": 9.5})


def test_nobody_subscribed_means_nothing_sent(app_a: Conductor) -> None:
    assert app_a.publish("bus-nobody", {"x": 1}) is False
    assert app_a.publish("bus-nobody") is False


def test_a_subscription_skips_its_own_apps_messages_unless_asked(app_a: Conductor, app_b: Conductor) -> None:
    with app_a.subscribe("orders") as own, app_a.subscribe("orders", skip_own=False) as everything:
        app_a.publish("orders", {"from": "a"})
        app_b.publish("orders", {"from": "b"})
        assert next_message(own) == Message("orders", app_b.origin, {"from": "b"})
        assert next_message(everything) == Message("orders", app_a.origin, {"from": "a"})
        assert next_message(everything) == Message("orders", app_b.origin, {"from": "b"})


def test_only_the_subscribed_topics_arrive(app_a: Conductor, app_b: Conductor) -> None:
    # the channel is shared: another session subscribing to 'invoices' makes them travel on it
    with app_b.subscribe(["orders"]) as orders, app_b.subscribe(["invoices"]) as invoices, \
            app_b.subscribe("*") as star:  # fmt: skip
        app_a.publish("invoices", {"n": 1})
        app_a.publish("orders", {"n": 2})
        assert next_message(orders) == Message("orders", app_a.origin, {"n": 2})
        assert next_message(invoices) == Message("invoices", app_a.origin, {"n": 1})
        assert [next_message(star), next_message(star)] == [
            Message("invoices", app_a.origin, {"n": 1}), Message("orders", app_a.origin, {"n": 2})]  # fmt: skip


def test_a_publish_in_the_callers_transaction_arrives_at_commit_and_never_on_rollback(
    app_a: Conductor, app_b: Conductor, dsn: str
) -> None:
    with app_b.subscribe(["orders"]) as sub, psycopg.connect(dsn) as conn:
        assert app_a.publish("orders", {"n": "in tx"}, conn=conn) is True
        app_a.publish("orders", {"n": "marker 1"})  # committed at once, while the caller's is open
        assert next_message(sub).payload == {"n": "marker 1"}
        assert sub.get(timeout=0) is None  # the caller's has not come
        conn.commit()
        assert next_message(sub).payload == {"n": "in tx"}

        with conn.cursor() as cur:
            app_a.publish("orders", {"n": "rolled back"}, conn=cur)
        conn.rollback()
        app_a.publish("orders", {"n": "marker 2"})
        assert next_message(sub).payload == {"n": "marker 2"}  # the rolled back one never came


def test_a_message_over_the_notification_limit_is_refused(app_a: Conductor) -> None:
    with pytest.raises(PayloadTooLarge, match=r"\d+ bytes, over the notification limit of 7999 bytes"):
        app_a.publish("orders", {"blob": "x" * 8000})
    with pytest.raises(InvalidArgument):
        app_a.publish("*", {})
    with pytest.raises(InvalidArgument, match="not JSON-serialisable"):
        app_a.publish("orders", {"when": object()})


def test_subscribe_records_the_topics_and_close_removes_them(app_a: Conductor, conn: psycopg.Connection[Any]) -> None:
    sub = app_a.subscribe(["b-topic", "a-topic"])
    assert subscribed(conn, sub) == ["a-topic", "b-topic"]
    pid = sub.backend_pid
    sub.close()
    assert conn.execute("select count(*) from conductor.subscriptions where pid = %s", [pid]).fetchone() == (0,)
    assert sub.get(timeout=0) is None
    with pytest.raises(InvalidArgument):
        app_a.subscribe([""])


def test_the_engine_publishes_task_changes_on_topic_tasks(app_a: Conductor) -> None:
    @app_a.task("bus.noop", queue="bus-q")
    def noop(payload: Any) -> None:
        return None

    with app_a.subscribe("tasks") as sub:
        task_id = app_a.enqueue("bus.noop")
        assert next_message(sub) == Message("tasks", None, {"event": "queued", "queue": "bus-q"})
        app_a.cancel(task_id)
        assert next_message(sub) == Message("tasks", None, {"event": "finished", "ids": [task_id]})


def test_a_subscriber_whose_backend_is_terminated_reconnects_and_says_it_missed(
    app_a: Conductor, app_b: Conductor, conn: psycopg.Connection[Any]
) -> None:
    with app_b.subscribe(["orders"]) as sub:
        app_a.publish("orders", {"n": 1})
        assert next_message(sub).payload == {"n": 1}
        old_pid = sub.backend_pid
        assert conn.execute("select pg_terminate_backend(%s)", [old_pid]).fetchone() == (True,)
        assert next_message(sub) == Missed()
        assert sub.backend_pid not in (None, old_pid)
        assert subscribed(conn, sub) == ["orders"]  # listening and subscribed again
        app_a.publish("orders", {"n": 2})
        assert next_message(sub).payload == {"n": 2}


def test_iterating_a_subscription_ends_when_it_is_closed_from_another_thread(
    app_a: Conductor, app_b: Conductor
) -> None:
    sub = app_b.subscribe("orders")
    got: list[Message | Missed] = []

    def consume() -> None:
        for msg in sub:
            got.append(msg)

    thread = threading.Thread(target=consume)
    thread.start()
    app_a.publish("orders", {"n": 1})
    wait_until(lambda: got, timeout=TIMEOUT)
    sub.close()
    thread.join(TIMEOUT)
    assert not thread.is_alive()
    assert got == [Message("orders", app_a.origin, {"n": 1})]


def test_the_async_client_publishes_with_its_apps_origin(app_a: Conductor, app_b: Conductor, dsn: str) -> None:
    import asyncio

    async def publish() -> bool:
        async with AsyncConductor(dsn, app=app_a) as aapp:
            assert aapp.origin == app_a.origin
            return await aapp.publish("orders", {"n": "async"})

    with app_b.subscribe("orders") as sub:
        assert asyncio.run(publish()) is True
        assert next_message(sub) == Message("orders", app_a.origin, {"n": "async"})
