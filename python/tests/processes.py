"""Real worker processes for the acceptance tests: ``python -m pyconductor
worker`` with its output in a log file, and a factory that stops what it
started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

TESTS = Path(__file__).resolve().parent


class ChildProcess:
    """A command run as a child process, its output in a log file: what the
    tests do to a worker in any language (signal, kill -9, wait, read its log)."""

    def __init__(self, command: Sequence[str], *, env: dict[str, str], cwd: Path, log: Path) -> None:
        self.log = log
        self._out: IO[bytes] = log.open("wb")
        self.proc = subprocess.Popen(list(command), cwd=cwd, env=env, stdout=self._out, stderr=subprocess.STDOUT)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def signal(self, sig: int = signal.SIGTERM) -> None:
        self.proc.send_signal(sig)

    def kill9(self) -> None:
        self.proc.kill()
        self.proc.wait(10)

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"worker {self.pid} did not exit in {timeout}s:\n{self.output()[-3000:]}") from None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # in case a test left it stopped
            self.proc.kill()
            self.proc.wait()
        self._out.close()


class WorkerProcess(ChildProcess):
    """One ``pyconductor worker`` process running ``app`` (module:attr under python/tests)."""

    def __init__(self, dsn: str, log: Path, app: str, worker_id: str | None, *args: str) -> None:
        self.worker_id = worker_id
        env = {**os.environ, "CONDUCTOR_DSN": dsn, "PYTHONUNBUFFERED": "1"}
        identity = ["--worker-id", worker_id] if worker_id else []
        super().__init__([sys.executable, "-m", "pyconductor", "worker", "--app", app, *identity, "--log-level", "INFO",
                          *args], env=env, cwd=TESTS, log=log)  # fmt: skip


Spawn = Callable[..., WorkerProcess]


@contextmanager
def spawner(dsn: str, logs: Path, app: str, *defaults: str, named: bool = True) -> Iterator[Spawn]:
    """``spawn(*args, name=None)`` starts a worker of ``app`` with ``defaults``
    then ``args`` (ids w0, w1, ... unless named=False); all are killed on exit."""
    procs: list[WorkerProcess] = []

    def spawn(*args: str, name: str | None = None) -> WorkerProcess:
        worker_id = name or (f"w{len(procs)}" if named else None)
        proc = WorkerProcess(dsn, logs / f"{worker_id or f'worker{len(procs)}'}.log", app, worker_id,
                             *defaults, *args)  # fmt: skip
        procs.append(proc)
        return proc

    try:
        yield spawn
    finally:
        for proc in procs:
            proc.close()


__all__: Sequence[str] = ["ChildProcess", "Spawn", "WorkerProcess", "spawner", "TESTS"]
