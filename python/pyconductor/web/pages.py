"""The dashboard's pages as HTML: each takes what :mod:`pyconductor.web.reads`
read and returns the page's content (the part the live script re-fetches),
every value escaped (:mod:`pyconductor.web.markup`)."""

from __future__ import annotations

import json
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
    BULK_ACTIONS,
    RANGES,
    SCHEDULES_LIMIT,
    SEARCH_SCAN,
    TIME_FIELDS,
    TREE_LIMIT,
    BulkFilter,
    QueuesView,
    RunsView,
    RunView,
    SearchView,
)
from pyconductor.web.timeline import timeline_svg

__all__ = [
    "PAGE_SIZE",
    "SEARCH_FIELDS",
    "bulk_confirm",
    "bulk_query",
    "bulk_words",
    "form_time",
    "notice_line",
    "parse_bulk",
    "queues",
    "run",
    "runs",
    "schedules",
    "search",
]

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
WAITING_REASONS = ("queue_paused", "due_later", "no_worker", "code_version", "rate_limited", "queue_cap",
                   "concurrency_key", "ready")  # fmt: skip


def _dedupe_options(task: Mapping[str, Any]) -> str:
    """What a task's dedupe options hold (docs/uniqueness.md), after its key on the task page."""
    held = statuses.status_list(task.get("dedupe_states"))
    out = ""
    if held:
        until = task.get("dedupe_until")
        end = f" until {ts(until)}" if isinstance(until, datetime) and until.year < 9999 else " until pruned"
        out += f" (held while {h(', '.join(held))}{end})"
    if task.get("debounce_until") is not None:
        latest = task["debounce_until"]
        bound = f"at the latest at {ts(latest)}" if isinstance(latest, datetime) and latest.year < 9999 else "no latest"
        out += f"<tr><th>debounce<td>runs once quiet, {bound}"
    return out


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
    """``/``: each queue's stats() with its Pause or Resume button and its cap (running / max_running),
    the charts over time (``?range=hour`` or ``day``), why queued tasks wait, the live workers, the leader
    leases."""
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

        def running(r: Mapping[str, Any]) -> str:
            cap = view.caps.get(r["queue"])
            if cap is None:
                return f"<td class=n>{r['running']}"
            most = int(cap["max_running"])
            return (f'<td class=n data-cap="{most}" title="at most {most} running across the fleet '
                    f'(set_queue_limit)">{r["running"]} / {most}')  # fmt: skip

        for r in stats:
            q = h(r["queue"])
            rate = "-" if r["failure_rate"] is None else f"{float(r['failure_rate']) * 100:.1f}%"
            is_paused = bool(r.get("paused")) or r["queue"] in paused
            out.append(
                f'<tr data-queue="{q}"{" data-paused" if is_paused else ""}>'
                f'<td><a href="/runs{h(query_string({"queue": r["queue"]}))}">{q}</a>'
                f"<td class=n>{r['ready']}<td class=n>{r['scheduled']}"
                + running(r)
                + f"<td class=n>{r['waiting']}"
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


# -- the filter of /runs and of the bulk actions -------------------------------------


def _time_text(value: datetime | None) -> str | None:
    """A time as the filter form shows and takes it: ISO 8601 in UTC ('2026-12-06 04:00:00Z')."""
    return None if value is None else value.astimezone(UTC).isoformat(sep=" ").replace("+00:00", "Z")


def form_time(name: str, text: str | None) -> datetime | None:
    """A time typed into a form (the runs filter, the search): ISO 8601 (``2031-01-01 09:00``,
    ``...T09:00:00+02:00``), UTC when it names no offset; None when empty. ValueError naming the
    field (``name``) when it is not a time."""
    if not text or not text.strip():
        return None
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{name} is a time like 2026-12-06 04:00 (UTC unless it names an offset)") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def parse_bulk(params: Mapping[str, str]) -> BulkFilter:
    """The filter a request's query or form gives (the fields of /runs' filter form: status, kind,
    queue, time_of, from, until, error; empty means any). ValueError, saying what is wrong, for an
    unknown status or time field or a time that does not parse."""
    status = params.get("status") or None
    if status is not None and status not in statuses.ALL:
        raise ValueError(f"unknown status {status!r}")
    time_of = params.get("time_of") or TIME_FIELDS[0]
    if time_of not in TIME_FIELDS:
        raise ValueError(f"time_of is one of {', '.join(TIME_FIELDS)}")
    return BulkFilter(
        status=status, kind=params.get("kind") or None, queue=params.get("queue") or None, time_of=time_of,
        start=form_time("from", params.get("from")), end=form_time("until", params.get("until")),
        error=params.get("error") or None,
    )  # fmt: skip


def bulk_query(bulk: BulkFilter) -> dict[str, str | None]:
    """The query parameters (and form fields) that :func:`parse_bulk` reads back as ``bulk``."""
    timed = bulk.start is not None or bulk.end is not None
    return {
        "status": bulk.status, "kind": bulk.kind, "queue": bulk.queue,
        "time_of": bulk.time_of if timed and bulk.time_of != TIME_FIELDS[0] else None,
        "from": _time_text(bulk.start), "until": _time_text(bulk.end), "error": bulk.error,
    }  # fmt: skip


def bulk_words(action: str, bulk: BulkFilter) -> str:
    """The filter in words, as HTML (every value escaped): 'tasks with status failed, kind ...'."""
    if bulk.status:
        parts = [f"tasks with status {h(bulk.status)}"]
    else:
        parts = [f"tasks of any status {action} takes ({h(', '.join(BULK_ACTIONS[action]))})"]
    if bulk.kind is not None:
        parts.append(f"of kind <code class=kind>{safe_name(bulk.kind)}</code>")
    if bulk.queue is not None:
        parts.append(f"on queue <code class=queue>{safe_name(bulk.queue)}</code>")
    if bulk.start is not None and bulk.end is not None:
        parts.append(f"{h(bulk.time_of)} from {ts(bulk.start)} until (before) {ts(bulk.end)}")
    elif bulk.start is not None:
        parts.append(f"{h(bulk.time_of)} at or after {ts(bulk.start)}")
    elif bulk.end is not None:
        parts.append(f"{h(bulk.time_of)} before {ts(bulk.end)}")
    if bulk.error is not None:
        parts.append(f"whose last error contains <code class=error-text>{safe_name(bulk.error)}</code> (ignoring case)")
    return ", ".join(parts)


def _bulk_links(bulk: BulkFilter) -> str:
    """The links to the bulk actions' confirmation pages (GET: nothing changes until confirmed)."""
    links = [
        f'<a id=bulk-{action} href="/bulk/{action}{h(query_string(bulk_query(bulk)))}">'
        f"{action.capitalize()} all matching…</a>"
        for action in BULK_ACTIONS
        if bulk.takes(action)
    ]
    if not links:
        return ""
    note = (
        "<p class=note id=bulk-note>The list below is filtered by status, kind and queue only; the time range "
        "and error text narrow the bulk actions, whose confirmation counts the tasks they match.</p>"
        if bulk.start is not None or bulk.end is not None or bulk.error is not None
        else ""
    )
    return f"<p class=actions id=bulk>{' '.join(links)}</p>{note}"


def runs(view: RunsView, *, bulk: BulkFilter, before: int | None, limit: int, notice: str = "") -> str:
    """``/runs``: the filters, the bulk actions a filter allows, one page of tasks (by status, kind
    and queue), and the links to the newest and the older page."""
    rows, more = view.rows, view.more
    status = bulk.status
    options = "".join(
        f'<option value="{s}"{" selected" if s == status else ""}>{s or "any status"}</option>'
        for s in ("", *statuses.ALL)
    )
    time_options = "".join(
        f'<option value="{f}"{" selected" if f == bulk.time_of else ""}>{f}</option>' for f in TIME_FIELDS
    )
    out = [
        "<h1>Runs</h1>",
        notice,
        (
            "<form id=filters method=get action=/runs>"
            f"<select name=status>{options}</select> "
            f'<input name=kind placeholder=kind value="{h(bulk.kind)}"> '
            f'<input name=queue placeholder=queue value="{h(bulk.queue)}"> '
            f'<select name=time_of title="which time the range bounds">{time_options}</select> '
            f'<input name=from size=26 placeholder="from (UTC)" value="{h(_time_text(bulk.start))}"> '
            f'<input name=until size=26 placeholder="until (UTC)" value="{h(_time_text(bulk.end))}"> '
            f'<input name=error placeholder="error contains" value="{h(bulk.error)}"> '
            f'<input type=hidden name=limit value="{limit}"><button type=submit>Filter</button></form>'
        ),
        _bulk_links(bulk),
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
    filters = {**bulk_query(bulk), "limit": limit if limit != PAGE_SIZE else None}
    if before is not None:
        nav.append(f'<a id=newest href="/runs{h(query_string(filters))}">« newest</a>')
    if more:
        nav.append(f'<a id=older href="/runs{h(query_string({**filters, "before": rows[-1]["id"]}))}">older »</a>')
    out.append(f"<p class=pager>{' · '.join(nav)}</p>")
    return "".join(out)


def bulk_confirm(request: Request, action: str, bulk: BulkFilter, matching: int, sample: Sequence[int],
                 refusal: str = "") -> str:  # fmt: skip
    """``/bulk/{action}``: what the action would take (the filter in words, how many tasks match now
    and the newest of them, linked) and the form that confirms it, a POST carrying the CSRF value,
    the filter and the count shown as ``expected``; or why it cannot (``refusal``)."""
    verb = action.capitalize()
    back = f'<a id=back href="/runs{h(query_string(bulk_query(bulk)))}">Back to the runs (nothing changes)</a>'
    out = [f"<h1>{verb} tasks by filter</h1>", f"<p id=filter-words>{verb} {bulk_words(action, bulk)}.</p>"]
    if refusal:
        out.append(f"<p class=err id=refusal>Could not {h(action)}: {h(refusal)}</p><p>{back}</p>")
        return "".join(out)
    if matching == 0:
        out.append(f"<p id=matching data-matching=0>No task matches now: nothing to {h(action)}.</p><p>{back}</p>")
        return "".join(out)
    tasks = "1 task matches" if matching == 1 else f"{matching} tasks match"
    newest = f"the newest {len(sample)} of them" if len(sample) < matching else "these"
    out.append(f"<p id=matching data-matching={matching}>{tasks} now; {newest}:</p><ul id=sample>")
    out.extend(f'<li><a href="/runs/{int(i)}" data-id="{int(i)}">task {int(i)}</a></li>' for i in sample)
    out.append("</ul>")
    if action == "cancel":
        out.append("<p>Cancelling a task cancels its unfinished descendants too; running ones stop at their "
                   "next heartbeat. A cancelled task is never retried on its own.</p>")  # fmt: skip
    else:
        out.append("<p>Each is queued again with fresh counts, its saved steps kept.</p>")
    hidden = "".join(
        f'<input type=hidden name="{h(k)}" value="{h(v)}">' for k, v in bulk_query(bulk).items() if v is not None
    )
    out.append(
        f'<form id=confirm method=post action="/bulk/{h(action)}">'
        f'<input type=hidden name=csrf value="{h(request.state.csrf)}">{hidden}'
        f'<input type=hidden name=expected value="{matching}">'
        f"<button type=submit id=confirm-button>{verb} all {matching} matching</button> {back}</form>"
    )
    return "".join(out)


# the search form's fields, in its order: (query parameter, label, placeholder); status is a select
SEARCH_FIELDS = (
    ("kind", "kind", "shop.send_receipt"),
    ("queue", "queue", "default"),
    ("status", "status", ""),
    ("dedupe_key", "dedupe key", ""),
    ("payload", "payload contains (JSON object)", '{"order_id": 42}'),
    ("enqueued_after", "enqueued from (UTC)", "2031-01-01 09:00"),
    ("enqueued_before", "enqueued before (UTC)", ""),
    ("finished_after", "finished from (UTC)", ""),
    ("finished_before", "finished before (UTC)", ""),
)


def search(view: SearchView | None, *, values: Mapping[str, str], error: str | None, before: int | None,
           limit: int, scan: int = SEARCH_SCAN) -> str:  # fmt: skip
    """``/search``: the form (``values``: what was typed, shown back as typed), then one page of
    matches newest first, with "older" or, when the page's scan was cut short, "search further"."""
    out = ["<h1>Search</h1><form id=search method=get action=/search>"]
    for name, label, placeholder in SEARCH_FIELDS:
        value = values.get(name, "")
        if name == "status":
            options = "".join(f'<option value="{s}"{" selected" if s == value else ""}>{s or "any status"}</option>'
                              for s in ("", *statuses.ALL))  # fmt: skip
            field = f"<select name=status id=f-status>{options}</select>"
        else:
            field = f'<input name={name} id=f-{name} value="{h(value)}" placeholder="{h(placeholder)}">'
        out.append(f"<label for=f-{name}>{h(label)}{field}</label>")
    out.append(f'<input type=hidden name=limit value="{limit}">'
               + (f'<input type=hidden name=scan value="{scan}">' if scan != SEARCH_SCAN else "")
               + "<button type=submit class=go id=search-go>Search</button></form>")  # fmt: skip
    if error:
        out.append(f"<p class=err id=search-error>{h(error)}</p>")
    if view is None:
        return "".join(out)
    if not view.rows:
        out.append("<p id=empty>No tasks match" + (" in the tasks examined." if view.cut_short else ".") + "</p>")
    else:
        out.append("<table id=results><tr><th>id<th>kind<th>queue<th>status<th>dedupe key<th>enqueued"
                   "<th>finished<th>payload</tr>")  # fmt: skip
        for t in view.rows:
            payload = json.dumps(t["payload"], ensure_ascii=False, sort_keys=True)
            out.append(
                f'<tr data-id="{t["id"]}" data-status="{h(t["status"])}">'
                f'<td><a href="/runs/{t["id"]}">{t["id"]}</a>'
                f"<td>{safe_name(t['kind'])}<td>{h(t['queue'])}<td>{status_badge(t['status'])}"
                f"<td>{h(t['dedupe_key'])}<td>{ts(t['enqueued_at'])}<td>{ts(t['finished_at'])}"
                f"<td class=payload>{h(payload[:300] + ('…' if len(payload) > 300 else ''))}</tr>"
            )
        out.append("</table>")
    params = {**values, "limit": limit if limit != PAGE_SIZE else None, "scan": scan if scan != SEARCH_SCAN else None}
    nav = []
    if before is not None:
        nav.append(f'<a id=newest href="/search{h(query_string(params))}">« newest</a>')
    if view.next_before is not None:
        further = h(query_string({**params, "before": view.next_before}))
        if view.cut_short:
            out.append(f"<p class=notice id=cut-short>This page examined {view.scanned} tasks, down to task "
                       f"{view.next_before}, and stopped there: older tasks may match. "
                       f'<a id=search-further href="/search{further}">Search further »</a></p>')  # fmt: skip
        else:
            nav.append(f'<a id=older href="/search{further}">older »</a>')
    out.append(f"<p class=pager>{' · '.join(nav)}</p>")
    return "".join(out)


# rewind and fork (docs/workflows.md): a finished run's step to start from, then a confirmation
STEP_ACTIONS = {"rewind": ("Rewind from", "Rewind"), "fork": ("Fork from", "Fork")}


def _step_action_form(task_id: int, action: str, steps: Sequence[Mapping[str, Any]]) -> str:
    """A GET form choosing one of the task's steps (in the order saved) for ``action``: it only
    opens the confirmation page (:func:`step_confirm`), which POSTs."""
    label = STEP_ACTIONS[action][0]
    options = "".join(f'<option value="{h(s["name"])}">{h(s["name"])}</option>' for s in steps)
    return (f'<form class=inline method=get action="/runs/{task_id}/{action}">'
            f'<select name=step id="{action}-step-{task_id}">{options}</select>'
            f'<button type=submit id="{action}-{task_id}">{h(label)}…</button></form>')  # fmt: skip


def step_confirm(request: Request, task_id: int, action: str, step: str, steps: Sequence[str]) -> str:
    """``GET /runs/{id}/rewind|fork?step=``: what the action would do (the steps that run again,
    in the order saved) and the form that confirms it, a POST carrying the CSRF value and the step;
    it changes nothing."""
    verb = STEP_ACTIONS[action][1]
    back = f'<a id=back href="/runs/{task_id}">Back to task {task_id} (nothing changes)</a>'
    out = [f"<h1>{verb} task {task_id} from step {h(step)}</h1>"]
    if step not in steps:
        out.append(f"<p class=err id=refusal>Task {task_id} has no step {h(step)}.</p><p>{back}</p>")
        return "".join(out)
    at = steps.index(step)
    kept, again = steps[:at], steps[at:]
    if action == "rewind":
        out.append("<p>The run is queued again with fresh counts. Kept: "
                   f"<span id=kept>{h(', '.join(kept)) or 'none'}</span>; run again: "
                   f"<span id=again>{h(', '.join(again))}</span>. A rewound spawn's unfinished child is "
                   "cancelled, and the replay spawns a new one.</p>")  # fmt: skip
    else:
        out.append("<p>A new task copies this one (kind, payload, queue, policy) with the steps "
                   f"<span id=kept>{h(', '.join(kept)) or 'none'}</span>; it runs "
                   f"<span id=again>{h(', '.join(again))}</span>. This task does not change.</p>")  # fmt: skip
    out.append(f"<p id=confirm>{post_form(request, f'/runs/{task_id}/{action}', {'step': step}, verb, action)}</p>")
    out.append(f"<p>{back}</p>")
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
    if task["status"] not in statuses.UNFINISHED and steps.get(task_id):
        actions.extend(_step_action_form(task_id, action, steps[task_id]) for action in STEP_ACTIONS)
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
        + (
            f"<tr><th>forked from<td id=forked-from><a href='/runs/{int(task['forked_from'])}'>"
            f"{int(task['forked_from'])}</a> at step {h(task['forked_at_step'])}"
            if task.get("forked_from") is not None
            else ""
        )
        + (f"<tr><th>code version<td id=code-version>{h(task['code_version'])}" if task.get("code_version") else "")
        + (f"<tr><th>graph<td><a id=graph-link href='/graphs/{view.graph['graph_id']}'>"
           f"graph {view.graph['graph_id']}</a> (member {h(view.graph['name'])})" if view.graph else "")
        + (f"<tr><th>dedupe key<td>{h(task['dedupe_key'])}{_dedupe_options(task)}" if task["dedupe_key"] else "")
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
