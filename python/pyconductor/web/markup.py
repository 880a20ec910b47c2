"""The dashboard's HTML: escaping and the formats of times, ages and names, the
page around every page's content (its style and its live-update script), and
the one-button forms of its actions (each with the CSRF field)."""

from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request

from pyconductor.logs import escape_text

__all__ = [
    "age",
    "content_digest",
    "h",
    "json_block",
    "layout",
    "post_form",
    "query_string",
    "safe_name",
    "status_badge",
    "task_action_form",
    "took",
    "ts",
]

REFRESH_MS = 2000  # the re-fetch while the event stream is down
DEBOUNCE_MS = 250  # at most one re-fetch per this, however many events come
SAFETY_MS = 15000  # a re-fetch this often even while live: claims and heartbeats publish nothing


def h(value: Any) -> str:
    """HTML-escaped text of value ('' for None)."""
    return "" if value is None else html.escape(str(value), quote=True)


def safe_name(value: Any) -> str:
    """A name (a kind, a worker's id or host) as a page shows it: HTML-escaped, and
    with control and format characters written as escapes (``\\n``, ``\\u202e``).
    The kind rule refuses them since v0.3.0, but tasks stored before may hold them,
    and a worker's id and host follow no rule; a bidi override must not reorder the
    page around it."""
    return "" if value is None else h(escape_text(str(value)))


def ts(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return h(value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z")
    return h(value)


def age(value: Any) -> str:
    if value is None:
        return "-"
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def took(start: Any, end: Any) -> str:
    if not isinstance(start, datetime) or not isinstance(end, datetime):
        return "-"
    return age(end - start)


def json_block(value: Any) -> str:
    return h(json.dumps(value, indent=2, sort_keys=True, default=str))


def status_badge(value: Any) -> str:
    return f'<span class="status s-{h(value)}">{h(value)}</span>'


def query_string(params: Mapping[str, Any]) -> str:
    clean = {k: v for k, v in params.items() if v not in (None, "")}
    return "?" + urlencode(clean) if clean else ""


CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}
header{background:#243447;color:#fff;padding:.5em 1em;display:flex;gap:1.5em;align-items:center}
header a{color:#fff;text-decoration:none}header b{margin-right:1em}
main{padding:1em}table{border-collapse:collapse;margin:.5em 0}
th,td{border-bottom:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}
.status{padding:0 .4em;border-radius:3px;background:#eee}
.s-succeeded{background:#d4f4d4}.s-failed,.s-dead,.s-timed_out{background:#f8d0d0}.s-expired{background:#f8e2bc}
.s-running{background:#d0e4f8}.s-waiting{background:#f4ecc8}.s-cancelled{background:#ddd}
pre{background:#f7f7f7;padding:.5em;overflow:auto;max-height:30em}
.notice{background:#fff6cc;padding:.5em;border:1px solid #e6d98c}
.err{color:#a00}form.inline{display:inline}ul.tree{list-style:none;padding-left:1.2em}
li.current>.line{font-weight:bold}button{cursor:pointer}
.cols{display:flex;gap:1.5em;align-items:flex-start;flex-wrap:wrap}
.cols>section{flex:1 1 30em;min-width:0;overflow-x:auto}
.paused{background:#f4d8a8;padding:0 .4em;border-radius:3px}tr.off td{color:#888}
table.log td{font:12px/1.3 ui-monospace,monospace}table.log td.msg{white-space:pre-wrap;word-break:break-word}
form#search{display:grid;grid-template-columns:repeat(auto-fill,minmax(14em,1fr));gap:.5em 1em;max-width:80em}
form#search label{display:flex;flex-direction:column;font-size:12px;color:#555}
form#search input,form#search select{font:inherit;min-width:0}form#search .go{align-self:end}
table#results{width:100%}table#results td{overflow-wrap:anywhere}
table#results td.payload{font:12px/1.3 ui-monospace,monospace;white-space:pre-wrap;max-width:40em}
#timeline{max-width:100%;overflow-x:auto}#timeline svg{min-width:40em}
.lv-warning{background:#fff6cc}.lv-error,.lv-critical{background:#f8d0d0}
.chart-row{display:grid;grid-template-columns:repeat(auto-fit,minmax(260px,1fr));gap:.8em 1.2em;max-width:1500px}
.chart-row svg{display:block;width:100%;height:auto}.chart-queue h3{margin:.8em 0 .2em}
ol.layers,ol.nodes{list-style:none;padding:0}ol.layers h2{font-size:13px;margin:.6em 0 .2em;color:#555}
ol.nodes{display:flex;flex-wrap:wrap;gap:.5em}
li.node{border:1px solid #ccc;border-radius:4px;padding:.3em .6em;max-width:20em;overflow-wrap:anywhere}
"""

# The live refresh: re-fetch the page's fragment when /events says something changed
# (at most every DEBOUNCE_MS), every REFRESH_MS while the stream is not live, and every
# SAFETY_MS regardless. #live's data-stream says which: live, polling or unavailable.
SCRIPT = """
(function(){
  var el=document.getElementById('live'); if(!el) return;
  var src=el.getAttribute('data-src'), events=el.getAttribute('data-events');
  var digest=el.getAttribute('data-digest')||'', busy=false, again=false, stale=false, lastAt=0, timer=null,
      live=false, count=0;
  function state(s){ live=(s==='live'); el.setAttribute('data-stream', s); }
  function load(){
    if(document.hidden){ stale=true; return; }
    if(busy){ again=true; return; }
    busy=true; lastAt=Date.now();
    fetch(src,{credentials:'same-origin',headers:{'X-Conductor-Digest':digest}}).then(function(r){
      if(!r.ok) throw new Error(r.status);
      var d=r.headers.get('X-Conductor-Digest')||'';
      return r.status===204 ? null : r.text().then(function(t){ return [d,t]; });
    }).then(function(got){
      if(got && got[0]!==digest){ digest=got[0]; el.innerHTML=got[1]; }
      el.setAttribute('data-refreshes', String(++count));
    }).catch(function(){}).then(function(){ busy=false; if(again){ again=false; soon(); } });
  }
  function soon(){
    if(timer) return;
    timer=setTimeout(function(){ timer=null; load(); }, Math.max(0, lastAt+%(debounce)d-Date.now()));
  }
  function connect(){
    if(!events || !window.EventSource){ state('polling'); return; }
    var es=new EventSource(events);
    es.addEventListener('ready', function(){ state('live'); soon(); });
    es.addEventListener('down', function(){ state('polling'); });
    es.addEventListener('unavailable', function(){ es.close(); state('unavailable'); });
    es.onmessage=function(){ soon(); };
    es.onerror=function(){
      if(el.getAttribute('data-stream')==='unavailable') return;
      state('polling'); if(es.readyState===2) setTimeout(connect, %(reconnect)d);
    };
  }
  state('polling'); lastAt=Date.now(); connect();
  document.addEventListener('visibilitychange', function(){ if(!document.hidden && stale){ stale=false; soon(); } });
  setInterval(function(){
    var age=Date.now()-lastAt;
    if((!live && age>=%(refresh)d-50) || age>=%(safety)d) soon();
  }, %(refresh)d);
})();
"""


HEADER = ("<header><b>Conductor</b><a href=/>Queues</a><a href=/runs>Runs</a>"
          "<a href='/runs?status=failed'>Failed</a><a href='/runs?status=running'>Running</a>"
          "<a href=/search>Search</a><a href=/schedules>Schedules</a></header>")  # fmt: skip


def content_digest(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()[:32]


def layout(request: Request, title: str, content: str, *, live: bool = True, digest: str = "",
           refresh: bool = True) -> str:  # fmt: skip
    """A whole page around ``content``, which the live script re-fetches (when
    ``/events`` says something changed, with ``live``; else every 2 s). Without
    ``refresh``, the page as served (a form a person fills in is not redrawn under them)."""
    if not refresh:
        return (
            "<!doctype html><html lang=en><head><meta charset=utf-8>"
            f"<title>{h(title)} · Conductor</title><style>{CSS}</style></head><body>{HEADER}"
            f"<main>{content}</main></body></html>"
        )
    nonce = request.state.nonce
    src = request.url.path + query_string({**dict(request.query_params), "fragment": "1"})
    events = ' data-events="/events"' if live else ""
    script = SCRIPT % {"debounce": DEBOUNCE_MS, "refresh": REFRESH_MS, "safety": SAFETY_MS,
                       "reconnect": 5 * REFRESH_MS}  # fmt: skip
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{h(title)} · Conductor</title><style>{CSS}</style></head><body>"
        f"{HEADER}"
        f'<main><div id=live data-src="{h(src)}" data-digest="{h(digest)}"{events}>{content}</div></main>'
        f"<script nonce={nonce}>{script}</script></body></html>"
    )


def task_action_form(request: Request, task_id: int, action: str, label: str) -> str:
    return (
        f'<form class=inline method=post action="/runs/{task_id}/{action}">'
        f'<input type=hidden name=csrf value="{h(request.state.csrf)}">'
        f'<button type=submit name=action value={action} id="{action}-{task_id}">{h(label)}</button></form>'
    )


def post_form(request: Request, action: str, fields: Mapping[str, str], label: str, value: str) -> str:
    """A one-button form POSTing ``fields`` and the CSRF value to ``action``."""
    hidden = "".join(f'<input type=hidden name="{h(k)}" value="{h(v)}">' for k, v in fields.items())
    return (
        f'<form class=inline method=post action="{h(action)}">'
        f'<input type=hidden name=csrf value="{h(request.state.csrf)}">{hidden}'
        f"<button type=submit name=action value={h(value)}>{h(label)}</button></form>"
    )
