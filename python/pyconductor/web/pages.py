"""The dashboard's pages as HTML: each takes what :mod:`pyconductor.web.reads`
read and returns the page's content (the part the live script re-fetches),
every value escaped (:mod:`pyconductor.web.markup`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request

from pyconductor import statuses
from pyconductor.web.charts import charts_section
from pyconductor.web.markup import (
    age,
    h,
    json_block,
    post_form,
    query_string,
    safe_name,
    status_badge,
    task_action_form,
    took,
    ts,
)
from pyconductor.web.reads import (
    RANGES,
    SCHEDULES_LIMIT,
    TREE_LIMIT,
    QueuesView,
    RunsView,
    RunView,
)
from pyconductor.web.timeline import timeline_svg

__all__ = ["PAGE_SIZE", "notice_line", "queues", "run", "runs", "schedules"]

PAGE_SIZE = 50  # tasks a page of /runs lists unless ?limit= says otherwise


def notice_line(notice: str | None) -> str:
    """The line a page shows for an action's outcome (only one this dashboard signed for this browser)."""
    return f"<p class=notice id=notice>{h(notice)}</p>" if notice else ""


def _log_time(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return ts(datetime.fromtimestamp(value, UTC))
    return h(value)


def _level_class(level: Any) -> str:
    return "lv-" + "".join(c for c in str(level or "").lower() if c.isalpha())[:16]


def _logs_section(
    attempts: Sequence[Mapping[str, Any]], logs: Mapping[int, Mapping[str, Any]], label: Callable[[int], str]
) -> str:
    """The handler log lines of ``attempts`` (newest first), every field escaped."""
    out = ["<h2>Log</h2>"]
    shown = [a for a in reversed(attempts) if a["id"] in logs]
    if not shown:
        out.append("<p id=no-logs>No log lines.</p>")
    for a in shown:
        log = logs[a["id"]]
        lines = log["lines"] if isinstance(log["lines"], list) else []
        dropped = int(log["dropped"] or 0)
        out.append(f"<div class=log data-attempt=\"{a['id']}\"><h3>#{a['number']} {h(label(a['id']))} "
                   f"<small>({len(lines)} lines{f', {dropped} dropped' if dropped else ''})</small></h3>"
                   "<table class=log>")  # fmt: skip
        for line in lines:
            if not isinstance(line, Mapping):
                line = {"message": line}
            out.append(
                f"<tr class={_level_class(line.get('level'))}><td>{_log_time(line.get('at'))}"
                f"<td>{h(line.get('level'))}<td>{h(line.get('logger'))}<td class=msg>{h(line.get('message'))}</tr>"
            )
        out.append("</table>")
        if dropped:
            out.append(f"<p class=notice>{dropped} more line(s) were dropped (the limits per attempt).</p>")
        out.append("</div>")
    return "".join(out)


def _attempts_table(attempts: Sequence[Mapping[str, Any]], label: Callable[[int], str]) -> str:
    if not attempts:
        return "<p>No attempts yet.</p>"
    # #: the attempt's number, 1..n in claim order (conductor.list_attempts); id: its attempt id
    out = [("<table class=attempts><tr><th>#<th>attempt<th>id<th>worker<th>host/pid<th>claimed<th>finished"
            "<th>took<th>outcome<th>error</tr>")]  # fmt: skip
    for a in attempts:
        tb = (f"<details><summary>traceback</summary><pre class=traceback>{h(a['traceback'])}</pre></details>"
              if a.get("traceback") else "")  # fmt: skip
        out.append(
            f'<tr data-attempt="{a["id"]}"><td class=n>{a["number"]}<td class=label>{h(label(a["id"]))}'
            f"<td class=n>{a['id']}"
            f"<td>{safe_name(a['worker_id'])}"
            f"<td>{safe_name(a.get('host') or '-')}/{h(a.get('pid') or '-')}<td>{ts(a['claimed_at'])}"
            f"<td>{ts(a['finished_at'])}<td class=n>{took(a['claimed_at'], a['finished_at'])}"
            f"<td>{status_badge(a['outcome'] or 'running')}<td class=err>{h(a['error'])}{tb}</tr>"
        )
    out.append("</table>")
    return "".join(out)


def _steps_table(steps: Sequence[Mapping[str, Any]]) -> str:
    out = ["<table class=steps><tr><th>step<th>saved<th>attempt<th>result</tr>"]
    out.extend(f"<tr><td>{h(s['name'])}<td>{ts(s['saved_at'])}<td class=n>{h(s['attempt_id'] or '-')}"
               f"<td><pre>{json_block(s['result'])}</pre></tr>" for s in steps)  # fmt: skip
    out.append("</table>")
    return "".join(out)


# conductor.why_waiting's reasons, in its order (each task counted under its first by waiting_reasons)
WAITING_REASONS = ("queue_paused", "due_later", "no_worker", "rate_limited", "concurrency_key", "ready")


def _waiting_section(reasons: Sequence[Mapping[str, Any]]) -> str:
    """Why a queued task is not running: each reason's sentence (the database writes it; names in it
    are data, escaped), the task holding its concurrency key linked."""
    items = "".join(
        f'<li data-reason="{h(r["reason"])}">{h(r["detail"])}'
        + (f' (<a href="/runs/{int(r["holder_id"])}">task {int(r["holder_id"])}</a>)' if r["holder_id"] else "")
        + "</li>"
        for r in reasons
    )
    return f"<h2>Why it is not running</h2><ul id=waiting>{items}</ul>"


def _waiting_table(waiting: Mapping[str, Mapping[str, int]]) -> str:
    """Per queue, how many queued tasks wait for each reason (conductor.waiting_reasons)."""
    head = "".join(f"<th>{h(reason.replace('_', ' '))}" for reason in WAITING_REASONS)
    rows = "".join(
        f'<tr data-waiting-queue="{h(queue)}"><td>{h(queue)}'
        + "".join(f'<td class=n data-reason="{reason}">{counts.get(reason, 0)}' for reason in WAITING_REASONS)
        + "</tr>"
        for queue, counts in waiting.items()
    )
    return f"<h2>Why queued tasks wait</h2><table id=waiting-reasons><tr><th>queue{head}</tr>{rows}</table>"


def queues(request: Request, view: QueuesView, notice: str) -> str:
    """``/``: each queue's stats() with its Pause or Resume button, the charts over time
    (``?range=hour`` or ``day``), why queued tasks wait, the live workers, the leader leases."""
    stats, paused, workers, leaders = view.stats, view.paused, view.workers, view.leaders
    out = ["<h1>Queues</h1>", notice]
    # a paused queue with nothing to show in stats() still gets its row, to be resumed
    listed = {r["queue"] for r in stats}
    idle = [q for q in paused if q not in listed]

    def controls(queue: str, is_paused: bool) -> str:
        marker = (f"<span class=paused data-paused title=\"since {ts(paused[queue]['paused_at'])}\">paused</span> "
                  if is_paused else "")  # fmt: skip
        button = (post_form(request, "/queues/resume", {"queue": queue}, "Resume", "resume") if is_paused
                  else post_form(request, "/queues/pause", {"queue": queue}, "Pause", "pause"))  # fmt: skip
        return f"<td class=controls>{marker}{button}"

    if not stats and not idle:
        out.append("<p>No queue has unfinished tasks or finished any in the last 15 minutes.</p>")
    else:
        # 0.2.0's stats() has unrunnable: queued tasks no live worker serves (queue and kind)
        unrunnable = bool(stats) and "unrunnable" in stats[0]
        out.append(
            "<table id=queues><tr><th>queue<th>ready<th>scheduled<th>running<th>waiting"
            + (
                '<th title="queued, and no live worker serves both the queue and the kind">unrunnable'
                if unrunnable
                else ""
            )
            + "<th>backlog age<th>succeeded 1m/5m/15m<th>failed 1m/5m/15m<th>failure rate<th>state</tr>"
        )
        for r in stats:
            q = h(r["queue"])
            rate = "-" if r["failure_rate"] is None else f"{float(r['failure_rate']) * 100:.1f}%"
            is_paused = bool(r.get("paused")) or r["queue"] in paused
            out.append(
                f'<tr data-queue="{q}"{" data-paused" if is_paused else ""}>'
                f'<td><a href="/runs{h(query_string({"queue": r["queue"]}))}">{q}</a>'
                f"<td class=n>{r['ready']}<td class=n>{r['scheduled']}<td class=n>{r['running']}"
                f"<td class=n>{r['waiting']}"
                + (f"<td class=n data-unrunnable>{r['unrunnable']}" if unrunnable else "")
                + f"<td class=n>{age(r['oldest_ready_age'])}"
                f"<td class=n>{r['succeeded_1m']} / {r['succeeded_5m']} / {r['succeeded_15m']}"
                f"<td class=n>{r['failed_1m']} / {r['failed_5m']} / {r['failed_15m']}<td class=n>{rate}"
                + controls(r["queue"], is_paused)
                + "</tr>"
            )
        blank = "<td class=n>-" * (8 + (1 if unrunnable else 0))
        for queue in idle:
            q = h(queue)
            out.append(f"<tr data-queue=\"{q}\" data-paused>"
                       f"<td><a href=\"/runs{h(query_string({'queue': queue}))}\">{q}</a>"
                       f"{blank}{controls(queue, True)}</tr>")  # fmt: skip
        out.append("</table>")
    links = {name: "/" + query_string({"range": name if name != "hour" else None}) for name in RANGES}
    out.append(charts_section(view.series, view.range, links))
    if view.waiting:
        out.append(_waiting_table(view.waiting))
    out.append("<h2>Workers</h2>")
    if not workers:
        out.append("<p>No live workers.</p>")
    else:
        out.append("<table id=workers><tr><th>id<th>host<th>pid<th>roles<th>queues<th>concurrency"
                   "<th>started<th>last seen</tr>")  # fmt: skip
        out.extend(
            f"<tr><td>{safe_name(w['id'])}<td>{safe_name(w['host'])}<td class=n>{h(w['pid'])}"
            f"<td>{safe_name(','.join(w['roles'] or []))}<td>{safe_name(','.join(w['queues']) if w['queues'] else '*')}"
            f"<td class=n>{h(w['concurrency'])}<td>{ts(w['started_at'])}<td>{ts(w['last_seen_at'])}</tr>"
            for w in workers
        )
        out.append("</table>")
    if leaders:
        out.append("<h2>Leader leases</h2><ul>")
        out.extend(f"<li>{h(r['name'])}: pid {h(r['pid'])} ({h(r['application_name'])})</li>" for r in leaders)
        out.append("</ul>")
    return "".join(out)


def runs(view: RunsView, *, status: str | None, kind: str | None, queue: str | None, before: int | None,
         limit: int) -> str:  # fmt: skip
    """``/runs``: the filters, one page of tasks, and the links to the newest and the older page."""
    rows, more = view.rows, view.more
    options = "".join(
        f'<option value="{s}"{" selected" if s == status else ""}>{s or "any status"}</option>'
        for s in ("", *statuses.ALL)
    )
    out = [
        (
            "<h1>Runs</h1><form id=filters method=get action=/runs>"
            f"<select name=status>{options}</select> "
            f'<input name=kind placeholder=kind value="{h(kind)}"> '
            f'<input name=queue placeholder=queue value="{h(queue)}"> '
            f'<input type=hidden name=limit value="{limit}"><button type=submit>Filter</button></form>'
        )
    ]
    if not rows:
        out.append("<p id=empty>No tasks match.</p>")
    else:
        out.append("<table id=runs><tr><th>id<th>kind<th>queue<th>status<th>tries used<th>enqueued"
                   "<th>finished<th>error</tr>")  # fmt: skip
        for t in rows:
            err = (t["error"] or "")[:120]
            out.append(
                f'<tr data-id="{t["id"]}" data-status="{h(t["status"])}">'
                f'<td><a href="/runs/{t["id"]}">{t["id"]}</a>'
                f"<td>{safe_name(t['kind'])}<td>{h(t['queue'])}<td>{status_badge(t['status'])}"
                f"<td class=n>{t['attempt']}/{t['max_attempts']}<td>{ts(t['enqueued_at'])}"
                f"<td>{ts(t['finished_at'])}<td class=err>{h(err)}</tr>"
            )
        out.append("</table>")
    nav = []
    filters = {"status": status, "kind": kind, "queue": queue, "limit": limit if limit != PAGE_SIZE else None}
    if before is not None:
        nav.append(f'<a id=newest href="/runs{h(query_string(filters))}">« newest</a>')
    if more:
        nav.append(f'<a id=older href="/runs{h(query_string({**filters, "before": rows[-1]["id"]}))}">older »</a>')
    out.append(f"<p class=pager>{' · '.join(nav)}</p>")
    return "".join(out)


def run(request: Request, view: RunView, notice: str) -> str:
    """``/runs/{id}``: the task with its buttons, its payload and result, its run's tree (each task's
    attempts and steps) and the log lines of its latest attempts."""
    task, root, descendants, attempts, own = view.task, view.root, view.descendants, view.attempts, view.own
    task_id, root_id, logs, steps = task["id"], task["root_id"], view.logs, view.steps

    out = [f"<h1>Task {task_id} <small>{safe_name(task['kind'])}</small> {status_badge(task['status'])}</h1>",
           notice]  # fmt: skip
    actions = []
    if task["status"] in statuses.RETRYABLE:
        actions.append(task_action_form(request, task_id, "retry", "Retry"))
    if task["status"] in statuses.UNFINISHED:
        actions.append(task_action_form(request, task_id, "cancel", "Cancel"))
    if actions:
        out.append(f"<p class=actions>{' '.join(actions)}</p>")
    out.append(
        "<table id=task>"
        f"<tr><th>queue<td>{h(task['queue'])}<tr><th>status<td id=task-status>{h(task['status'])}"
        f"<tr><th>tries used<td>{task['attempt']} of {task['max_attempts']} (recoveries {task['recoveries']}"
        f" of {task['max_recoveries']})<tr><th>priority<td>{task['priority']}"
        f"<tr><th>enqueued<td>{ts(task['enqueued_at'])}<tr><th>run at<td>{ts(task['run_at'])}"
        f"<tr><th>started<td>{ts(task['started_at'])}<tr><th>finished<td>{ts(task['finished_at'])}"
        + (
            f"<tr><th>parent<td><a href='/runs/{task['parent_id']}'>{task['parent_id']}</a>"
            if task["parent_id"]
            else ""
        )
        + (f"<tr><th>run (root)<td><a href='/runs/{root_id}'>{root_id}</a>" if root_id != task_id else "")
        + (f"<tr><th>dedupe key<td>{h(task['dedupe_key'])}" if task["dedupe_key"] else "")
        + (f"<tr><th>concurrency key<td>{h(task['concurrency_key'])}" if task["concurrency_key"] else "")
        + (f"<tr><th>error<td class=err id=task-error>{h(task['error'])}" if task["error"] else "")
        + "</table>"
    )  # fmt: skip
    if view.waiting:
        out.append(_waiting_section(view.waiting))
    out.append(f"<h2>Payload</h2><pre>{json_block(task['payload'])}</pre>")
    if task["result"] is not None:
        out.append(f"<h2>Result</h2><pre id=result>{json_block(task['result'])}</pre>")

    out.append(f"<h2>Timeline</h2><div id=timeline>{timeline_svg(view.timeline, datetime.now(UTC))}</div>")

    # the tree of the run: root first, children under their parent
    by_parent: dict[int | None, list[dict[str, Any]]] = {}
    for d in descendants:
        by_parent.setdefault(d["parent_id"], []).append(d)

    def node(t: Mapping[str, Any]) -> str:
        tid = t["id"]
        current = " class=current" if tid == task_id else ""
        parts = [
            (
                f'<li{current} data-id="{tid}"><span class=line><a href="/runs/{tid}">{tid}</a> '
                f"{safe_name(t['kind'])} {status_badge(t['status'])} "
                f"tries used {t['attempt']}/{t['max_attempts']}</span>"
            )
        ]
        if attempts.get(tid) or steps.get(tid):
            parts.append(f"<details{' open' if tid == task_id else ''}><summary>attempts "
                         f"({len(attempts.get(tid, []))}), "
                         f"steps ({len(steps.get(tid, []))})</summary>")  # fmt: skip
            parts.append(_attempts_table(attempts.get(tid, []), view.attempt_label))
            if steps.get(tid):
                parts.append(_steps_table(steps[tid]))
            parts.append("</details>")
        kids = by_parent.get(tid, [])
        if kids:
            parts.append("<ul class=tree>" + "".join(node(k) for k in kids) + "</ul>")
        parts.append("</li>")
        return "".join(parts)

    out.append(f"<div class=cols><section id=run><h2>Run {root_id}</h2><ul class=tree id=tree>{node(root)}</ul>")
    if len(descendants) >= TREE_LIMIT:
        out.append(f"<p class=notice>Only the first {TREE_LIMIT} tasks of this run are shown.</p>")
    out.append(f"</section><section id=logs>{_logs_section(own, logs, view.attempt_label)}</section></div>")
    return "".join(out)


def schedules(request: Request, rows: Sequence[Mapping[str, Any]], notice: str) -> str:
    """``/schedules``: each schedule with its last fire and its Enable/Disable and Run now buttons."""
    out = ["<h1>Schedules</h1>", notice]
    if not rows:
        out.append("<p id=empty>No schedules.</p>")
        return "".join(out)
    out.append("<table id=schedules><tr><th>name<th>cron<th>timezone<th>kind<th>queue<th>enabled"
               "<th>next due<th>last fire<th>last error<th></tr>")  # fmt: skip
    for r in rows:
        name = r["name"]
        if r["last_fired_at"] is None:
            fired = "-"
        else:
            task = (f" <a href=\"/runs/{r['last_fire_task_id']}\">task {r['last_fire_task_id']}</a>"
                    if r["last_fire_task_id"] is not None else "")  # fmt: skip
            fired = f"{ts(r['last_fired_at'])}{' (manual)' if r['last_fire_manual'] else ''}{task}"
        error = (f"<span class=err>{h(r['last_error'])}</span> at {ts(r['last_error_at'])}"
                 if r["last_error"] else "-")  # fmt: skip
        toggle = (post_form(request, "/schedules/disable", {"name": name}, "Disable", "disable") if r["enabled"]
                  else post_form(request, "/schedules/enable", {"name": name}, "Enable", "enable"))  # fmt: skip
        run = post_form(request, "/schedules/run", {"name": name}, "Run now", "run")
        out.append(
            f'<tr data-schedule="{h(name)}" data-enabled="{"true" if r["enabled"] else "false"}"'
            f"{'' if r['enabled'] else ' class=off'}><td>{h(name)}<td><code>{h(r['cron'])}</code>"
            f"<td>{h(r['timezone'])}<td>{safe_name(r['kind'])}<td>{h(r['queue'])}"
            f"<td class=enabled>{'yes' if r['enabled'] else 'no'}"
            f"<td class=next>{ts(r['next_due_at']) if r['enabled'] else '-'}<td class=fired>{fired}"
            f"<td class=error>{error}<td class=controls>{toggle} {run}</tr>"
        )
    out.append("</table>")
    if len(rows) >= SCHEDULES_LIMIT:
        out.append(f"<p class=notice>Only the first {SCHEDULES_LIMIT} schedules are shown.</p>")
    return "".join(out)
