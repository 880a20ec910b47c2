"""The operator's commands: stats, health, prune, tasks, cancel, retry, emit-event, status.

``pyconductor.cli`` declares their parsers; the functions here run them: one
short connection (:mod:`pyconductor.commands.connect`), the one-line queries of
:mod:`pyconductor.queries`, and the formatting of what comes back (tables, JSON,
one-line health verdicts). Every decision (what is ready, what may be pruned)
is the database's.

Exit codes: 0 done (health: healthy), 1 an error or (health) unhealthy, with a
one-line reason on stderr (health: on stdout), 2 (health only) the database is
unreachable.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pyconductor import statuses
from pyconductor.cliutil import fail
from pyconductor.commands.connect import command
from pyconductor.durations import format_duration

__all__ = [
    "STATS_COLUMNS",
    "TASK_COLUMNS",
    "health_verdict",
    "render_table",
]

# -- tables ----------------------------------------------------------------------------


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, timedelta):
        return format_duration(value)
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value) or "-"
    return str(value)


def render_table(rows: Sequence[dict[str, Any]], columns: Sequence[str], headers: Sequence[str] | None = None) -> str:
    """Rows as aligned columns under upper-case headers; numbers right-aligned."""
    header = [h.upper() for h in (headers or columns)]
    body = [[_cell(r.get(c)) for c in columns] for r in rows]

    def is_number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    numeric = [any(is_number(r.get(c)) for r in rows) and all(is_number(r.get(c)) or r.get(c) is None for r in rows)
               for c in columns]  # fmt: skip
    widths = [max(len(x) for x in col) for col in zip(header, *body, strict=True)]
    lines = []
    for line in [header, *body]:
        cells = [x.rjust(w) if num else x.ljust(w) for x, w, num in zip(line, widths, numeric, strict=True)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _jsonable(value: Any) -> Any:
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, datetime):
        return value.isoformat()
    return value


# -- stats -----------------------------------------------------------------------------

STATS_COLUMNS = ("queue", "ready", "scheduled", "running", "waiting", "oldest_ready_age",
                 "succeeded_1m", "succeeded_5m", "succeeded_15m", "failed_1m", "failed_5m", "failed_15m",
                 "failure_rate")  # fmt: skip
_STATS_HEADERS = ("queue", "ready", "sched", "running", "waiting", "backlog",
                  "ok/1m", "ok/5m", "ok/15m", "fail/1m", "fail/5m", "fail/15m", "fail%")  # fmt: skip


def _stats(args: argparse.Namespace, conn: Any) -> int:
    from pyconductor import queries

    cur = conn.execute(queries.STATS)
    rows = cur.fetchall()
    names = [d.name for d in cur.description or ()]
    columns, headers = list(STATS_COLUMNS), list(_STATS_HEADERS)
    if "unrunnable" in names:  # 0.2.0: queued tasks no live worker can run (its queue and kind)
        at = columns.index("waiting") + 1
        columns.insert(at, "unrunnable")
        headers.insert(at, "unrunnable")
    if "expired_15m" in names:  # 0.3.0: not started by their deadline; the queue's cap
        columns += ["expired_15m", "max_running"]
        headers += ["expired/15m", "cap"]
    if args.queue:
        rows = [r for r in rows if r["queue"] == args.queue]
    if args.json:
        print(json.dumps([{k: _jsonable(r[k]) for k in columns} for r in rows], indent=2))
        return 0
    if not rows:
        print("no queues: nothing unfinished and nothing finished in the last 15 minutes")
        return 0
    shown = [dict(r, failure_rate=None if r["failure_rate"] is None else f"{r['failure_rate'] * 100:.1f}%")
             for r in rows]  # fmt: skip
    print(render_table(shown, columns, headers))
    return 0


run_stats = command(_stats)


# -- health ----------------------------------------------------------------------------


def health_verdict(rows: Sequence[dict[str, Any]], max_depth: int | None, max_age: timedelta | None,
                   max_failure_rate: float | None) -> tuple[bool, str]:  # fmt: skip
    """(healthy, one line): every threshold broken, worst queue first, or a summary."""
    problems: list[str] = []
    for r in rows:
        q = r["queue"]
        if max_depth is not None and r["ready"] > max_depth:
            problems.append(f"queue {q}: depth {r['ready']} > {max_depth}")
        age = r["oldest_ready_age"]
        if max_age is not None and age is not None and age > max_age:
            problems.append(f"queue {q}: backlog age {format_duration(age)} > {format_duration(max_age)}")
        rate = r["failure_rate"]
        if max_failure_rate is not None and rate is not None and rate > max_failure_rate:
            problems.append(f"queue {q}: failure rate {rate:.2f} > {max_failure_rate:g} "
                            f"({r['failed_15m']} of {r['failed_15m'] + r['succeeded_15m']} in 15m)")  # fmt: skip
    if problems:
        return False, "unhealthy: " + "; ".join(problems)
    depth = sum(r["ready"] for r in rows)
    ages = [r["oldest_ready_age"] for r in rows if r["oldest_ready_age"] is not None]
    failed = sum(r["failed_15m"] for r in rows)
    done = failed + sum(r["succeeded_15m"] for r in rows)
    rate = f"{failed / done:.2f}" if done else "-"
    return True, (f"ok: {len(rows)} queue(s), depth {depth}, "
                  f"backlog age {format_duration(max(ages) if ages else None)}, "
                  f"failure rate {rate} (15m)")  # fmt: skip


def _health(args: argparse.Namespace, conn: Any) -> int:
    from pyconductor import queries

    rows = conn.execute(queries.STATS).fetchall()
    if args.queue:
        rows = [r for r in rows if r["queue"] == args.queue]
    healthy, line = health_verdict(rows, args.max_depth, args.max_age, args.max_failure_rate)
    print(line)
    return 0 if healthy else 1


run_health = command(_health, unreachable_code=2)


# -- prune -----------------------------------------------------------------------------


def _prune(args: argparse.Namespace, conn: Any) -> int:
    from pyconductor import queries

    if args.batch < 1:
        return fail("--batch must be at least 1")
    total = 0
    batches = 0
    while True:
        row = conn.execute(queries.PRUNE, {"older_than": args.older_than, "include_failed": args.include_failed,
                                           "batch": args.batch}).fetchone()  # fmt: skip
        n = int(row["pruned"])
        total += n
        batches += 1
        print(f"prune: batch {batches}: {n} row(s), {total} so far", file=sys.stderr, flush=True)
        if n < args.batch:
            break
    what = "finished" if args.include_failed else "succeeded or cancelled"
    # conductor.prune counts the events it deletes (emitted before the cutoff, awaited by nobody) too.
    print(f"pruned {total} {what} task(s) and unawaited event(s) older than {format_duration(args.older_than)}")
    return 0


run_prune = command(_prune)


# -- tasks -----------------------------------------------------------------------------

# tries used: the retry budget (tasks.attempt of max_attempts), not an attempt's number (#n)
TASK_COLUMNS = ("id", "status", "queue", "kind", "tries used", "enqueued_at", "finished_at", "error")
SHOWN_CHILDREN = 20  # `tasks show` lists this many of a task's children


def _short(text: str | None, width: int = 60) -> str | None:
    if text is None:
        return None
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def _tasks(args: argparse.Namespace, conn: Any) -> int:
    from pyconductor import queries

    if args.show and args.show[0] in BULK_ACTIONS:
        return _bulk(args, conn)
    if args.show and args.show[0] == "search":
        return _search(args, conn)
    if args.show:
        return _task_show(args, conn)
    rows = conn.execute(queries.LIST_TASKS, {"status": args.status, "queue": args.queue, "kind": args.kind,
                                             "before_id": args.before, "limit": args.limit}).fetchall()  # fmt: skip
    if args.json:
        print(json.dumps([{k: _jsonable(v) for k, v in r.items()} for r in rows], indent=2, default=str))
        return 0
    if not rows:
        print("no tasks")
        return 0
    shown = [dict(r, error=_short(r["error"]), **{"tries used": f"{r['attempt']}/{r['max_attempts']}"}) for r in rows]
    print(render_table(shown, TASK_COLUMNS))
    return 0


def _search(args: argparse.Namespace, conn: Any) -> int:
    """``tasks search``: one page of conductor.search_tasks, then where the next one starts."""
    from pyconductor import queries

    if len(args.show) != 1:
        return fail(f"`tasks search` takes filters (--kind, --queue, --status, --dedupe-key, --payload, "
                    f"--enqueued-after, ...), not `{' '.join(args.show[1:])}`")  # fmt: skip
    try:
        times = {name: _parse_ts(getattr(args, name)) for name in
                 ("enqueued_after", "enqueued_before", "finished_after", "finished_before")}  # fmt: skip
    except ValueError as exc:
        return fail(f"not a time (ISO 8601, e.g. 2031-01-01T09:00:00+00:00): {exc}")
    times = {k: v if v is None or v.tzinfo else v.replace(tzinfo=UTC) for k, v in times.items()}
    rows = conn.execute(queries.SEARCH_TASKS, {
        "kind": args.kind, "queue": args.queue, "status": args.status, "dedupe_key": args.dedupe_key,
        "payload_contains": args.payload, **times, "before_id": args.before, "limit": args.limit,
        "scan_limit": args.scan,
    }).fetchall()  # fmt: skip
    found = [r for r in rows if r["id"] is not None]
    cursor = {"next_before_id": rows[0]["next_before_id"], "scanned": rows[0]["scanned"],
              "cut_short": rows[0]["cut_short"]}  # fmt: skip
    if args.json:
        task_keys = [k for k in found[0] if k not in (*cursor, "ordinality")] if found else []
        print(json.dumps({"tasks": [{k: _jsonable(r[k]) for k in task_keys} for r in found], **cursor},
                         indent=2, default=str))  # fmt: skip
        return 0
    if found:
        shown = [dict(r, error=_short(r["error"]), **{"tries used": f"{r['attempt']}/{r['max_attempts']}"})
                 for r in found]  # fmt: skip
        print(render_table(shown, TASK_COLUMNS))
    else:
        print("no tasks match" + (" in the tasks examined" if cursor["cut_short"] else ""))
    nxt = cursor["next_before_id"]
    if nxt is not None and cursor["cut_short"]:
        print(f"examined {cursor['scanned']} tasks down to task {nxt} and stopped: older tasks may match; "
              f"search further with --before {nxt}")  # fmt: skip
    elif nxt is not None:
        print(f"older: --before {nxt}")
    return 0


def _fork_source(task: Mapping[str, Any]) -> str | None:
    """What `tasks show` says of a fork's source (None: not a fork)."""
    if task.get("forked_from") is None:
        return None
    return f"{task['forked_from']} at step {task['forked_at_step']}"


def _task_show(args: argparse.Namespace, conn: Any) -> int:
    from pyconductor import queries

    if len(args.show) != 2 or args.show[0] != "show" or not args.show[1].isdigit():
        return fail(f"expected `tasks show ID`, got `tasks {' '.join(args.show)}`")
    task = conn.execute(queries.GET_TASK, {"task_id": int(args.show[1])}).fetchone()
    if args.json:
        print(json.dumps({k: _jsonable(v) for k, v in task.items()}, indent=2, default=str))
        return 0
    out = [f"task {task['id']}  {task['status']}  kind {task['kind']}  queue {task['queue']}"]
    fields = [
        ("priority", task["priority"]),
        ("tries used", f"{task['attempt']} of {task['max_attempts']}"),
        ("recoveries", f"{task['recoveries']}/{task['max_recoveries']}"),
        ("run", task["root_id"] if task["root_id"] != task["id"] else "(root)"),
        ("parent", task["parent_id"]),
        ("dedupe_key", task["dedupe_key"]),
        ("concurrency_key", task["concurrency_key"]),
        ("timeout", task.get("timeout")),  # each attempt's time limit (0.2.0)
        ("code_version", task.get("code_version")),  # the code the run started on (docs/versioning.md)
        ("graph", task.get("graph_id")),  # docs/graphs.md
        ("forked_from", _fork_source(task)),
        ("run_at", task["run_at"]),
        ("enqueued", task["enqueued_at"]),
        ("started", task["started_at"]),
        ("finished", task["finished_at"]),
        ("payload", json.dumps(task["payload"])),
        ("result", json.dumps(task["result"]) if task["result"] is not None else None),
        ("error", task["error"]),
    ]
    out += [f"  {name + ':':<17}{_cell(value)}" for name, value in fields if value is not None]
    if task["status"] == statuses.QUEUED:
        waiting = conn.execute(queries.WHY_WAITING, {"task_ids": [task["id"]]}).fetchall()
        out.append("why it is not running:")
        out += [f"  {r['detail']}  [{r['reason']}]" for r in waiting]
    attempts = task["attempts"] or []
    logs = {r["attempt_id"]: r for r in conn.execute(queries.TASK_LOGS, {"attempt_ids": [a["id"] for a in attempts]})}
    out.append(f"attempts ({len(attempts)}):")
    for a in attempts:
        claimed = _parse_ts(a.get("claimed_at"))
        finished = _parse_ts(a.get("finished_at"))
        took = format_duration(finished - claimed) if claimed and finished else "running"
        out.append(f"  #{a['number']} attempt {a['id']}  {a.get('outcome') or 'running'}  worker {a['worker_id']}  "
                   f"claimed {_cell(claimed)}  took {took}")  # fmt: skip
        if a.get("error"):
            out.append(f"    error: {a['error']}")
        if a.get("traceback"):
            out.extend("    " + line for line in a["traceback"].rstrip().splitlines())
        log = logs.get(a["id"])
        if log is not None:
            lines = log["lines"] if isinstance(log["lines"], list) else []
            dropped = f", {log['dropped']} dropped" if log["dropped"] else ""
            out.append(f"    log ({len(lines)} line(s){dropped}):")
            out.extend(f"      {line.get('at')} {line.get('level')} {line.get('logger')}: {line.get('message')}"
                       for line in lines)  # fmt: skip
    steps = conn.execute(queries.TASK_STEPS, {"task_id": task["id"]}).fetchall()
    out.append(f"steps ({len(steps)}):")
    out += [f"  {s['name']}  saved {_cell(s['saved_at'])}  {_short(json.dumps(s['result']), 80)}" for s in steps]
    count = conn.execute(queries.TASK_CHILDREN_COUNT, {"task_id": task["id"]}).fetchone()["n"]
    children = conn.execute(queries.TASK_CHILDREN, {"task_id": task["id"], "limit": SHOWN_CHILDREN}).fetchall()
    out.append(f"children ({count}):")
    out += [f"  task {c['id']}  {c['status']}  kind {c['kind']}  queue {c['queue']}" for c in children]
    if count > len(children):
        out.append(f"  ... {count - len(children)} more: pyconductor tasks --json, or conductor.children({task['id']})")
    print("\n".join(out))
    return 0


def _parse_ts(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


# -- tasks retry|cancel: every task a filter matches -------------------------------------

BULK_ACTIONS = ("retry", "cancel")


def bulk_filter(args: argparse.Namespace) -> dict[str, Any]:
    """The query parameters of a bulk filter, from the tasks command's flags."""
    return {"status": args.status, "queue": args.queue, "kind": args.kind, "since": args.since,
            "until": args.until, "error_contains": args.error_contains}  # fmt: skip


def _bulk(args: argparse.Namespace, conn: Any) -> int:
    from pyconductor import queries

    action = args.show[0]
    if len(args.show) != 1:
        return fail(f"`tasks {action}` takes a filter (--queue, --kind, --status, --since, --until, "
                    f"--error-contains), not `{' '.join(args.show[1:])}`")  # fmt: skip
    params = bulk_filter(args)
    preview = conn.execute(queries.PREVIEW_MATCHING, {"action": action, **params}).fetchone()
    matching = int(preview["matching"])
    if matching == 0:
        print(f"no task matches; nothing to {action}")
        return 0
    sample = ", ".join(str(i) for i in preview["sample_ids"])
    print(f"{matching} task(s) match (newest: {sample})")
    if not args.yes:
        answer = input(f"{action} all {matching}? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            print("nothing changed")
            return 1
    statement = queries.RETRY_MATCHING if action == "retry" else queries.CANCEL_MATCHING
    total = 0
    while True:
        n = int(conn.execute(statement, {**params, "expected": matching, "batch": args.batch}).fetchone()["changed"])
        if n == 0:
            break
        total += n
    done = "retried" if action == "retry" else "cancelled (descendants included)"
    print(f"{done}: {total} task(s)")
    return 0


run_tasks = command(_tasks)


# -- cancel, retry ---------------------------------------------------------------------


def _cancel(args: argparse.Namespace, conn: Any) -> int:
    from pyconductor import queries

    n = conn.execute(queries.CANCEL, {"task_id": args.task_id}).fetchone()["cancel"]
    if n == 0:
        print(f"task {args.task_id} was already finished; nothing cancelled")
    else:
        print(f"cancelled {n} task(s): {args.task_id} and its unfinished descendants")
    return 0


def _retry(args: argparse.Namespace, conn: Any) -> int:
    from pyconductor import queries

    task_id = conn.execute(queries.RETRY, {"task_id": args.task_id}).fetchone()["retry"]
    print(f"task {task_id} is queued again")
    return 0


def _rewind(args: argparse.Namespace, conn: Any) -> int:
    from pyconductor import queries

    params = {"task_id": args.task_id, "from_step": args.from_step}
    task_id = conn.execute(queries.REWIND, params).fetchone()["task_id"]
    print(f"task {task_id} is queued again from step {args.from_step!r}; the steps saved before it are kept")
    return 0


def _fork(args: argparse.Namespace, conn: Any) -> int:
    from pyconductor import queries

    params = {"task_id": args.task_id, "from_step": args.from_step}
    fork_id = conn.execute(queries.FORK, params).fetchone()["task_id"]
    print(f"task {fork_id} is a copy of task {args.task_id} from step {args.from_step!r}, queued")
    return 0


def _emit_event(args: argparse.Namespace, conn: Any) -> int:
    import json

    from psycopg.types.json import Jsonb

    from pyconductor import queries

    try:
        payload = json.loads(args.payload)
    except json.JSONDecodeError as exc:
        return fail(f"--payload is not JSON: {exc}")
    woken = conn.execute(queries.EMIT_EVENT, {"name": args.name, "payload": Jsonb(payload)}).fetchone()["woken"]
    print(f"event {args.name}: woke {woken} waiting task(s)")
    return 0


run_cancel = command(_cancel)
run_retry = command(_retry)
run_rewind = command(_rewind)
run_fork = command(_fork)
run_emit_event = command(_emit_event)


# -- status ----------------------------------------------------------------------------

WORKER_COLUMNS = ("id", "host", "pid", "roles", "queues", "kinds", "concurrency", "version", "last_seen")


# Rows reap() has not forgotten yet (its stale_workers_after): listed as silent when not live.
SILENT_WITHIN = timedelta(minutes=15)


def _status(args: argparse.Namespace, conn: Any) -> int:
    from pyconductor import queries

    window = max(args.seen_within, SILENT_WITHIN)
    rows = conn.execute(queries.LIVE_WORKERS, {"seen_within": window}).fetchall()
    workers = [w for w in rows if w["last_seen_ago"] <= args.seen_within]
    silent = [w for w in rows if w["last_seen_ago"] > args.seen_within]
    leaders = conn.execute(queries.LEADERS).fetchall()
    holders = _lock_holders(conn)
    if args.json:
        print(json.dumps({"workers": [{k: _jsonable(v) for k, v in w.items()} for w in workers],
                          "silent": [{k: _jsonable(v) for k, v in w.items()} for w in silent],
                          "leaders": [{k: _jsonable(v) for k, v in row.items()} for row in leaders],
                          "lock_holders": None if holders is None
                          else [{k: _jsonable(v) for k, v in row.items()} for row in holders]},
                         indent=2, default=str))  # fmt: skip
        return 0

    def table(found: list[dict[str, Any]]) -> str:
        shown = [dict(w, queues=w["queues"] or ["(all)"], kinds=w.get("kinds") or ["(all)"],
                      last_seen=f"{format_duration(w['last_seen_ago'])} ago") for w in found]  # fmt: skip
        return render_table(shown, WORKER_COLUMNS)

    print(f"workers seen in the last {format_duration(args.seen_within)}: {len(workers)}")
    if workers:
        print(table(workers))
    if silent:
        print(f"silent workers (not seen for over {format_duration(args.seen_within)}: stopped without "
              f"deregistering, killed, or stalled; reap() forgets them): {len(silent)}")  # fmt: skip
        print(table(silent))
    print(f"leader leases held: {len(leaders)}")
    if leaders:
        print(render_table(leaders, ("name", "holder", "login", "since", "expires_at", "pid", "application_name")))
    if holders is None:
        print("sessions outside the engine holding its locks: not visible to this login "
              "(conductor.foreign_lock_holders() is granted to conductor_worker and conductor_admin)")  # fmt: skip
    else:
        print(f"sessions outside the engine holding its locks: {len(holders)}")
        if holders:
            print(render_table(holders, ("pid", "usename", "application_name", "key_space", "label", "mode",
                                         "reason")))  # fmt: skip
    return 0


def _lock_holders(conn: Any) -> list[dict[str, Any]] | None:
    """conductor.foreign_lock_holders(), or None on a schema without it or for a login it is not granted to."""
    import psycopg

    from pyconductor import queries

    try:
        rows: list[dict[str, Any]] = conn.execute(queries.FOREIGN_LOCK_HOLDERS, {"hold": "1 second"}).fetchall()
        return rows
    except (psycopg.errors.UndefinedFunction, psycopg.errors.InsufficientPrivilege):
        return None


run_status = command(_status)
