"""Deploy the Conductor schema without sqitch.

``migrate(dsn)`` reads ``sqitch.plan`` and runs each change's deploy script
that this database has not seen yet, in plan order, each in its own
transaction together with the row that records it in
``conductor_registry.changes`` (name, sha256 of the script, time). A second run
applies nothing. A session advisory lock serialises concurrent migrations:
``migrate`` tries it, and while another session holds it, tries again for up to
``lock_wait`` seconds (default :data:`LOCK_WAIT`), then raises
:class:`LockBusy` naming the holder (pid, login, application_name, since when
its backend started) rather than wait for ever: any login may take any
advisory lock, so the holder need not be another migration.

A change already applied whose script no longer matches the one recorded is
drift: the database was deployed from other scripts than this plan's (an
edited release, a hand-made change). ``migrate`` then applies nothing and
raises DriftError naming each drifted change; ``status`` answers what is
pending and what drifted without changing anything (``pyconductor migrate
--check``). ``to=`` stops at a tag of the plan (``@v0.1.0``).

Scripts after v0.1.0 start with ``set local role conductor_owner``; the role
is reset before the change is recorded, so the registry stays the deployer's.

The registry lives in its own schema, so ``pg_dump -n conductor`` of a
database deployed here and one deployed by ``sqitch deploy`` compare equal.
The two registries are independent: deploy a database with one tool only.

Deploy scripts are written sqitch-style::

    -- Deploy conductor:functions/claim to pg
    BEGIN;
    ...
    COMMIT;

The transaction is ours, not the script's: a ``BEGIN;`` line before the first
statement and a ``COMMIT;`` line after the last one are removed, and the rest
runs as one multi-statement string inside our transaction (no parameters, so
``%`` is left alone). Anything else in between runs untouched. Scripts must be
plain SQL: psql meta-commands (``\\set`` ...) are not understood.

A change that appears twice in the plan (``sqitch rework``) is deployed from
``name@TAG.sql`` for the earlier instance, TAG being the first tag after it,
and from ``name.sql`` for the latest; the registry tells instances apart by
their occurrence number.
"""

from __future__ import annotations

import hashlib
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg.rows import dict_row

from pyconductor import queries

__all__ = [
    "LOCK_WAIT",
    "Change",
    "DriftError",
    "LockBusy",
    "MigrateError",
    "Plan",
    "PlanError",
    "Status",
    "applied_changes",
    "migrate",
    "parse_plan",
    "pending_changes",
    "sql_root",
    "status",
    "strip_transaction",
]

# Where sqitch.conf files the scripts of a reworked change's released instances.
RELEASED = "released/"

# pg_advisory_lock key: the first 8 bytes of sha256("conductor.migrate"), as a signed bigint.
LOCK_KEY = int.from_bytes(hashlib.sha256(b"conductor.migrate").digest()[:8], "big", signed=True)
LOCK_WAIT = 60.0
"""Seconds ``migrate`` tries for the migration lock before it gives up (LockBusy)."""


class MigrateError(RuntimeError):
    """A migration could not be planned or applied."""


class PlanError(MigrateError):
    """sqitch.plan could not be parsed."""


class LockBusy(MigrateError):
    """Another session held the migration lock for longer than ``lock_wait``: nothing was applied."""

    def __init__(self, waited: float, holders: Sequence[dict[str, object]]) -> None:
        self.holders = tuple(holders)
        who = "; ".join(
            f"pid {h['pid']} (login {h['usename'] or '?'}, application_name {h['application_name'] or '?'!r}"
            + (f", connected since {h['backend_start']}" if h.get("backend_start") else "")
            + (f", {h['state']}" if h.get("state") else "") + ")"
            for h in self.holders
        ) or "a session that let go of it just now"  # fmt: skip
        super().__init__(
            f"the migration lock is held by {who}, and was still held after {waited:g}s: nothing was applied. "
            "Another `pyconductor migrate` may be running (let it finish, then run this again); otherwise that "
            "session holds pg_advisory_lock(" + str(LOCK_KEY) + ") itself: end it (pg_terminate_backend(pid)) "
            "or pass a longer --lock-wait"
        )


class DriftError(MigrateError):
    """A deployed change's script differs from the plan's: nothing was applied."""

    def __init__(self, drifted: Sequence[Change]) -> None:
        self.drifted = tuple(drifted)
        names = ", ".join(c.key for c in self.drifted)
        super().__init__(
            f"drift: {len(self.drifted)} deployed change(s) differ from this plan's scripts: {names}. "
            "The database was deployed from other scripts (an edited release or a hand-made change); "
            "nothing was applied. Compare with `pyconductor migrate --check`, see docs/upgrading.md"
        )


@dataclass(frozen=True)
class Change:
    """One change line of a sqitch plan."""

    name: str
    requires: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()
    planned_at: str = ""
    planner: str = ""
    note: str = ""
    occurrence: int = 1  # 2 for the second instance of a reworked change, ...
    script_name: str = ""  # deploy script path relative to the deploy dir, without .sql

    def script(self, kind: str = "deploy") -> str:
        """The path of its ``deploy``, ``revert`` or ``verify`` script relative to
        the ``sql`` dir (sqitch.conf): a released instance of a reworked change
        lives under ``released/`` (``released/revert/functions/claim@v0.1.0.sql``)."""
        if kind == "deploy":
            return f"{self.script_name}.sql"
        if self.script_name.startswith(RELEASED):
            return f"{RELEASED}{kind}/{self.script_name.removeprefix(RELEASED)}.sql"
        return f"{kind}/{self.script_name}.sql"

    @property
    def key(self) -> str:
        """How the change is named in messages: ``name`` or ``name#2`` for a rework."""
        return self.name if self.occurrence == 1 else f"{self.name}#{self.occurrence}"


@dataclass(frozen=True)
class Plan:
    project: str
    changes: tuple[Change, ...] = field(default_factory=tuple)
    tags: dict[str, int] = field(default_factory=dict)  # tag -> how many changes precede it

    def up_to(self, target: str | None) -> tuple[Change, ...]:
        """The changes up to tag ``target`` (``@v0.1.0`` or ``v0.1.0``); all of them for None."""
        if target is None:
            return self.changes
        tag = target.removeprefix("@")
        if tag not in self.tags:
            known = ", ".join("@" + t for t in self.tags) or "none"
            raise PlanError(f"no tag {target!r} in the plan (tags: {known})")
        return self.changes[: self.tags[tag]]


@dataclass(frozen=True)
class Status:
    """What ``migrate`` would do: the changes it would apply, and those whose
    deployed script differs from the plan's (which make it refuse)."""

    pending: tuple[Change, ...]
    drifted: tuple[Change, ...]

    @property
    def up_to_date(self) -> bool:
        return not self.pending and not self.drifted


# name [deps] timestamp planner <email> [# note]
_CHANGE_RE = re.compile(
    r"""^(?P<name>[^\s\[@#%:][^\s\[]*)\s*
        (?:\[(?P<deps>[^\]]*)\]\s*)?
        (?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)\s+
        (?P<planner>[^<]*?)\s*<(?P<email>[^>]*)>
        \s*(?:\#\s?(?P<note>.*))?$""",
    re.VERBOSE,
)
_TAG_RE = re.compile(r"^@(?P<tag>\S+)")
_PRAGMA_RE = re.compile(r"^%\s*(?P<key>[\w-]+)\s*=\s*(?P<value>.*?)\s*$")


def parse_plan(text: str) -> Plan:
    """Parse the text of a sqitch plan.

    Skips pragmas (``%...``, keeping ``%project``), blank lines, comment lines
    (``#``) and tag lines (``@tag``, which only name reworked scripts).
    """
    project = ""
    raw: list[tuple[int, Change]] = []  # (index of the last tag seen before it, change)
    tags: list[str] = []
    tag_positions: dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("%"):
            pragma = _PRAGMA_RE.match(stripped)
            if pragma and pragma["key"] == "project":
                project = pragma["value"]
            continue
        if tag := _TAG_RE.match(stripped):
            tags.append(tag["tag"])
            tag_positions[tag["tag"]] = len(raw)
            continue
        match = _CHANGE_RE.match(stripped)
        if not match:
            raise PlanError(f"plan line {lineno}: not a change, tag, pragma or comment: {line!r}")
        deps = (match["deps"] or "").split()
        change = Change(
            name=match["name"],
            requires=tuple(d for d in deps if not d.startswith("!")),
            conflicts=tuple(d[1:] for d in deps if d.startswith("!")),
            planned_at=match["ts"],
            planner=match["planner"].strip(),
            note=(match["note"] or "").strip(),
        )
        raw.append((len(tags), change))

    changes: list[Change] = []
    seen: dict[str, int] = {}
    for i, (tags_before, change) in enumerate(raw):
        occurrence = seen.get(change.name, 0) + 1
        seen[change.name] = occurrence
        reworked_later = any(other.name == change.name for _, other in raw[i + 1 :])
        script = change.name
        if reworked_later:
            if tags_before >= len(tags):
                raise PlanError(f"change {change.name} is reworked but no tag follows its first instance")
            script = f"{RELEASED}{change.name}@{tags[tags_before]}"
        changes.append(Change(**{**change.__dict__, "occurrence": occurrence, "script_name": script}))
    return Plan(project=project or "conductor", changes=tuple(changes), tags=tag_positions)


def strip_transaction(script: str) -> str:
    """Remove a sqitch-style ``BEGIN;`` first statement and ``COMMIT;`` last statement.

    Only whole lines are removed, and only when nothing but comments and blank
    lines stands before the ``BEGIN;`` or after the ``COMMIT;``; a ``commit``
    inside a procedure body is left alone.
    """
    lines = script.splitlines()

    def skippable(line: str) -> bool:
        s = line.strip()
        return not s or s.startswith("--")

    begin_re = re.compile(r"^\s*(begin|start\s+transaction)(\s+transaction|\s+work)?\s*;\s*(--.*)?$", re.IGNORECASE)
    commit_re = re.compile(r"^\s*(commit|end)(\s+transaction|\s+work)?\s*;\s*(--.*)?$", re.IGNORECASE)
    for i, line in enumerate(lines):
        if skippable(line):
            continue
        if begin_re.match(line):
            lines[i] = "-- (begin: run inside pyconductor.migrate's transaction)"
        break
    for i in range(len(lines) - 1, -1, -1):
        if skippable(lines[i]):
            continue
        if commit_re.match(lines[i]):
            lines[i] = "-- (commit: done by pyconductor.migrate)"
        break
    return "\n".join(lines) + "\n"


def sql_root() -> Path:
    """The directory holding ``sqitch.plan`` and the ``sql/`` deploy dir.

    Inside an installed wheel: ``pyconductor/_sql``; from a checkout (editable
    install): the repository root.
    """
    here = Path(__file__).resolve().parent
    bundled = here / "_sql"
    if (bundled / "sqitch.plan").is_file():
        return bundled
    for parent in here.parents:
        if (parent / "sqitch.plan").is_file() and (parent / "sql").is_dir():
            return parent
    raise MigrateError(
        "cannot find sqitch.plan: neither shipped inside the package (pyconductor/_sql) "
        "nor in a source checkout above it; pass --plan and --sql-dir"
    )


def _resolve(plan_path: Path | None, sql_dir: Path | None) -> tuple[Path, Path]:
    if plan_path is None or sql_dir is None:
        root = sql_root()
        plan_path = plan_path or root / "sqitch.plan"
        sql_dir = sql_dir or root / "sql"
    if not plan_path.is_file():
        raise MigrateError(f"plan file {plan_path} not found")
    return plan_path, sql_dir


def _script(change: Change, sql_dir: Path) -> tuple[str, str]:
    path = sql_dir / change.script()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise MigrateError(f"deploy script for change {change.key} not found: {path}") from None
    return data.decode("utf-8"), hashlib.sha256(data).hexdigest()


def _ensure_registry(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    with conn.transaction():
        conn.execute(queries.REGISTRY_DDL)


def applied_changes(
    conn: psycopg.Connection[tuple[object, ...]], project: str = "conductor"
) -> dict[tuple[str, int], str]:
    """``{(change, occurrence): script_sha256}`` recorded in this database."""
    exists = conn.execute(queries.REGISTRY_EXISTS).fetchone()
    if not exists or not exists[0]:
        return {}
    rows = conn.execute(queries.APPLIED_CHANGES, {"project": project}).fetchall()
    return {(str(c), int(str(o))): str(h) for c, o, h in rows}


def pending_changes(plan: Plan, applied: Iterable[tuple[str, int]]) -> list[Change]:
    done = set(applied)
    return [c for c in plan.changes if (c.name, c.occurrence) not in done]


def _status(
    plan_changes: Sequence[Change], sql_dir: Path, done: dict[tuple[str, int], str]
) -> tuple[Status, list[tuple[Change, str, str]]]:
    # Read every script first: a missing one fails before anything is applied.
    scripts = [(change, *_script(change, sql_dir)) for change in plan_changes]
    drifted = tuple(c for c, _, digest in scripts if done.get((c.name, c.occurrence), digest) != digest)
    todo = [(c, script, digest) for c, script, digest in scripts if (c.name, c.occurrence) not in done]
    return Status(pending=tuple(c for c, _, _ in todo), drifted=drifted), todo


def status(dsn: str, *, plan_path: Path | None = None, sql_dir: Path | None = None, to: str | None = None) -> Status:
    """What ``migrate`` would apply to ``dsn`` and which deployed changes drifted; changes nothing."""
    plan_path, sql_dir = _resolve(plan_path, sql_dir)
    plan = parse_plan(plan_path.read_text())
    with psycopg.connect(dsn, autocommit=True) as conn:
        return _status(plan.up_to(to), sql_dir, applied_changes(conn, plan.project))[0]


def migrate(
    dsn: str,
    *,
    plan_path: Path | None = None,
    sql_dir: Path | None = None,
    to: str | None = None,
    progress: Callable[[str], None] | None = None,
    lock_wait: float = LOCK_WAIT,
) -> list[Change]:
    """Apply every pending change of the plan to ``dsn``; return those applied.

    ``plan_path`` defaults to the shipped ``sqitch.plan``, ``sql_dir`` to the
    deploy dir beside it; ``to`` names a tag to stop at. ``progress`` receives
    one line per change. Raises DriftError, having applied nothing, when a
    deployed change's script differs from the plan's; LockBusy, having applied
    nothing, when another session held the migration lock for ``lock_wait``
    seconds.
    """
    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    plan_path, sql_dir = _resolve(plan_path, sql_dir)
    plan = parse_plan(plan_path.read_text())
    wanted = plan.up_to(to)
    applied: list[Change] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        _take_lock(conn, lock_wait, say)
        try:
            _ensure_registry(conn)
            state, todo = _status(wanted, sql_dir, applied_changes(conn, plan.project))
            if state.drifted:
                raise DriftError(state.drifted)
            for change, script, digest in todo:
                say(f"  + {change.key}")
                try:
                    with conn.transaction():
                        conn.execute(strip_transaction(script).encode())
                        conn.execute(queries.RESET_ROLE)
                        conn.execute(queries.RECORD_CHANGE, {
                            "project": plan.project, "change": change.name,
                            "occurrence": change.occurrence, "script_sha256": digest,
                        })  # fmt: skip
                except psycopg.Error as exc:
                    raise MigrateError(
                        f"change {change.key} failed ({sql_dir / change.script()}): "
                        f"{exc.sqlstate or ''} {str(exc).strip()}"
                    ) from exc
                applied.append(change)
        finally:
            if not conn.closed and not conn.broken:
                conn.execute(queries.MIGRATION_UNLOCK, {"key": LOCK_KEY})
    say(f"{len(applied)} change(s) applied, {len(wanted) - len(applied)} already deployed")
    return applied


def _take_lock(conn: psycopg.Connection[tuple[object, ...]], wait: float, say: Callable[[str], None]) -> None:
    """Take the migration lock, trying again (every 0.05 s, doubling to 1 s) for
    up to ``wait`` seconds; LockBusy naming the holder after that."""
    deadline = time.monotonic() + max(0.0, wait)
    delay = 0.05
    told = False
    while True:
        row = conn.execute(queries.TRY_MIGRATION_LOCK, {"key": LOCK_KEY}).fetchone()
        if row and row[0]:
            return
        left = deadline - time.monotonic()
        if left <= 0:
            with conn.cursor(row_factory=dict_row) as cur:
                holders = cur.execute(queries.MIGRATION_LOCK_HOLDER, {"key": LOCK_KEY}).fetchall()
            raise LockBusy(wait, holders)
        if not told:
            say(f"  waiting for the migration lock (another session holds it; at most {wait:g}s)")
            told = True
        time.sleep(min(delay, left))
        delay = min(delay * 2, 1.0)
