"""Every SQL statement pyconductor sends, one line each but migrate's registry
and lock holder (``enqueue`` builds its call from the parameters given, so the
database's defaults apply to the rest).

Each is a call of one function of the ``conductor`` schema in named notation,
with named placeholders; no query logic lives anywhere else in the package.
The functions' contracts are their ``COMMENT ON FUNCTION`` (``\\df+ conductor.*``).
The few that are not such a call are the driver's own: the schema release
check, a probe's transaction-local setting, and ``pyconductor migrate``'s
registry, lock and role reset (the changes it applies are the files
``sqitch.plan`` names). python/tests/unit/test_queries_home.py fails for a
statement written in any other module.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

# -- client ------------------------------------------------------------------------
# A key left out of a task (a JSON object for enqueue_many, a parameter not named
# for enqueue) takes the kind's configuration (conductor.kinds), else the engine's
# default (queue, priority, max_attempts, timeout, ...), so Python decides none.
ENQUEUE_MANY = "select id from conductor.enqueue_many(tasks => %(tasks)s::jsonb) as id"
# conductor.enqueue's parameters in its order, each with the cast its value needs
ENQUEUE_PARAMETERS = {
    "kind": "", "payload": "::jsonb", "queue": "", "priority": "::integer", "run_at": "::timestamptz",
    "max_attempts": "::integer", "dedupe_key": "", "concurrency_key": "", "parent_id": "::bigint",
    "max_recoveries": "::integer", "backoff_base": "::interval", "backoff_factor": "::float8",
    "backoff_max": "::interval", "timeout": "::interval", "traceparent": "", "concurrency_limit": "::integer",
    "dedupe_window": "::interval", "dedupe_states": "::text[]", "on_duplicate": "", "debounce": "::interval",
    "debounce_max": "::interval",
    "expires_in": "::interval", "rate_key": "",
}  # fmt: skip


@lru_cache(maxsize=128)
def _enqueue(names: frozenset[str]) -> str:
    args = ", ".join(f"{name} => %({name})s{cast}" for name, cast in ENQUEUE_PARAMETERS.items() if name in names)
    return f"select conductor.enqueue({args}) as id"


def enqueue(names: Iterable[str]) -> str:
    """``conductor.enqueue`` naming only the parameters in ``names``."""
    return _enqueue(frozenset(names))


GET_TASK = "select * from conductor.get_task(task_id => %(task_id)s)"
# in the order they were saved (steps.seq): the order rewind and fork read
TASK_STEPS = "select name, result, saved_at from conductor.steps where task_id = %(task_id)s order by seq"
TASK_CHILDREN = "select id, status, kind, queue from conductor.tasks where parent_id = %(task_id)s order by id limit %(limit)s"  # fmt: skip
TASK_CHILDREN_COUNT = "select count(*) as n from conductor.tasks where parent_id = %(task_id)s"
TASK_LOGS = "select attempt_id, lines, dropped from conductor.attempt_logs where attempt_id = any(%(attempt_ids)s::bigint[])"  # fmt: skip
CANCEL = "select conductor.cancel(task_id => %(task_id)s)"
# graphs and batches (issue 31, docs/graphs.md)
ENQUEUE_GRAPH = (
    "select graph_id, name, task_id, role from conductor.enqueue_graph("
    "tasks => %(tasks)s::jsonb, on_complete => %(on_complete)s::jsonb, on_failure => %(on_failure)s::jsonb)"
)
GRAPH = "select * from conductor.graph(graph_id => %(graph_id)s)"
CANCEL_GRAPH = "select conductor.cancel_graph(graph_id => %(graph_id)s) as cancelled"
DEPENDENCY_RESULTS = "select conductor.dependency_results(task_id => %(task_id)s) as results"
RETRY = "select conductor.retry(task_id => %(task_id)s)"
RETRY_RUN = "select conductor.retry(task_id => %(task_id)s, keep_steps => %(keep_steps)s) as retry"
# rewind and fork (docs/workflows.md): the steps saved before from_step are kept, or carried into a copy
REWIND = "select conductor.rewind(task_id => %(task_id)s, from_step => %(from_step)s) as task_id"
FORK = "select conductor.fork(task_id => %(task_id)s, from_step => %(from_step)s) as task_id"
# queries: the state a run's handler published last (ctx.publish_state), and when
RUN_STATE = "select state, set_at from conductor.run_state(task_id => %(task_id)s)"
# updates with a reply (docs/workflows.md): send one to a run, read the run's answer
SEND_UPDATE = (
    "select conductor.send_update(task_id => %(task_id)s, name => %(name)s, payload => %(payload)s::jsonb) as update_id"
)
UPDATE_REPLY = "select task_id, name, reply, replied_at from conductor.update_reply(update_id => %(update_id)s)"
EMIT_EVENT = "select conductor.emit_event(name => %(name)s, payload => %(payload)s::jsonb) as woken"
LISTEN_DONE = "listen conductor_done"
# result(): this session waits for the task's end (conductor_done names it), and reads it as get_task does
WATCH = "select * from conductor.watch(task_id => %(task_id)s)"
UNWATCH = "select conductor.unwatch(task_id => %(task_id)s)"

# -- worker ------------------------------------------------------------------------
# kinds: what the worker claims (NULL: every kind), so the reaper tells a kind nobody serves from one in a deploy
REGISTER_WORKER = "select conductor.register_worker(worker_id => %(worker_id)s, host => %(host)s, pid => %(pid)s, queues => %(queues)s, concurrency => %(concurrency)s, roles => %(roles)s, version => %(version)s, metadata => %(metadata)s::jsonb, kinds => %(kinds)s)"
# a kind's whole row, every one of registry.KIND_OPTIONS named (Task.configuration() gives them)
CONFIGURE_KIND = "select conductor.configure_kind(kind => %(kind)s, queue => %(queue)s, priority => %(priority)s, concurrency_key => %(concurrency_key)s, max_attempts => %(max_attempts)s, max_recoveries => %(max_recoveries)s, backoff_base => %(backoff_base)s::interval, backoff_factor => %(backoff_factor)s, backoff_max => %(backoff_max)s::interval, timeout => %(timeout)s::interval, retain_succeeded => %(retain_succeeded)s::interval, retain_failed => %(retain_failed)s::interval, concurrency_limit => %(concurrency_limit)s::integer, expires_in => %(expires_in)s::interval)"
DEREGISTER_WORKER = "select conductor.deregister_worker(worker_id => %(worker_id)s)"
# the columns the worker reads (enqueued_at would be a timestamp to parse per task for
# nothing; run_at tells a claim after a poll whether a notification was missed: see
# pyconductor.producer); kinds: only these (NULL: every kind); timeout: the attempt's limit;
# traceparent: the enqueuer's trace context (pyconductor.tracing)
# code_version, step_order: the run's recorded code version and its steps' names in saved order
# (the replay check, pyconductor.context)
CLAIM = "select task_id, attempt_id, attempt, kind, queue, payload, priority, max_attempts, recoveries, parent_id, root_id, lease_expires_at, steps, timeout, run_at, traceparent, code_version, step_order from conductor.claim(worker_id => %(worker_id)s, queues => %(queues)s, max_tasks => %(max_tasks)s, lease => %(lease)s, kinds => %(kinds)s, durable => false)"
# a worker that declares its code version (docs/versioning.md): [its version, the older ones it replays]
CLAIM_VERSIONED = CLAIM.removesuffix(")") + ", code_versions => %(code_versions)s)"
HEARTBEAT = "select * from conductor.heartbeat(worker_id => %(worker_id)s, attempt_ids => %(attempt_ids)s::bigint[], lease => %(lease)s)"
COMPLETE_MANY = (
    "select * from conductor.complete_many(attempt_ids => %(attempt_ids)s::bigint[], results => %(results)s::jsonb[])"
)
FAIL = "select conductor.fail(attempt_id => %(attempt_id)s, error => %(error)s, retry_at => %(retry_at)s, traceback => %(traceback)s, unknown_kind => %(unknown_kind)s, retryable => %(retryable)s, timed_out => %(timed_out)s)::text"
RELEASE = "select conductor.release(attempt_id => %(attempt_id)s)"
REAP = "select conductor.reap()"
# the sleeper protocol (see pyconductor.producer): mark the worker idle on its queues (NULL: every
# queue), so enqueues notify it; settled: no enqueue that may have missed the mark is in flight
SLEEP = "select conductor.sleep(worker_id => %(worker_id)s, queues => %(queues)s) as settled"
WAKE = "select conductor.wake(worker_id => %(worker_id)s)"
# seconds until the earliest future run_at of a queued task on the worker's queues (NULL: none),
# so an idle worker sleeps until then rather than until its poll
WAKE_IN_DUE = "select extract(epoch from conductor.next_due(queues => %(queues)s, kinds => %(kinds)s) - conductor.now())::float8 as due_in"
# reap, what it did by kind (leases_lost: the reclaims), then how long until reap next has
# something to do (seconds; NULL: nothing waits or runs)
REAP_NEXT = "select r.*, extract(epoch from conductor.next_wake() - conductor.now())::float8 as wake_in from conductor.reap_report() r"

# -- durable runs (TaskContext) ------------------------------------------------------
SAVE_STEP = (
    "select conductor.save_step(attempt_id => %(attempt_id)s, name => %(name)s, result => %(result)s::jsonb) as result"
)
SET_RUN_STATE = "select conductor.set_run_state(attempt_id => %(attempt_id)s, state => %(state)s::jsonb) as set_at"
WAIT_UPDATE = (
    "select state, result from conductor.wait_update(attempt_id => %(attempt_id)s, step => %(step)s, "
    "name => %(name)s, timeout => %(timeout)s::interval)"
)
REPLY_UPDATE = "select conductor.reply_update(attempt_id => %(attempt_id)s, update_id => %(update_id)s, reply => %(reply)s::jsonb) as reply"
# a handler's own transaction (pyconductor.transaction): the completion, and the server
# session's start, which names it should the connection drop during the COMMIT
COMPLETE_IN_TRANSACTION = (
    "select conductor.complete_in_transaction(attempt_id => %(attempt_id)s, result => %(result)s::jsonb), "
    "(select a.backend_start from pg_catalog.pg_stat_activity a where a.pid = pg_catalog.pg_backend_pid()) "
    "as backend_start"
)
# that session ended (waiting up to 10 s) before the attempt's outcome is read
END_SESSION = (
    "select pg_catalog.pg_terminate_backend(a.pid, 10000) as ended from pg_catalog.pg_stat_activity a "
    "where a.pid = %(pid)s and a.backend_start = %(started)s"
)
ATTEMPT_OUTCOME = (
    "select outcome from conductor.list_attempts(task_ids => array[%(task_id)s]::bigint[]) where id = %(attempt_id)s"
)
SUSPEND = "select * from conductor.suspend(attempt_id => %(attempt_id)s, step => %(step)s, wait_for => %(wait_for)s, event => %(event)s, duration => %(duration)s::interval, timeout => %(timeout)s::interval)"
# {options}: ", name => %(name)s" for each option given (SPAWN_OPTIONS), so the others take spawn's defaults
SPAWN = "select conductor.spawn(attempt_id => %(attempt_id)s, step => %(step)s, kind => %(kind)s, payload => %(payload)s::jsonb{options}) as spawn"
SPAWN_OPTIONS = {
    "queue": "queue => %(queue)s", "priority": "priority => %(priority)s",
    "run_at": "run_at => %(run_at)s::timestamptz", "max_attempts": "max_attempts => %(max_attempts)s",
    "dedupe_key": "dedupe_key => %(dedupe_key)s", "concurrency_key": "concurrency_key => %(concurrency_key)s",
    "max_recoveries": "max_recoveries => %(max_recoveries)s", "traceparent": "traceparent => %(traceparent)s",
    "concurrency_limit": "concurrency_limit => %(concurrency_limit)s::integer",
    "dedupe_window": "dedupe_window => %(dedupe_window)s::interval",
    "dedupe_states": "dedupe_states => %(dedupe_states)s::text[]", "on_duplicate": "on_duplicate => %(on_duplicate)s",
    "debounce": "debounce => %(debounce)s::interval", "debounce_max": "debounce_max => %(debounce_max)s::interval",
    "expires_in": "expires_in => %(expires_in)s::interval", "rate_key": "rate_key => %(rate_key)s",
}  # fmt: skip
LISTEN = "listen conductor"
PROBE = "select 1"
# the handler log lines one attempt captured (pyconductor.tasklog; the reporter sends them)
SAVE_LOG = "select conductor.save_log(attempt_id => %(attempt_id)s::bigint, lines => %(lines)s::jsonb, dropped => %(dropped)s::integer)"
# every captured attempt of a batch in one statement (the reporter's form of SAVE_LOG)
SAVE_LOGS = ("select count(conductor.save_log(attempt_id => u.attempt_id, lines => u.lines, dropped => u.dropped)) "
             "from unnest(%(attempt_ids)s::bigint[], %(lines)s::jsonb[], %(dropped)s::integer[]) "
             "as u(attempt_id, lines, dropped)")  # fmt: skip
# appended to a report's call (fail, release): lock_timeout for this statement's transaction only
# (autocommit, and so behind a transaction-mode pooler too); the subquery is scanned before the call
BOUNDED_WAIT = " from (select pg_catalog.set_config('lock_timeout', %(lock_timeout)s, true)) as bound"

# -- event bus (pyconductor.bus) ------------------------------------------------------
# sent at the publisher's commit, when anyone subscribes to the topic (sent: whether so)
PUBLISH = "select conductor.publish(topic => %(topic)s, payload => %(payload)s::jsonb, origin => %(origin)s) as sent"
# a subscription listens first, then records its topics, so nothing published after subscribe() is lost
LISTEN_BUS = "listen conductor_bus"
SUBSCRIBE = "select conductor.subscribe(topics => %(topics)s::text[])"
UNSUBSCRIBE = "select conductor.unsubscribe()"
# a transaction-scoped lock on a name, held until its transaction ends (Conductor.exclusive)
EXCLUSIVE = "select conductor.exclusive(name => %(name)s)"

# -- leader leases (pyconductor.leadership: the scheduler, retention, singletons) ----
TRY_LEAD = "select conductor.try_lead(name => %(name)s, holder => %(holder)s, lease => %(lease)s::interval) as leading"
RELEASE_LEAD = "select conductor.release_lead(name => %(name)s, holder => %(holder)s) as released"

# -- scheduler ---------------------------------------------------------------------
TICK = "select * from conductor.tick(grace => %(grace)s::interval)"
NEXT_DUE = "select min(next_due_at) as next_due_at, conductor.now() as now from conductor.schedules where enabled"
CREATE_SCHEDULE = "select * from conductor.create_schedule(name => %(name)s, cron => %(cron)s, kind => %(kind)s, payload => %(payload)s::jsonb, queue => %(queue)s, timezone => %(timezone)s, priority => %(priority)s, max_attempts => %(max_attempts)s, dedupe_key => %(dedupe_key)s, concurrency_key => %(concurrency_key)s, catch_up => %(catch_up)s, catch_up_limit => %(catch_up_limit)s, enabled => %(enabled)s, replace => true, concurrency_limit => %(concurrency_limit)s::integer, expires_in => %(expires_in)s::interval, rate_key => %(rate_key)s)"
LIST_SCHEDULES = "select * from conductor.list_schedules()"

# -- dashboard and worker endpoints --------------------------------------------------
# Every page query is index-backed and bounded: list_tasks is keyset on the primary
# key; a run's tasks come by tasks_run (root_id), their attempts by attempts_task.
DASHBOARD_RUN_TASKS = "select id, parent_id, root_id, queue, kind, status, attempt, max_attempts, error, result, enqueued_at, started_at, finished_at from conductor.tasks where root_id = %(root_id)s and parent_id is not null order by id limit %(limit)s"
# numbered 1..n in claim order per task (number: what a person reads as the attempt's #)
DASHBOARD_ATTEMPTS = "select * from conductor.list_attempts(task_ids => %(task_ids)s::bigint[])"
# the graph a task is a member of (its name there), for the run page's link: a primary-key probe
DASHBOARD_TASK_GRAPH = "select graph_id, name from conductor.graph_nodes where task_id = %(task_id)s"
DASHBOARD_HAS_STEPS = "select to_regclass('conductor.steps') is not null as has_steps"
DASHBOARD_STEPS = "select task_id, name, result, attempt_id, saved_at from conductor.steps where task_id = any(%(task_ids)s::bigint[]) order by task_id, seq limit %(limit)s"
DASHBOARD_WORKERS = "select id, host, pid, queues, concurrency, roles, version, started_at, last_seen_at from conductor.workers order by id limit 200"
# schedules page: every schedule (list_schedules) with its latest fire, manual ("Run now") or
# due, by schedule_fires_by_schedule (schedule_name, due_at): a manual fire's due_at is when it was asked
DASHBOARD_SCHEDULES = "select s.name, s.cron, s.timezone, s.kind, s.queue, s.enabled, s.next_due_at, s.last_error, s.last_error_at, f.fired_at as last_fired_at, f.task_id as last_fire_task_id, f.manual as last_fire_manual from conductor.list_schedules() s left join lateral (select f.fired_at, f.task_id, f.manual from conductor.schedule_fires f where f.schedule_name = s.name order by f.due_at desc limit 1) f on true order by s.name limit %(limit)s"
DASHBOARD_ENABLE_SCHEDULE = "select (conductor.enable_schedule(name => %(name)s, enabled => %(enabled)s)).name"
DASHBOARD_PAUSED_QUEUES = (
    "select queue, paused_at, paused_by from conductor.paused_queues order by queue limit %(limit)s"
)
DASHBOARD_QUEUE_LIMITS = (
    "select queue, max_running, set_at, owner from conductor.queue_limits order by queue limit %(limit)s"
)
# the handler log lines of some attempts (each at most settings.max_log_bytes)
DASHBOARD_ATTEMPT_LOGS = "select attempt_id, lines, dropped from conductor.attempt_logs where attempt_id = any(%(attempt_ids)s::bigint[]) order by attempt_id"
# live updates (/events): one session of the dashboard listens on the event bus for topic 'tasks'
# only while a browser is connected, so the engine publishes nothing when nobody looks
DASHBOARD_LISTEN_BUS = "listen conductor_bus"
DASHBOARD_SUBSCRIBE = "select conductor.subscribe(topics => %(topics)s::text[])"
DASHBOARD_UNSUBSCRIBE = "select conductor.unsubscribe(topics => %(topics)s::text[])"

# -- operations (pyconductor.commands.ops: stats, health, prune, tasks, status) -----
# stats(): one row per queue; its last column, unrunnable, counts the queue's queued
# tasks that no live worker can run (none serves both the queue and the kind)
STATS = "select * from conductor.stats()"
# per (queue, kind): queue, kind, tasks, oldest_run_at, dead_letter_at (when the
# reaper's unknown-kind sweep dead-letters the oldest; NULL: it will not)
UNRUNNABLE = "select * from conductor.unrunnable()"
PRUNE = "select conductor.prune(older_than => %(older_than)s::interval, include_failed => %(include_failed)s, batch => %(batch)s) as pruned"
LIST_TASKS = 'select * from conductor.list_tasks(status => %(status)s, queue => %(queue)s, kind => %(kind)s, before_id => %(before_id)s, "limit" => %(limit)s)'
# one page of a search (search_tasks): its matches newest first, one row each, every row carrying
# the page's cursor (next_before_id: NULL when nothing older matches; cut_short: the page stopped
# at scan_limit examined tasks); a page with no match is one row whose task columns are NULL
SEARCH_TASKS = 'select s.next_before_id, s.scanned, s.cut_short, t.* from conductor.search_tasks(kind => %(kind)s, queue => %(queue)s, status => %(status)s, dedupe_key => %(dedupe_key)s, payload_contains => %(payload_contains)s::jsonb, enqueued_after => %(enqueued_after)s, enqueued_before => %(enqueued_before)s, finished_after => %(finished_after)s, finished_before => %(finished_before)s, before_id => %(before_id)s, "limit" => %(limit)s, scan_limit => %(scan_limit)s) s left join lateral unnest(s.tasks) with ordinality t on true order by t.ordinality'
# every live leader lease (the scheduler, retention, singleton:NAME)
LEADERS = "select * from conductor.leaders()"
# sessions outside the engine that hold one of its advisory keys (/health, status): looks
# again for up to hold when a holder inside a transaction might be one
FOREIGN_LOCK_HOLDERS = "select pid, usename, application_name, key_space, label, locks, mode, idle, reason from conductor.foreign_lock_holders(hold => %(hold)s::interval)"
LIVE_WORKERS = "select w.*, conductor.now() - w.last_seen_at as last_seen_ago from conductor.workers w where w.last_seen_at > conductor.now() - %(seen_within)s::interval order by w.id"
# the fleet's schedules (/health, /metrics): how many are enabled, and whether any process holds the scheduler lease
SCHEDULE_FLEET = "select (select count(*) from conductor.schedules where enabled)::integer as enabled, exists (select from conductor.leaders(names => array['scheduler'])) as scheduler_leader"
# the enabled schedules no tick fired within grace of their due time (/health, conductor_health)
OVERDUE_SCHEDULES = "select name, next_due_at, overdue from conductor.overdue_schedules(grace => %(grace)s::interval)"
# the probe's statement timeout behind a transaction-mode pooler, for its transaction only
# (milliseconds, as text: a session setting would leak to whoever gets the server session next)
STATEMENT_TIMEOUT_LOCAL = "select pg_catalog.set_config('statement_timeout', %(ms)s, true)"

# -- schema release (pyconductor.schema) ----------------------------------------------
# whether a conductor schema is deployed, and whether it has conductor.version() (0.1.0 had none)
SCHEMA_PRESENT = "select to_regnamespace('conductor') is not null as has_schema, to_regprocedure('conductor.version()') is not null as has_version"
DEPLOYED_VERSION = "select conductor.version() as version"

# -- migrate (pyconductor.migrate: the sqitch-free deployer) ------------------------
# Its own registry and lock; the changes it applies are the files sqitch.plan names.
REGISTRY_SCHEMA = "conductor_registry"
REGISTRY_DDL = f"""
create schema if not exists {REGISTRY_SCHEMA};
comment on schema {REGISTRY_SCHEMA} is
  'Changes deployed by pyconductor migrate (the sqitch-free deployer); see pyconductor/migrate.py';
create table if not exists {REGISTRY_SCHEMA}.changes (
  project       text        not null,
  change        text        not null,
  occurrence    integer     not null default 1,
  script_sha256 text        not null,
  applied_at    timestamptz not null default clock_timestamp(),
  applied_by    text        not null default current_user,
  primary key (project, change, occurrence)
);
"""
REGISTRY_EXISTS = f"select to_regclass('{REGISTRY_SCHEMA}.changes') is not null as exists"
APPLIED_CHANGES = f"select change, occurrence, script_sha256 from {REGISTRY_SCHEMA}.changes where project = %(project)s"
# after a change's script (which may have set a role), in its transaction
RESET_ROLE = "reset role"
RECORD_CHANGE = f"insert into {REGISTRY_SCHEMA}.changes (project, change, occurrence, script_sha256) values (%(project)s, %(change)s, %(occurrence)s, %(script_sha256)s)"
# the migration lock, a session-level advisory lock (key: pyconductor.migrate.LOCK_KEY)
TRY_MIGRATION_LOCK = "select pg_catalog.pg_try_advisory_lock(%(key)s) as locked"
MIGRATION_UNLOCK = "select pg_catalog.pg_advisory_unlock(%(key)s)"
# who holds the migration lock: pg_locks and pg_stat_activity, readable by any login
MIGRATION_LOCK_HOLDER = """select l.pid, a.usename::text as usename, a.application_name, a.backend_start, a.state
  from pg_catalog.pg_locks l left join pg_catalog.pg_stat_activity a on a.pid = l.pid
 where l.locktype = 'advisory' and l.granted and l.objsubid = 1
   and l.database = (select d.oid from pg_catalog.pg_database d where d.datname = pg_catalog.current_database())
   and l.classid::bigint = ((%(key)s::bigint >> 32) & 4294967295) and l.objid::bigint = (%(key)s::bigint & 4294967295)
   and l.pid <> pg_catalog.pg_backend_pid()"""

# -- Django (pyconductor.contrib.django) ----------------------------------------------
# conductor.get_task with its json columns as text: Django's cursor decodes json
# differently per driver and per settings, text decodes one way everywhere
GET_TASK_TEXT = "select id, queue, kind, status::text as status, payload::text as payload, result::text as result, error, priority, run_at, attempt, max_attempts, recoveries, max_recoveries, parent_id, root_id, dedupe_key, concurrency_key, enqueued_at, started_at, finished_at, attempts::text as attempts, timeout from conductor.get_task(task_id => %(task_id)s)"


def with_enqueued_at(enqueue: str) -> str:
    """An enqueue statement answering the time the row stores as well: enqueue
    writes its transaction's conductor.now(), the same in this statement."""
    return f"select e.id, conductor.now() as enqueued_at from ({enqueue}) e"


# -- operations commands (pyconductor.commands.controls, .schedules; the dashboard) ----
# admin calls; the database validates (QC104 a bad queue name, QC101 a bad kind, QC106 a bad limit).
# pause and resume: true when the call changed the queue's state
PAUSE_QUEUE = "select conductor.pause_queue(queue => %(queue)s) as changed"
RESUME_QUEUE = "select conductor.resume_queue(queue => %(queue)s) as changed"
# per_second NULL: no limit; burst NULL: max(1, per_second)
SET_RATE_LIMIT = "select conductor.set_rate_limit(queue => %(queue)s::text, kind => %(kind)s::text, per_second => %(per_second)s::float8, burst => %(burst)s::float8, per_key => %(per_key)s::boolean)"
# max_running NULL: no cap
SET_QUEUE_LIMIT = "select conductor.set_queue_limit(queue => %(queue)s::text, max_running => %(max_running)s::integer)"
# one task now, counted as a fire; the schedule's next due time is unchanged
FIRE_SCHEDULE = "select conductor.fire_schedule(name => %(name)s) as task_id"

# -- dev tools (pyconductor.dev: the dev cluster's databases, the demo's progress) ---------
# whether the dev cluster has a database of this name; creating one (the name an sql.Identifier)
DEV_DATABASE_EXISTS = "select 1 from pg_catalog.pg_database where datname = %(name)s"
DEV_CREATE_DATABASE = "create database {}"
DEV_TEMPLATE = " template {}"
# what the demo's queues hold: finished, failed for good, and retries taken so far
DEMO_PROGRESS = "select count(*) filter (where status <> all (conductor.unfinished_statuses())) as finished, count(*) filter (where status in ('failed', 'dead')) as failed, coalesce(sum(greatest(attempt - 1, 0)), 0) as retries from conductor.tasks where queue = any(%(queues)s)"
# every task of the demo's queues, with its attempts counted (times as epoch seconds)
DEMO_TASKS = "select t.id, t.kind, t.status::text, t.attempt, extract(epoch from t.enqueued_at)::float8, extract(epoch from t.finished_at)::float8, (select count(*) from conductor.attempts a where a.task_id = t.id) from conductor.tasks t where t.queue = any(%(queues)s)"

# -- services (pyconductor.leader's duties, the Django worker's task-path rule) --------------
# one retention batch (pyconductor.retention): at most batch rows of each what, and how many went
APPLY_RETENTION = "select what, deleted from conductor.apply_retention(batch => %(batch)s)"
# a task whose path no worker here can load (pyconductor.contrib.django.worker): was it
# enqueued before the worker (that registered worker_id) started, or more than grace ago?
# Both on the database's clock; a worker whose row is gone counts as started after it
TASK_PATH_AGE = "select coalesce(t.enqueued_at <= w.started_at, false) as before_start, conductor.now() - t.enqueued_at > %(grace)s::interval as past_grace from conductor.tasks t left join conductor.workers w on w.id = %(worker_id)s where t.id = %(task_id)s"

# -- why a task waits (issue 29; the dashboard's task and queues pages, `tasks show`) -------------
# per queued task, what keeps it from being claimed (one row per reason, or 'ready' with how many
# come first); no row for a task that is not queued
WHY_WAITING = "select task_id, reason, detail, until_at, holder_id, ahead from conductor.why_waiting(task_ids => %(task_ids)s::bigint[])"  # fmt: skip
# per queue, how many queued tasks wait for each reason (each counted once, under its first)
WAITING_REASONS = "select queue, reason, tasks, oldest_run_at from conductor.waiting_reasons()"

# -- a run's timeline (issue 29: the run page's waterfall) ------------------------------
# spans of the run a task belongs to, in time order; attempt labels say which claims resume a wait
RUN_TIMELINE = "select * from conductor.run_timeline(run_task_id => %(task_id)s, max_tasks => %(max_tasks)s)"

# -- bulk actions by filter (pyconductor.commands.ops: tasks retry|cancel; the dashboard) ---
# the filter of conductor.preview_matching, retry_matching and cancel_matching; since and
# until (intervals ago, on the database's clock) bound enqueued_at
_BULK_FILTER = (
    "status => %(status)s, queue => %(queue)s, kind => %(kind)s, "
    "enqueued_after => conductor.now() - %(since)s::interval, enqueued_before => conductor.now() - %(until)s::interval, "
    "error_contains => %(error_contains)s"
)
# how many tasks the action ('retry' or 'cancel') would take now, and the newest ids
PREVIEW_MATCHING = f"select matching, sample_ids from conductor.preview_matching(action => %(action)s, {_BULK_FILTER})"
# one batch; refused (QC210) when more than expected match now
RETRY_MATCHING = (
    f"select conductor.retry_matching({_BULK_FILTER}, expected => %(expected)s, batch => %(batch)s) as changed"
)
CANCEL_MATCHING = (
    f"select conductor.cancel_matching({_BULK_FILTER}, expected => %(expected)s, batch => %(batch)s) as changed"
)
# the dashboard's: its time range is timestamps (the confirmation page names them, and the
# confirmed action takes the same ones), on enqueued_at or on finished_at
_DASHBOARD_BULK_FILTER = (
    "status => %(status)s, queue => %(queue)s, kind => %(kind)s, "
    "enqueued_after => %(enqueued_after)s::timestamptz, enqueued_before => %(enqueued_before)s::timestamptz, "
    "finished_after => %(finished_after)s::timestamptz, finished_before => %(finished_before)s::timestamptz, "
    "error_contains => %(error_contains)s"
)
DASHBOARD_PREVIEW_MATCHING = (
    "select matching, sample_ids from conductor.preview_matching("
    f"action => %(action)s, {_DASHBOARD_BULK_FILTER}, sample => %(sample)s)"
)
DASHBOARD_RETRY_MATCHING = f"select conductor.retry_matching({_DASHBOARD_BULK_FILTER}, expected => %(expected)s, batch => %(batch)s) as changed"
DASHBOARD_CANCEL_MATCHING = f"select conductor.cancel_matching({_DASHBOARD_BULK_FILTER}, expected => %(expected)s, batch => %(batch)s) as changed"

# -- queues over time (issue 29: the maintenance role's sampler, the queues page's charts) -------
# the last whole minute (and the minutes missed since the last sample), once per minute across
# the fleet; now on the database's clock, to wait for the next minute
SAMPLE_QUEUES = "select conductor.sample_queues() as minutes, extract(epoch from conductor.now())::float8 as now"
# a chart's points: per queue (queues NULL: every queue sampled) and step over span up to the
# start of the current minute on the database's clock; oldest_age in seconds
QUEUE_SERIES = (
    "select queue, at, finished, failed, depth, extract(epoch from oldest_age)::float8 as oldest_age_s, minutes "
    "from conductor.queue_series("
    "since => date_bin('1 minute', conductor.now(), timestamptz '2000-01-01 00:00:00+00') - %(span)s::interval, "
    "until => date_bin('1 minute', conductor.now(), timestamptz '2000-01-01 00:00:00+00'), "
    "step => %(step)s::interval, queues => %(queues)s::text[])"
)
