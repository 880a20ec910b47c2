"""A login with no Conductor grant that takes the engine's advisory locks (issue 25).

Any login to the database may take any advisory lock and read ``pg_locks``;
v0.2.0 coordinated with advisory locks whose keys anyone can compute from its
source. :class:`Squatter` is that attacker: a role with nothing but LOGIN
(and the CONNECT that PUBLIC has), made for the test and dropped after it.

    with Squatter(db_dsn) as squatter:
        squatter.take_v020_keys(queues=["default"], singletons=["beacon"], keys=["acct-1"])
        squatter.sweep_in_background()        # every advisory lock pg_locks shows, in a loop
        squatter.queue_behind("conductor:enqueue:any")   # a blocking exclusive request
        ...

Every lock is a session lock taken with the ``try`` functions (so the
squatter itself never waits), except :meth:`queue_behind`, which asks for a
key exclusively and waits (an exclusive request in the queue makes every
later shared request of the key wait too, try or not).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterable
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

__all__ = ["Squatter", "v020_keys"]

# The keys v0.2.0 computed, as SQL over a name (%s): (kind of key, SQL of its lock arguments)
_LEADER = "hashtextextended('conductor.lead:' || %s, 0)"
_CONCURRENCY = "hashtextextended('conductor:concurrency:' || %s, 0)"
_EVENT = "hashtextextended('conductor:event:' || %s, 0)"
_EXCLUSIVE = "hashtextextended('conductor.exclusive:' || %s, 0)"
_ENQUEUE_ANY = "hashtext('conductor:enqueue:any'), 0"
_ENQUEUE_QUEUE = "hashtext('conductor:enqueue:queue'), hashtext(%s)"


def v020_keys(*, queues: Iterable[str] = (), singletons: Iterable[str] = (), keys: Iterable[str] = (),
              events: Iterable[str] = (), exclusive: Iterable[str] = ()) -> list[tuple[str, tuple[str, ...]]]:  # fmt: skip
    """(lock arguments as SQL, parameters) of every key v0.2.0's source computes for these names."""
    out: list[tuple[str, tuple[str, ...]]] = [(_ENQUEUE_ANY, ())]
    out += [(_ENQUEUE_QUEUE, (q,)) for q in queues]
    out += [(_LEADER, (n,)) for n in ("scheduler", "reaper", "retention", *(f"singleton:{s}" for s in singletons))]
    out += [(_CONCURRENCY, (k,)) for k in keys]
    out += [(_EVENT, (e,)) for e in events]
    out += [(_EXCLUSIVE, (x,)) for x in exclusive]
    return out


class Squatter:
    """The attacker; see the module doc. ``application_name`` names its sessions."""

    def __init__(self, dsn: str, application_name: str = "squatter") -> None:
        self.dsn = dsn
        self.role = f"t_squatter_{secrets.token_hex(4)}"
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"create role {self.role} login")
        self.role_dsn = make_conninfo(dsn, user=self.role, application_name=application_name)
        self.conn = psycopg.connect(self.role_dsn, autocommit=True)
        self.pid = self.conn.info.backend_pid
        self._lock = threading.Lock()  # self.conn is used by one thread at a time
        self._stop = threading.Event()
        self._sweeper: threading.Thread | None = None
        self._waiters: list[psycopg.Connection[Any]] = []
        self.taken = 0

    def __enter__(self) -> Squatter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def grants(self) -> list[str]:
        """The roles this login is a member of (none)."""
        with self._lock:
            rows = self.conn.execute("select b.rolname from pg_auth_members m join pg_roles b on b.oid = m.roleid"
                                     " join pg_roles r on r.oid = m.member where r.rolname = current_user").fetchall()  # fmt: skip
        return [r[0] for r in rows]

    def take_v020_keys(self, **names: Iterable[str]) -> int:
        """Take, exclusively with session locks, every key :func:`v020_keys` computes; how many it got."""
        got = 0
        with self._lock:
            for args, params in v020_keys(**names):
                row = self.conn.execute(f"select pg_try_advisory_lock({args})", params).fetchone()
                got += bool(row and row[0])
        self.taken += got
        return got

    def sweep(self, bigint_keys_only: bool = False) -> int:
        """Take every advisory lock another session holds or waits for in this
        database, as pg_locks shows it: exclusively if free, else shared; how
        many it took now. ``bigint_keys_only``: leave the two-integer keys
        (the enqueue in-flight keys) alone."""
        with self._lock:
            rows = self.conn.execute(
                "select distinct classid::bigint, objid::bigint, objsubid from pg_locks"
                " where locktype = 'advisory' and pid <> pg_backend_pid()"
                + (" and objsubid = 1" if bigint_keys_only else "") +
                " and database = (select oid from pg_database where datname = current_database())"
                " except select classid::bigint, objid::bigint, objsubid from pg_locks"
                " where locktype = 'advisory' and pid = pg_backend_pid()").fetchall()  # fmt: skip
            got = 0
            for classid, objid, objsubid in rows:
                if objsubid == 2:
                    key, args = "(%s::bigint::bit(32)::integer, %s::bigint::bit(32)::integer)", (classid, objid)
                else:
                    key, args = "(((%s::bigint << 32) | %s::bigint))", (classid, objid)
                row = self.conn.execute(f"select pg_try_advisory_lock{key} or pg_try_advisory_lock_shared{key}",
                                        (*args, *args)).fetchone()  # fmt: skip
                got += bool(row and row[0])
        self.taken += got
        return got

    def sweep_in_background(self, interval: float = 0.02, bigint_keys_only: bool = False) -> None:
        """:meth:`sweep` in a loop on a thread of its own until :meth:`close`."""

        def loop() -> None:
            while not self._stop.wait(interval):
                try:
                    self.sweep(bigint_keys_only)
                except psycopg.Error:
                    return

        self._sweeper = threading.Thread(target=loop, name="squatter sweep", daemon=True)
        self._sweeper.start()

    def queue_behind(self, text_key: str, queue: str | None = None) -> int:
        """Ask for an enqueue in-flight key exclusively and wait, on a connection of
        its own (hashtext(text_key), 0, or with ``queue`` hashtext(queue)); its pid."""
        conn = psycopg.connect(self.role_dsn, autocommit=True)
        self._waiters.append(conn)
        args = (text_key, queue) if queue is not None else (text_key,)
        query = "select pg_advisory_lock(hashtext(%s), " + ("hashtext(%s))" if queue is not None else "0)")
        threading.Thread(target=self._wait_for, args=(conn, query, args), daemon=True).start()
        return conn.info.backend_pid

    @staticmethod
    def _wait_for(conn: psycopg.Connection[Any], query: str, args: tuple[str, ...]) -> None:
        try:
            conn.execute(query, args)  # granted once the holders before it let go; then held for ever
        except psycopg.Error:
            pass

    def close(self) -> None:
        self._stop.set()
        if self._sweeper is not None:
            self._sweeper.join(5)
        for conn in [*self._waiters, self.conn]:
            try:
                if conn.info.backend_pid:
                    with psycopg.connect(self.dsn, autocommit=True) as admin:
                        admin.execute("select pg_terminate_backend(%s)", [conn.info.backend_pid])
                conn.close()
            except psycopg.Error:
                pass
        with psycopg.connect(self.dsn, autocommit=True) as admin:
            for _ in range(100):
                if not admin.execute("select count(*) from pg_stat_activity where usename = %s",
                                     [self.role]).fetchone()[0]:  # fmt: skip
                    break
                admin.execute("select pg_sleep(0.05)")
            admin.execute(f"drop role if exists {self.role}")
