"""Handler log lines (issue 17): the logging records a handler emits are kept
per attempt and stored with ``conductor.save_log`` before its outcome, against
a real PostgreSQL and a real Worker.

Levels, logger names, order and tracebacks are kept; nothing captured means no
call at all; two handlers running at once (threads, or asyncio tasks) never
see each other's lines; bounded at 200 lines (the rest counted as dropped) and
2000 characters a message; pyconductor's own records are left out; a failing,
retried, timed-out or suspended attempt keeps its lines too. Only the login of the
attempt's worker writes into it (issue 25): another worker login's lines, sent as
a reporter sends them, are refused and logged, and the attempt keeps its own.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import psycopg
import pytest
from helpers import wait_until
from logins import worker_logins

from pyconductor import Conductor, TaskContext, Worker, tasklog
from pyconductor.ledger import Ledger
from pyconductor.link import Link
from pyconductor.reporter import Report, Reporter

Conn = psycopg.Connection[Any]

APP_LOGGER = "app.handlers"


@pytest.fixture
def app(db_dsn: str) -> Iterator[Conductor]:
    with Conductor(db_dsn, pool_max=2) as app:
        yield app


@pytest.fixture(autouse=True)
def app_logging() -> Iterator[logging.Logger]:
    """The app's logger at DEBUG (Python's default root level, WARNING, would make no INFO record at all)."""
    log = logging.getLogger(APP_LOGGER)
    before = log.level
    log.setLevel(logging.DEBUG)
    yield log
    log.setLevel(before)


def fast_worker(app: Conductor, **options: Any) -> Worker:
    defaults: dict[str, Any] = {"heartbeat_interval": 0.2, "poll_interval": 0.5, "reap_interval": 0.5,
                                "shutdown_grace": 5, "run_scheduler": False}  # fmt: skip
    return Worker(app, **{**defaults, **options})


def finished(app: Conductor, *ids: int) -> bool:
    return all(app.get(i).finished for i in ids)


def logs(conn: Conn, task_id: int) -> list[tuple[list[dict[str, str]], int]]:
    """(lines, dropped) of each attempt of the task that stored any, in attempt order."""
    return [(row[0], row[1]) for row in conn.execute(
        "select l.lines, l.dropped from conductor.attempt_logs l join conductor.attempts a on a.id = l.attempt_id "
        "where a.task_id = %s order by a.id", (task_id,))]  # fmt: skip


def count_save_log_calls(worker: Worker) -> list[str]:
    """Record the statements the worker's reporter sends that call save_log (its only sender)."""
    sent: list[str] = []
    link = worker.reporter.link
    rows = link.rows

    def spy(query: str, params: Any, abort: threading.Event) -> list[dict[str, Any]]:
        if "save_log" in query:
            sent.append(query)
        return rows(query, params, abort)

    link.rows = spy  # type: ignore[method-assign]
    return sent


def test_three_lines_are_stored_with_levels_loggers_order_and_the_traceback(app: Conductor, db_conn: Conn) -> None:
    @app.task("chatty")
    def chatty(payload: Any) -> str:
        log = logging.getLogger(APP_LOGGER)
        log.debug("below the capture level: not kept")
        log.info("charging %s", payload["who"])
        logging.getLogger("app.billing").warning("card expires soon")
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("charge failed, trying the next card")
        return "ok"

    task_id = chatty.enqueue({"who": "ada"})
    with fast_worker(app):
        wait_until(lambda: finished(app, task_id))
    assert app.get(task_id).status == "succeeded"
    [(lines, dropped)] = logs(db_conn, task_id)
    assert dropped == 0
    assert [(line["level"], line["logger"]) for line in lines] == [
        ("INFO", APP_LOGGER), ("WARNING", "app.billing"), ("ERROR", APP_LOGGER)]  # fmt: skip
    assert lines[0]["message"] == "charging ada"
    assert lines[1]["message"] == "card expires soon"
    first, _, traceback = lines[2]["message"].partition("\n")
    assert first == "charge failed, trying the next card"
    assert traceback.startswith("Traceback (most recent call last):")
    assert traceback.rstrip().endswith("ValueError: boom")
    times = [datetime.fromisoformat(line["at"]) for line in lines]
    assert all(t.utcoffset() is not None and t.utcoffset().total_seconds() == 0 for t in times)  # type: ignore[union-attr]
    assert times == sorted(times)
    assert set(lines[0]) == {"at", "level", "logger", "message"}


def test_a_handler_that_logs_nothing_makes_no_save_log_call(app: Conductor, db_conn: Conn) -> None:
    @app.task("quiet")
    def quiet(payload: Any) -> int:
        logging.getLogger(APP_LOGGER).debug("below the capture level")
        return 1

    @app.task("loud")
    def loud(payload: Any) -> int:
        logging.getLogger(APP_LOGGER).info("one line")
        return 2

    with fast_worker(app, concurrency=1) as worker:
        sent = count_save_log_calls(worker)
        quiet_ids = [quiet.enqueue({}) for _ in range(5)]
        wait_until(lambda: finished(app, *quiet_ids))
        assert sent == []
        loud_id = loud.enqueue({})  # the control: the same spy sees a call when there are lines
        wait_until(lambda: finished(app, loud_id))
        assert len(sent) == 1
    assert all(logs(db_conn, i) == [] for i in quiet_ids)
    assert db_conn.execute("select count(*) from conductor.attempt_logs").fetchone() == (1,)


def test_two_thread_handlers_running_at_once_never_mix_their_lines(app: Conductor, db_conn: Conn) -> None:
    both = threading.Barrier(2, timeout=10)

    @app.task("weave")
    def weave(payload: dict[str, str]) -> None:
        log = logging.getLogger(APP_LOGGER)
        for n in range(40):
            if n % 10 == 0:
                both.wait()  # both are mid-way at once: their lines interleave in time
            log.info("%s %d", payload["tag"], n)

    ids = {tag: weave.enqueue({"tag": tag}) for tag in ("left", "right")}
    with fast_worker(app, concurrency=2):
        wait_until(lambda: finished(app, *ids.values()))
    for tag, task_id in ids.items():
        [(lines, dropped)] = logs(db_conn, task_id)
        assert [line["message"] for line in lines] == [f"{tag} {n}" for n in range(40)], tag
        assert dropped == 0


def test_async_handlers_lines_are_captured_per_asyncio_task(app: Conductor, db_conn: Conn) -> None:
    def blocking_part(tag: str) -> None:
        logging.getLogger(f"{APP_LOGGER}.io").info("%s in a thread", tag)

    @app.task("async.weave")
    async def weave(payload: dict[str, str]) -> str:
        log = logging.getLogger(APP_LOGGER)
        tag = payload["tag"]
        for n in range(20):
            log.info("%s %d", tag, n)
            await asyncio.sleep(0.005)  # the other task logs meanwhile, on the same loop thread
        await asyncio.to_thread(blocking_part, tag)  # to_thread copies the context: captured too
        return tag

    ids = {tag: weave.enqueue({"tag": tag}) for tag in ("a", "b", "c")}
    with fast_worker(app, concurrency=3):
        wait_until(lambda: finished(app, *ids.values()))
    for tag, task_id in ids.items():
        assert app.get(task_id).result == tag
        [(lines, _)] = logs(db_conn, task_id)
        assert [line["message"] for line in lines] == [f"{tag} {n}" for n in range(20)] + [f"{tag} in a thread"]
        assert lines[-1]["logger"] == f"{APP_LOGGER}.io"


def test_more_than_200_lines_keep_200_and_count_the_rest_and_long_messages_are_cut(app: Conductor,
                                                                                   db_conn: Conn) -> None:  # fmt: skip
    @app.task("flood")
    def flood(payload: Any) -> None:
        log = logging.getLogger(APP_LOGGER)
        log.info("x" * 5000)
        for n in range(1, 260):
            log.info("line %d", n)

    task_id = flood.enqueue({})
    with fast_worker(app):
        wait_until(lambda: finished(app, task_id))
    [(lines, dropped)] = logs(db_conn, task_id)
    assert len(lines) == tasklog.MAX_LINES == 200
    assert dropped == 60
    assert [line["message"] for line in lines[1:]] == [f"line {n}" for n in range(1, 200)]
    long = lines[0]["message"]
    assert len(long) == tasklog.MAX_MESSAGE
    assert long.startswith("x" * 1900) and long.endswith(f"[... {5000 - long.index(' [...')} characters cut]")


def test_pyconductor_own_records_are_not_captured(app: Conductor, db_conn: Conn) -> None:
    @app.task("mixed", max_attempts=2, backoff_base=0)
    def mixed(payload: Any, ctx: TaskContext) -> str:
        logging.getLogger("pyconductor").warning("the library's own line")
        logging.getLogger("pyconductor.steps").warning("a module of the library")
        logging.getLogger("pyconductorish").warning("another package that only starts alike")
        ctx.step("one", lambda: 1)
        if ctx.attempt == 1:
            raise RuntimeError("again")  # the worker logs 'failed, will retry' and 'claimed again': not kept
        return "done"

    task_id = mixed.enqueue({})
    with fast_worker(app):
        wait_until(lambda: finished(app, task_id))
    assert app.get(task_id).status == "succeeded"
    stored = logs(db_conn, task_id)
    assert len(stored) == 2
    for lines, _ in stored:
        assert [(line["logger"], line["message"]) for line in lines] == [
            ("pyconductorish", "another package that only starts alike")]  # fmt: skip


def test_a_failing_handlers_lines_are_stored_for_each_attempt(app: Conductor, db_conn: Conn) -> None:
    @app.task("flaky", max_attempts=2, backoff_base=0)
    def flaky(payload: Any, ctx: TaskContext) -> None:
        log = logging.getLogger(APP_LOGGER)
        log.info("attempt %d starts", ctx.attempt)
        log.error("attempt %d gives up", ctx.attempt)
        raise RuntimeError(f"failure {ctx.attempt}")

    task_id = flaky.enqueue({})
    with fast_worker(app):
        wait_until(lambda: finished(app, task_id))
    assert app.get(task_id).status == "failed"
    stored = logs(db_conn, task_id)
    assert [[line["message"] for line in lines] for lines, _ in stored] == [
        ["attempt 1 starts", "attempt 1 gives up"], ["attempt 2 starts", "attempt 2 gives up"]]  # fmt: skip
    assert [line["level"] for line in stored[0][0]] == ["INFO", "ERROR"]


def test_a_timed_out_handler_keeps_its_lines_before_and_after_the_time_limit(app: Conductor, db_conn: Conn) -> None:
    @app.task("slow", timeout=0.5)
    def slow(payload: Any, ctx: TaskContext) -> None:
        log = logging.getLogger(APP_LOGGER)
        log.info("started")
        ctx.wait_cancelled(10)
        log.warning("told to stop: %s", ctx.cancel_reason)

    task_id = slow.enqueue({})
    with fast_worker(app):
        wait_until(lambda: finished(app, task_id))
        # the lines before the limit went with its failure; the one after, on its own
        wait_until(lambda: [m["message"] for lines, _ in logs(db_conn, task_id) for m in lines]
                   == ["started", "told to stop: timed_out"])  # fmt: skip
    assert app.get(task_id).status == "failed"


def test_a_suspended_attempt_keeps_its_lines(app: Conductor, db_conn: Conn) -> None:
    @app.task("patient")
    def patient(payload: Any, ctx: TaskContext) -> None:
        logging.getLogger(APP_LOGGER).info("going to sleep")
        ctx.sleep(3600)

    task_id = patient.enqueue({})
    with fast_worker(app):
        wait_until(lambda: app.get(task_id).status == "waiting")
        stored = wait_until(lambda: logs(db_conn, task_id))
    assert [[line["message"] for line in lines] for lines, _ in stored] == [["going to sleep"]]


def test_the_capturing_handler_is_on_the_root_logger_only_while_a_worker_runs(app: Conductor) -> None:
    @app.task("noop")
    def noop(payload: Any) -> None:
        return None

    root = logging.getLogger()
    assert tasklog._handler not in root.handlers
    with fast_worker(app), fast_worker(app):
        assert root.handlers.count(tasklog._handler) == 1
    assert tasklog._handler not in root.handlers


@pytest.mark.skipif("capture_level" not in inspect.signature(Worker).parameters,
                    reason="Worker(capture_logs=, capture_level=) not wired yet")  # fmt: skip
def test_capture_level_and_capture_logs_off(app: Conductor, db_conn: Conn) -> None:
    @app.task("levels")
    def levels(payload: Any) -> None:
        log = logging.getLogger(APP_LOGGER)
        log.debug("debug")
        log.info("info")
        log.warning("warning")

    first = levels.enqueue({})
    with fast_worker(app, capture_level=logging.WARNING):
        wait_until(lambda: finished(app, first))
    second = levels.enqueue({})
    with fast_worker(app, capture_logs=False):
        wait_until(lambda: finished(app, second))
    assert [[line["message"] for line in lines] for lines, _ in logs(db_conn, first)] == [["warning"]]
    assert logs(db_conn, second) == []


def test_a_batch_of_attempts_saves_its_lines_in_one_statement(app: Conductor, db_conn: Conn) -> None:
    together = threading.Barrier(20, timeout=10)

    @app.task("crowd")
    def crowd(payload: dict[str, int]) -> None:
        together.wait()  # all finish at once: their reports share batches
        logging.getLogger(APP_LOGGER).info("member %d", payload["n"])

    ids = [crowd.enqueue({"n": n}) for n in range(20)]
    with fast_worker(app, concurrency=20, report_linger=1.0) as worker:
        sent = count_save_log_calls(worker)
        wait_until(lambda: finished(app, *ids))
    assert any("unnest" in query for query in sent), sent
    assert len(sent) < 20
    for n, task_id in enumerate(ids):
        assert [[line["message"] for line in lines] for lines, _ in logs(db_conn, task_id)] == [[f"member {n}"]]


def test_lines_the_database_refuses_never_cost_the_outcome(app: Conductor, db_conn: Conn,
                                                           caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    db_conn.execute("drop function conductor.save_log(bigint, jsonb, integer)")
    together = threading.Barrier(3, timeout=10)

    @app.task("unlucky")
    def unlucky(payload: dict[str, int]) -> int:
        together.wait()
        logging.getLogger(APP_LOGGER).info("a line nobody can store")
        return payload["n"]

    ids = [unlucky.enqueue({"n": n}) for n in range(3)]
    caplog.set_level(logging.WARNING, logger="pyconductor")
    with fast_worker(app, concurrency=3, report_linger=1.0):
        wait_until(lambda: finished(app, *ids))
    assert [(app.get(i).status, app.get(i).result) for i in ids] == [("succeeded", n) for n in range(3)]
    assert caplog.text.count("were not saved") == 3


def test_a_refused_attempt_in_a_batch_never_costs_the_others_their_lines(app: Conductor, db_conn: Conn,
                                                                         caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    @app.task("plain")
    def plain(payload: Any) -> None:
        return None

    task_id = plain.enqueue({})
    with fast_worker(app):
        wait_until(lambda: finished(app, task_id))
    row = db_conn.execute("select id from conductor.attempts where task_id = %s", (task_id,)).fetchone()
    assert row is not None

    def with_lines(attempt_id: int, message: str) -> Report:
        ctx = TaskContext(task_id=task_id, attempt_id=attempt_id, attempt=1, kind="plain", queue="default")
        ctx._log = tasklog.AttemptLog()
        ctx._log.add(logging.LogRecord(APP_LOGGER, logging.INFO, __file__, 1, message, None, None))
        return Report("log", ctx)

    reporter = Reporter(Ledger(1), Link(app.dsn, "report", "test-reporter"), [], batch=10, linger=0)
    caplog.set_level(logging.WARNING, logger="pyconductor")
    try:
        reporter.send([with_lines(-1, "of no attempt"), with_lines(row[0], "stored (a finished attempt too)")])
    finally:
        reporter.link.close()
    assert [[line["message"] for line in lines] for lines, _ in logs(db_conn, task_id)] == [
        ["stored (a finished attempt too)"]]  # fmt: skip
    assert caplog.text.count("were not saved") == 1 and "attempt -1 does not exist" in caplog.text


def test_another_worker_login_cannot_write_into_a_workers_attempt(db_dsn: str, db_conn: Conn,
                                                                  caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    # v0.2.0: any worker login appended lines (or a dropped count) to any attempt, finished ones included
    with worker_logins(db_dsn, "billing", "other") as [(billing, billing_dsn), (_, other_dsn)]:
        with Conductor(billing_dsn, pool_max=2) as app:
            @app.task("billed")
            def billed(payload: Any) -> None:
                logging.getLogger(APP_LOGGER).info("invoice sent")

            task_id = billed.enqueue({})
            with fast_worker(app):
                wait_until(lambda: finished(app, task_id))
                # while the billing worker runs, another worker login sends lines for its
                # attempt, as a reporter sends them
                attempt_id = db_conn.execute("select id from conductor.attempts where task_id = %s",
                                             (task_id,)).fetchone()[0]  # fmt: skip
                ctx = TaskContext(task_id=task_id, attempt_id=attempt_id, attempt=1, kind="billed", queue="default")
                ctx._log = tasklog.AttemptLog()
                ctx._log.add(logging.LogRecord(APP_LOGGER, logging.INFO, __file__, 1, "forged line", None, None))
                reporter = Reporter(Ledger(1), Link(other_dsn, "report", "other-w"), [], batch=10, linger=0)
                caplog.set_level(logging.WARNING, logger="pyconductor")
                try:
                    reporter.send([Report("log", ctx)])
                finally:
                    reporter.link.close()
    assert [[line["message"] for line in lines] for lines, _ in logs(db_conn, task_id)] == [["invoice sent"]]
    assert "were not saved" in caplog.text and f"declared by login '{billing}'" in caplog.text


# -- without a database ---------------------------------------------------------------


def test_cut_keeps_short_messages_and_marks_what_it_cuts() -> None:
    assert tasklog.cut("short") == "short"
    assert tasklog.cut("y" * 2000) == "y" * 2000
    cut = tasklog.cut("y" * 2001)
    assert len(cut) == 2000 and cut.endswith("characters cut]")
    kept = cut.index(" [...")
    assert cut == "y" * kept + f" [... {2001 - kept} characters cut]"


def test_only_records_inside_an_attempt_are_captured_and_a_bad_format_is_kept_readably() -> None:
    log = tasklog.AttemptLog(logging.INFO)
    logging.getLogger(APP_LOGGER).info("before")  # no attempt current: nothing
    tasklog.attach()
    try:
        logging.getLogger(APP_LOGGER).info("outside")
        token = tasklog.enter(log)
        try:
            logging.getLogger(APP_LOGGER).info("inside %d", 1)
            logging.getLogger(APP_LOGGER).info("nul \x00 byte")
        finally:
            tasklog.leave(token)
        logging.getLogger(APP_LOGGER).info("after")
    finally:
        tasklog.detach()
    taken = log.take()
    assert taken is not None
    lines, dropped = taken
    assert [line["message"] for line in lines] == ["inside 1", "nul \\x00 byte"]  # a NUL jsonb refuses, escaped
    assert dropped == 0
    assert log.take() is None
    # an argument whose str() logs in turn (no deadlock: formatted outside the log's lock)
    class Loud:
        def __str__(self) -> str:
            logging.getLogger(APP_LOGGER).info("inner")
            return "loud"

    again = tasklog.AttemptLog(logging.INFO)
    tasklog.attach()
    token = tasklog.enter(again)
    try:
        logging.getLogger(APP_LOGGER).info("outer %s", Loud())
    finally:
        tasklog.leave(token)
        tasklog.detach()
    nested = again.take()
    # (each handler that formats the record logs 'inner' once more: pytest's own too)
    assert nested is not None and {line["message"] for line in nested[0]} == {"inner", "outer loud"}
    # a format the arguments do not fit (pytest's own log handler raises on it, so made by hand)
    bad = logging.LogRecord(APP_LOGGER, logging.INFO, __file__, 1, "bad %d", ("not a number",), None)
    message = tasklog.line_of(bad)["message"]
    assert message.startswith("'bad %d' % ('not a number',) (not formattable: TypeError")
