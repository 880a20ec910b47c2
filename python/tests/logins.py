"""Login roles for the tests of ownership (issue 25): ``from logins import worker_logins``.

Roles belong to the cluster, not to a test's database, so each gets a name of
this process's and is dropped at the end."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg.conninfo import make_conninfo

__all__ = ["worker_logins"]


@contextmanager
def worker_logins(dsn: str, *names: str, grant: str = "conductor_worker") -> Iterator[list[tuple[str, str]]]:
    """One login role granted ``grant`` per name: yields (role, its DSN on ``dsn``'s
    database) for each; drops them at the end."""
    roles = [f"t_{name}_{os.getpid()}" for name in names]
    with psycopg.connect(dsn, autocommit=True) as conn:
        for role in roles:
            conn.execute(f"create role {role} login in role {grant}")
    try:
        yield [(role, make_conninfo(dsn, user=role)) for role in roles]
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            for role in roles:
                conn.execute(f"drop role if exists {role}")
