"""Rewind, fork and queries (docs/workflows.md) with a real worker process
(``python -m pyconductor worker --app apps.workflows_app:app``), the real CLI and
a real PostgreSQL:

- rewind from step 3 of a 5-step run re-runs only steps 3 to 5 (the effects
  table counts each step body's executions), through ``pyconductor rewind``;
- a fork from step 4 runs steps 4 and 5 as a new task; the source is untouched;
- a query answers a run's published state while the run waits for an event;
- an update's round trip: the waiting run is woken with it and replies, the
  sender waits for the reply;
- the same from a real Node worker process (workers/node): its published state
  and its answer to an update.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import wait_until
from lifecycle.runner import NODE_DIR, node_problem
from processes import TESTS, ChildProcess, Spawn, spawner

from pyconductor import Conductor
from pyconductor.aio import AsyncConductor

APP = "apps.workflows_app:app"
SHORT = ("--lease", "2", "--heartbeat", "0.5", "--reap", "0.5", "--poll", "0.2", "--no-scheduler")


def q(dsn: str, query: str, params: Any = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


@pytest.fixture
def dsn(db_dsn: str) -> str:
    q(db_dsn, "create table effects (task_id bigint not null, step integer not null, pid integer not null,"
              " at timestamptz not null default clock_timestamp())")  # fmt: skip
    return db_dsn


@pytest.fixture
def spawn(dsn: str, tmp_path: Path) -> Iterator[Spawn]:
    with spawner(dsn, tmp_path, APP, *SHORT) as start:
        yield start


@pytest.fixture
def client(dsn: str) -> Iterator[Conductor]:
    with Conductor(dsn) as conductor:
        yield conductor


def status(dsn: str, task_id: int) -> str:
    return str(q(dsn, "select status::text from conductor.tasks where id = %s", (task_id,))[0][0])


def executions(dsn: str, task_id: int) -> dict[int, int]:
    return dict(q(dsn, "select step, count(*)::int from effects where task_id = %s group by step", (task_id,)))


def cli(dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONDUCTOR_DSN": dsn}
    return subprocess.run([sys.executable, "-m", "pyconductor", *args], env=env, cwd=TESTS,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip


def test_rewind_from_step_3_reruns_only_steps_3_to_5(dsn: str, spawn: Spawn, client: Conductor) -> None:
    worker = spawn()
    task_id = client.enqueue("five_effects")
    wait_until(lambda: status(dsn, task_id) == "succeeded", timeout=30,
               message=lambda: f"the run finished: {worker.output()[-2000:]}")  # fmt: skip
    assert executions(dsn, task_id) == {1: 1, 2: 1, 3: 1, 4: 1, 5: 1}

    done = cli(dsn, "rewind", str(task_id), "--from", "s3")
    assert done.returncode == 0, done.stderr
    assert f"task {task_id} is queued again from step 's3'" in done.stdout
    wait_until(lambda: status(dsn, task_id) == "succeeded", timeout=30,
               message=lambda: f"the rewound run finished: {worker.output()[-2000:]}")  # fmt: skip

    assert executions(dsn, task_id) == {1: 1, 2: 1, 3: 2, 4: 2, 5: 2}
    assert client.get(task_id).result == [1, 2, 3, 4, 5]


def test_rewind_refuses_an_unknown_step_from_the_cli(dsn: str, client: Conductor) -> None:
    task_id = client.enqueue("five_effects")
    client.cancel(task_id)
    done = cli(dsn, "rewind", str(task_id), "--from", "s9")
    assert done.returncode != 0
    assert f"task {task_id} has no step 's9'" in done.stderr
    assert status(dsn, task_id) == "cancelled"


def test_fork_runs_a_copy_from_its_step(dsn: str, spawn: Spawn, client: Conductor) -> None:
    worker = spawn()
    source = client.enqueue("five_effects")
    wait_until(lambda: status(dsn, source) == "succeeded", timeout=30,
               message=lambda: f"the run finished: {worker.output()[-2000:]}")  # fmt: skip
    before = q(dsn, "select to_jsonb(t) from conductor.tasks t where id = %s", (source,))

    copy = client.fork(source, "s4")
    wait_until(lambda: status(dsn, copy) == "succeeded", timeout=30,
               message=lambda: f"the fork finished: {worker.output()[-2000:]}")  # fmt: skip

    assert executions(dsn, copy) == {4: 1, 5: 1}
    assert executions(dsn, source) == {1: 1, 2: 1, 3: 1, 4: 1, 5: 1}
    info = client.get(copy)
    assert (info.forked_from, info.forked_at_step, info.result) == (source, "s4", [1, 2, 3, 4, 5])
    assert q(dsn, "select to_jsonb(t) from conductor.tasks t where id = %s", (source,)) == before


def test_a_query_answers_while_the_run_waits(dsn: str, spawn: Spawn, client: Conductor) -> None:
    worker = spawn()
    task_id = client.enqueue("awaits_approval", {"event": f"approve-{os.getpid()}"})
    wait_until(lambda: status(dsn, task_id) == "waiting", timeout=30,
               message=lambda: f"the run waits: {worker.output()[-2000:]}")  # fmt: skip

    state = client.run_state(task_id)
    assert state.state == {"stage": "awaiting approval"}
    assert state.set_at is not None

    client.emit_event(f"approve-{os.getpid()}", {"by": "ada"})
    wait_until(lambda: status(dsn, task_id) == "succeeded", timeout=30,
               message=lambda: f"the run finished: {worker.output()[-2000:]}")  # fmt: skip
    after = client.run_state(task_id)
    assert after.state == {"stage": "approved", "by": "ada"}
    assert after.set_at is not None and after.set_at >= state.set_at


def test_an_update_round_trip(dsn: str, spawn: Spawn, client: Conductor) -> None:
    worker = spawn()
    task_id = client.enqueue("answers")
    wait_until(lambda: status(dsn, task_id) == "waiting", timeout=30,
               message=lambda: f"the run waits for its update: {worker.output()[-2000:]}")  # fmt: skip

    answered = client.send_update(task_id, "ask", 21, wait=30)
    assert (answered.task_id, answered.name, answered.reply) == (task_id, "ask", {"answer": 42})
    assert answered.answered
    wait_until(lambda: status(dsn, task_id) == "succeeded", timeout=30,
               message=lambda: f"the run finished: {worker.output()[-2000:]}")  # fmt: skip
    assert client.get(task_id).result == {"answer": 42}
    assert client.update_reply(answered.update_id) == answered


NODE_HANDLERS = r"""
'use strict';
module.exports = {
  // waits half a second for update 'early' (none comes: UpdateTimeout), publishes, waits for
  // update 'ask', replies with twice its payload, publishes again
  async node_answers(payload, ctx) {
    let early = 'received';
    try {
      await ctx.waitForUpdate('early', 0.5);
    } catch (err) {
      if (err.name !== 'UpdateTimeout') throw err; // a Suspended goes through
      early = 'timed out';
    }
    await ctx.publishState({ stage: 'waiting for a question', early });
    const update = await ctx.waitForUpdate('ask', 60);
    const reply = await ctx.reply(update, { answer: update.payload * 2, by: 'node' });
    await ctx.publishState({ stage: 'answered' });
    return reply;
  },
};
"""


def test_the_node_worker_publishes_its_state_and_answers_an_update(dsn: str, client: Conductor, tmp_path: Path) -> None:
    """The same SQL from another language: a real Node worker process (workers/node)
    gives up a wait for an update at its timeout, publishes its run's state, is woken
    with an update and answers it."""
    if problem := node_problem():
        pytest.fail(f"the Node worker cannot run: {problem}")
    handlers = tmp_path / "handlers.js"
    handlers.write_text(NODE_HANDLERS)
    env = {**os.environ, "CONDUCTOR_DSN": dsn}
    command = ["node", str(NODE_DIR / "main.js"), "--handlers", str(handlers), "--queues", "node-wf",
               "--lease", "5", "--heartbeat", "1", "--reap", "0.5", "--poll", "0.5"]  # fmt: skip
    worker = ChildProcess(command, env=env, cwd=tmp_path, log=tmp_path / "node.log")
    try:
        task_id = client.enqueue("node_answers", queue="node-wf")
        asked = {"stage": "waiting for a question", "early": "timed out"}
        wait_until(lambda: client.run_state(task_id).state == asked and status(dsn, task_id) == "waiting",
                   timeout=30, message=lambda: f"the Node run waits: {worker.output()[-2000:]}")  # fmt: skip

        answered = client.send_update(task_id, "ask", 21, wait=30)
        assert answered.reply == {"answer": 42, "by": "node"}
        wait_until(lambda: status(dsn, task_id) == "succeeded", timeout=30,
                   message=lambda: f"the Node run finished: {worker.output()[-2000:]}")  # fmt: skip
        assert client.run_state(task_id).state == {"stage": "answered"}
    finally:
        worker.close()


def test_the_async_client_rewinds_forks_queries_and_sends(dsn: str) -> None:
    """AsyncConductor's twins of rewind, fork, run_state, send_update and update_reply,
    on a run whose worker's part is played in SQL."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        task = conn.execute("select conductor.enqueue('k', '{}', 'aio-wf')").fetchone()[0]  # type: ignore[index]
        attempt = conn.execute("select attempt_id from conductor.claim('w', array['aio-wf'])").fetchone()[0]  # type: ignore[index]
        for name in ("s1", "s2"):
            conn.execute("select conductor.save_step(%s, %s, '1')", (attempt, name))
        conn.execute("select conductor.set_run_state(%s, '{\"stage\": 2}')", (attempt,))

    async def main() -> tuple[Any, ...]:
        async with AsyncConductor(dsn) as aapp:
            state = await aapp.run_state(task)
            sent = await aapp.send_update(task, "ask", {"q": 1})
            unanswered = await aapp.update_reply(sent.update_id)
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("select conductor.reply_update(%s, %s, '\"yes\"')", (attempt, sent.update_id))
            answered = await aapp.send_update(task, "ask", {"q": 2})
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("select conductor.complete(%s, '{}')", (attempt,))
            copy = await aapp.fork(task, "s2")
            rewound = await aapp.rewind(task, "s2")
            return state, unanswered, await aapp.update_reply(sent.update_id), answered, copy, rewound

    state, unanswered, replied, answered, copy, rewound = asyncio.run(main())
    assert state.state == {"stage": 2}
    assert not unanswered.answered and replied.reply == "yes" and replied.answered
    assert not answered.answered and answered.name == "ask"
    assert rewound == task and copy != task
    with psycopg.connect(dsn, autocommit=True) as conn:
        steps = conn.execute("select task_id, array_agg(name order by seq) from conductor.steps"
                             " where task_id in (%s, %s) group by 1 order by 1", (task, copy)).fetchall()  # fmt: skip
    assert steps == [(task, ["s1"]), (copy, ["s1"])]
