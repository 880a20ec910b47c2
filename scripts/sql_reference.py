#!/usr/bin/env python3
"""Write docs/reference/sql.md, the SQL API reference, from a deployed schema.

Every public function of schema ``conductor`` (no leading ``_``) is read from
the catalogue of a migrated database: its arguments and result
(``pg_get_function_arguments`` / ``pg_get_function_result``), the columns or
labels of the type it returns, its ``COMMENT ON FUNCTION`` (the contract),
the roles granted EXECUTE, security definer, volatility and parallel safety.
Nothing is written by hand, so the page cannot drift from the SQL: a test
(python/tests/test_docs.py) regenerates it and compares.

Internal helpers (a leading ``_``) are left out: they are granted to no role
but the schema's owner, so no caller can run them, and they may change in any
release. The page lists their names only, and the checks below fail if one
is ever granted to a caller. They state their contract in a comment all the
same (for ``\\df+`` and whoever reads the SQL): a function of either kind
without one fails the checks.

    .venv/bin/python scripts/sql_reference.py            # write (make docs-reference)
    .venv/bin/python scripts/sql_reference.py --check    # exit 1 when the file is stale
    ... --dsn postgresql://...                           # read this migrated database

Without ``--dsn`` it starts a throwaway cluster (pyconductor.dev.devdb), deploys
the working tree's sqitch.plan into it, and removes it on exit. Exit 1 also
when a check fails: a function (public or internal) without a comment, a
public function missing from GROUPS below, an internal helper granted to a
caller role.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generated import REGENERATE, REPO, arguments, migrated_database, write_or_check

OUTPUT = REPO / "docs" / "reference" / "sql.md"
CALLER_ROLES = ("conductor_client", "conductor_worker", "conductor_admin")

# Sections in the order a task lives through them; within a section, the order
# listed. A new public function must be added here (the checks say so).
GROUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("Enqueueing", "Writing tasks, from any client or trigger, and a kind's defaults.",
     ("enqueue", "enqueue_many", "configure_kind")),
    ("Working: claim, heartbeat, report", "The worker's hot path; the attempt id a claim returns is the fencing "
     "token of every later call about that task.",
     ("register_worker", "claim", "heartbeat", "complete", "complete_many", "complete_in_transaction", "fail", "release", "save_log",
      "deregister_worker")),
    ("Durable runs", "Checkpoints, children and waits of a task that survives its worker.",
     ("save_step", "spawn", "suspend", "emit_event", "children")),
    ("Wake-ups and waiting for results", "Who sleeps and who waits, so that the engine notifies only them "
     "(the protocol: [the worker protocol](../protocol.md)).",
     ("sleep", "wake", "next_due", "next_wake", "watch", "unwatch")),
    ("Graphs and batches", "Tasks with dependencies and callbacks, declared at once "
     "(see [Graphs and batches](../graphs.md)).",
     ("enqueue_graph", "dependency_results", "graph", "cancel_graph")),
    ("Reading", "Task state and queue health, for dashboards, alerts and other languages.",
     ("get_task", "list_attempts", "run_timeline", "list_tasks", "search_tasks", "stats", "unrunnable", "why_waiting",
      "waiting_reasons", "queue_series", "unfinished_statuses", "finished_statuses", "retryable_statuses")),
    ("Cancelling and retrying", "One task, or every task a filter matches (admin only, a batch per call).",
     ("cancel", "retry", "preview_matching", "retry_matching", "cancel_matching")),
    ("Rewind, fork, run state and updates", "Restarting or copying a finished run from a step, a run's "
     "published state, and updates a run answers ([Durable workflows](../workflows.md)).",
     ("rewind", "fork", "set_run_state", "run_state", "send_update", "wait_update", "reply_update", "update_reply")),
    ("Maintenance", "Taking back lost work, sampling the queues over time and deleting old history.", ("reap", "reap_report", "apply_retention", "sample_queues", "prune")),
    ("Queue controls", "Operators' controls, enforced by every worker's claim.",
     ("pause_queue", "resume_queue", "set_rate_limit", "set_queue_limit")),
    ("Schedules and cron lines", "See also [Schedules](../schedules.md) and [Cron lines](../cron.md).",
     ("create_schedule", "update_schedule", "enable_schedule", "delete_schedule", "list_schedules",
      "fire_schedule", "overdue_schedules", "tick", "cron_next", "cron_validate")),
    ("Locks and the event bus", "Leader leases, exclusive locks (transaction), foreign lock holders and publish/subscribe.",
     ("try_lead", "release_lead", "leaders", "foreign_lock_holders", "lead_key", "exclusive", "publish", "subscribe",
      "unsubscribe")),
    ("Clock and release", "", ("now", "version")),
)  # fmt: skip

FUNCTIONS_SQL = """
select p.oid::bigint as oid,
       p.proname::text as name,
       pg_catalog.pg_get_function_arguments(p.oid) as arguments,
       pg_catalog.pg_get_function_result(p.oid) as result,
       pg_catalog.obj_description(p.oid, 'pg_proc') as comment,
       p.prosecdef as definer,
       p.provolatile::text as volatility,
       p.proparallel::text as parallel,
       p.prorettype::bigint as rettype,
       coalesce((select array_agg(case when a.grantee = 0 then 'public' else r.rolname::text end
                                  order by r.rolname)
                 from pg_catalog.aclexplode(p.proacl) a
                 left join pg_catalog.pg_roles r on r.oid = a.grantee
                 where a.privilege_type = 'EXECUTE' and a.grantee <> p.proowner), '{}') as granted
from pg_catalog.pg_proc p
where p.pronamespace = 'conductor'::regnamespace and p.prokind = 'f'
order by p.proname, pg_catalog.pg_get_function_identity_arguments(p.oid)
"""

# The columns of a composite or table row type, or the labels of an enum, in the conductor schema.
TYPE_SQL = """
select t.typtype::text as kind, pg_catalog.format_type(t.oid, null) as name, c.relkind::text as relkind,
       case when t.typtype = 'e' then
         (select array_agg(e.enumlabel::text order by e.enumsortorder) from pg_catalog.pg_enum e
          where e.enumtypid = t.oid)
       else
         (select array_agg(a.attname || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod) order by a.attnum)
          from pg_catalog.pg_attribute a where a.attrelid = t.typrelid and a.attnum > 0 and not a.attisdropped)
       end as parts
from pg_catalog.pg_type t left join pg_catalog.pg_class c on c.oid = t.typrelid
where t.oid = %s and t.typnamespace = 'conductor'::regnamespace
"""

VOLATILITY = {"v": "volatile", "s": "stable", "i": "immutable"}
PARALLEL = {"u": "parallel unsafe", "r": "parallel restricted", "s": "parallel safe"}


@dataclass(frozen=True)
class ReturnType:
    kind: str  # 'c' composite, 'e' enum
    name: str
    relkind: str | None  # 'r' when it is a table's row type
    parts: tuple[str, ...]


@dataclass(frozen=True)
class Function:
    name: str
    arguments: str
    result: str
    comment: str | None
    definer: bool
    volatility: str
    parallel: str
    granted: tuple[str, ...]
    returns: ReturnType | None

    @property
    def internal(self) -> bool:
        return self.name.startswith("_")


def read_functions(conn: psycopg.Connection[tuple[object, ...]]) -> list[Function]:
    """Every function of schema conductor, as the catalogue of ``conn``'s database has it."""
    from psycopg.rows import dict_row

    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(FUNCTIONS_SQL).fetchall()
        functions = []
        for row in rows:
            typ = cur.execute(TYPE_SQL, (row["rettype"],)).fetchone()
            returns = (ReturnType(typ["kind"], typ["name"], typ["relkind"], tuple(typ["parts"] or ()))
                       if typ and typ["kind"] in ("c", "e") else None)  # fmt: skip
            functions.append(Function(
                name=row["name"], arguments=row["arguments"], result=row["result"], comment=row["comment"],
                definer=row["definer"], volatility=row["volatility"], parallel=row["parallel"],
                granted=tuple(sorted(row["granted"], key=_role_order)), returns=returns,
            ))  # fmt: skip
    return functions


def _role_order(role: str) -> tuple[int, str]:
    return (CALLER_ROLES.index(role), role) if role in CALLER_ROLES else (len(CALLER_ROLES), role)


def problems(functions: Sequence[Function]) -> list[str]:
    """What keeps the reference from being the whole contract; empty when nothing does."""
    grouped = {name for _, _, names in GROUPS for name in names}
    public = {f.name for f in functions if not f.internal}
    found = []
    missing = sorted({f.name for f in functions if not f.internal and not (f.comment or "").strip()})
    if missing:
        found.append("public functions without COMMENT ON FUNCTION (the reference is made of them): "
                     + ", ".join(missing))  # fmt: skip
    helpers = sorted({f.name for f in functions if f.internal and not (f.comment or "").strip()})
    if helpers:
        found.append("internal helpers without COMMENT ON FUNCTION (each states its contract, placed after its "
                     "definition in sql/functions/): " + ", ".join(helpers))  # fmt: skip
    ungrouped = sorted(public - grouped)
    if ungrouped:
        found.append("public functions missing from GROUPS in scripts/sql_reference.py: " + ", ".join(ungrouped))
    gone = sorted(grouped - public)
    if gone:
        found.append("GROUPS in scripts/sql_reference.py names functions the schema does not have: " + ", ".join(gone))
    exposed = sorted({f.name for f in functions if f.internal and f.granted})
    if exposed:
        found.append("internal helpers granted to a role (left out of the reference as not callable): "
                     + ", ".join(exposed))  # fmt: skip
    ungranted = sorted({f.name for f in functions if not f.internal and not f.granted})
    if ungranted:
        found.append("public functions granted to no role (callable only by the owner): " + ", ".join(ungranted))
    return found


# ---------------------------------------------------------------------------------------------- rendering


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """``text`` split at ``sep`` outside quotes, brackets and parentheses (argument lists, defaults)."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return parts


def signature(f: Function) -> str:
    """The call as SQL, one argument a line when there are more than two."""
    args = split_top_level(f.arguments)
    head = (f"conductor.{f.name}({', '.join(args)})" if len(args) <= 2
            else "conductor.{}(\n{}\n)".format(f.name, ",\n".join("    " + a for a in args)))  # fmt: skip
    result = f.result
    if result.startswith("TABLE(") and result.endswith(")"):
        cols = split_top_level(result[len("TABLE("):-1])
        result = ("table (" + ", ".join(cols) + ")" if len(cols) <= 2
                  else "table (\n{}\n)".format(",\n".join("    " + c for c in cols)))  # fmt: skip
    elif result.startswith("SETOF "):
        result = "setof " + result[len("SETOF "):]
    return f"{head} returns {result}"


def fence(text: str, lang: str) -> str:
    """``text`` in a fenced block whose fence no backtick run inside it can close."""
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


def inline(text: str) -> str:
    """Plain text made safe in a Markdown table cell: no emphasis, links, HTML or cell breaks."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for ch in "\\`*_[]|":
        text = text.replace(ch, "\\" + ch)
    return text


def summary(comment: str | None) -> str:
    """The comment's first sentence (up to a full stop followed by a space or the end)."""
    text = " ".join((comment or "").split())
    for i, ch in enumerate(text):
        if ch == "." and (i + 1 == len(text) or text[i + 1] == " ") and not text[max(0, i - 3):i + 1].endswith(
                ("e.g.", "i.e.")):
            return text[: i + 1]
    return text


def anchor(name: str, seen: dict[str, int]) -> str:
    """The id Python-Markdown's toc gives a heading ``name`` (a repeat gets ``_1``, ``_2``)."""
    n = seen.get(name, 0)
    seen[name] = n + 1
    return name if n == 0 else f"{name}_{n}"


def describe_type(t: ReturnType) -> str:
    if t.kind == "e":
        return f"`{t.name}` is one of " + ", ".join(f"`{label}`" for label in t.parts) + "."
    what = "a row of the table" if t.relkind == "r" else "the composite type"
    return f"`{t.name}` is {what}: " + ", ".join(f"`{p}`" for p in t.parts) + "."


def render(functions: Sequence[Function], release: str) -> str:
    by_name: dict[str, list[Function]] = {}
    for f in functions:
        by_name.setdefault(f.name, []).append(f)
    seen: dict[str, int] = {}
    out = [
        "<!-- Generated by scripts/sql_reference.py from a deployed schema: do not edit. "
        f"Run `{REGENERATE}`. -->",
        "",
        "# SQL API reference",
        "",
        f"The functions of schema `conductor` at release {release}, as a deployed database describes them: the "
        "signature from the catalogue, the text from each function's own `COMMENT ON FUNCTION` (what `\\df+ "
        "conductor.*` shows), the roles granted `EXECUTE`. The page is generated "
        "(`scripts/sql_reference.py`) and a test fails when it differs from the schema, so it cannot drift.",
        "",
        "Callers use named notation (`conductor.enqueue(kind => 'email', queue => 'mail')`): parameter names "
        "are part of the contract. The SQLSTATEs named below are explained in [Errors](../errors.md). "
        "Functions marked *security definer* run as `conductor_owner`; the roles are described in "
        "[Concepts](../concepts.md#roles).",
        "",
    ]
    groups: list[tuple[str, str, list[Function]]] = []
    for title, intro, names in GROUPS:
        members = [f for name in names for f in by_name.get(name, [])]
        if members:
            groups.append((title, intro, members))
    group_anchors = [anchor(_slug(title), seen) for title, _, _ in groups]
    anchors = {}
    for (_title, _intro, members) in groups:
        for f in members:
            anchors[id(f)] = anchor(f.name, seen)
    out += ["| function | granted to | summary |", "|---|---|---|"]
    for (title, _intro, members), gid in zip(groups, group_anchors):
        out.append(f"| **[{inline(title)}](#{gid})** | | |")
        for f in members:
            roles = ", ".join(r.removeprefix("conductor_") for r in f.granted)
            out.append(f"| [`{f.name}`](#{anchors[id(f)]}) | {roles} | {inline(summary(f.comment))} |")
    out.append("")
    for (title, intro, members) in groups:
        out += [f"## {title}", ""]
        if intro:
            out += [intro, ""]
        for f in members:
            props = ["security definer" if f.definer else "security invoker", VOLATILITY[f.volatility],
                     PARALLEL[f.parallel]]  # fmt: skip
            roles = ", ".join(f"`{r}`" for r in f.granted) or "nobody"
            out += [f"### {f.name}", "", fence(signature(f), "sql"), "",
                    f"Granted to {roles}; {', '.join(props)}.", ""]  # fmt: skip
            if f.returns:
                out += [describe_type(f.returns), ""]
            out += [fence(f.comment or "(no comment)", "text"), ""]
    helpers = sorted({f.name for f in functions if f.internal})
    if helpers:
        out += [
            "## Internal helpers",
            "",
            "Left out above: they are granted to no role but the schema's owner, so no caller can run them, "
            "and they may change in any release without notice. Their names, for reading the SQL in "
            "`sql/functions/`:",
            "",
            ",\n".join(f"`{name}`" for name in helpers) + ".",  # a line each: small diffs
            "",
        ]
    return "\n".join(out)


def _slug(title: str) -> str:
    """Python-Markdown toc's slugify for a plain-text heading."""
    import re
    import unicodedata

    value = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


def generate(dsn: str) -> tuple[str, list[Function]]:
    """The page for the migrated database at ``dsn``, and the functions it read."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        functions = read_functions(conn)
        row = conn.execute("select conductor.version()").fetchone()
    release = str(row[0]) if row else "unknown"
    return render(functions, release), functions


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(__doc__, OUTPUT, argv)
    if args.dsn:
        page, functions = generate(args.dsn)
    else:
        with migrated_database("reference") as (url, _):
            page, functions = generate(url)
    rc = write_or_check(args.output, page, args.check)
    for problem in problems(functions):
        print(f"error: {problem}", file=sys.stderr)
        rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
