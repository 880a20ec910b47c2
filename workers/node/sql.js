'use strict';
// Every statement the Node worker sends, one line each: a call of one function
// of the conductor schema in named notation (docs/protocol.md). Nothing else
// in this folder writes SQL. Times go in as seconds and come back as seconds
// (float8), so no interval or timestamp parsing is needed on this side.

const interval = (n) => `make_interval(secs => $${n}::float8)`;
// a lock_timeout for the statement's own (autocommit) transaction, set before the call runs
const BOUNDED = "from (select pg_catalog.set_config('lock_timeout', '500ms', true)) as bound";

// conductor.spawn's options and their types ('seconds': a number of seconds, sent as an
// interval); a call names only the options given, so the others take spawn's defaults
// (the child kind's configuration)
const SPAWN_OPTIONS = {
  queue: 'text', priority: 'integer', run_at: 'timestamptz', max_attempts: 'integer',
  dedupe_key: 'text', concurrency_key: 'text', max_recoveries: 'integer', traceparent: 'text',
  concurrency_limit: 'integer',
  // the dedupe options (docs/uniqueness.md, docs/debounce.md); durations as interval text ('30 seconds')
  dedupe_window: 'interval', dedupe_states: 'text[]', on_duplicate: 'text', debounce: 'interval',
  debounce_max: 'interval',
  expires_in: 'seconds',
  // the child's key under per-key rate limits (docs/flow-control.md); never the kind's
  rate_key: 'text',
};

/** conductor.spawn naming `options` (keys of SPAWN_OPTIONS) after its four parameters. */
function spawn(options) {
  const named = options.map((name, i) => (SPAWN_OPTIONS[name] === 'seconds'
    ? `, ${name} => ${interval(i + 5)}`
    : `, ${name} => $${i + 5}::${SPAWN_OPTIONS[name]}`)).join('');
  return `select conductor.spawn(attempt_id => $1, step => $2, kind => $3, payload => $4::jsonb${named})::text as child`;
}

module.exports = {
  SPAWN_OPTIONS,
  VERSION: 'select conductor.version() as version',
  REGISTER_WORKER:
    'select conductor.register_worker(worker_id => $1, host => $2, pid => $3, queues => $4::text[], ' +
    'concurrency => $5, version => $6, metadata => $7::jsonb, kinds => $8::text[])',
  // the columns a handler needs; timeout in seconds (NULL: no time limit); traceparent:
  // the enqueuer's W3C trace context (tracing.js); code_version and step_order: the run's
  // recorded code version and its steps' names in saved order (the replay check, context.js)
  CLAIM:
    'select task_id, attempt_id, attempt, kind, queue, payload, priority, max_attempts, recoveries, ' +
    'parent_id, root_id, steps, extract(epoch from timeout)::float8 as timeout, traceparent, ' +
    'code_version, step_order ' +
    `from conductor.claim(worker_id => $1, queues => $2::text[], max_tasks => $3, lease => ${interval(4)}, ` +
    'kinds => $5::text[], durable => false)',
  // a worker that declares its code version (docs/versioning.md): [its version, the older ones it replays]
  CLAIM_VERSIONED:
    'select task_id, attempt_id, attempt, kind, queue, payload, priority, max_attempts, recoveries, ' +
    'parent_id, root_id, steps, extract(epoch from timeout)::float8 as timeout, traceparent, ' +
    'code_version, step_order ' +
    `from conductor.claim(worker_id => $1, queues => $2::text[], max_tasks => $3, lease => ${interval(4)}, ` +
    'kinds => $5::text[], durable => false, code_versions => $6::text[])',
  HEARTBEAT:
    `select * from conductor.heartbeat(worker_id => $1, attempt_ids => $2::bigint[], lease => ${interval(3)})`,
  // complete waits at most 200 ms for a task row another session holds, then 55P03; fail
  // and release at most 500 ms (lock_timeout for this statement only), then 55P03
  COMPLETE: 'select conductor.complete(attempt_id => $1, result => $2::jsonb)',
  FAIL:
    'select conductor.fail(attempt_id => $1, error => $2, retry_at => $3::timestamptz, traceback => $4, ' +
    `unknown_kind => $5, retryable => $6, timed_out => $7)::text as status ${BOUNDED}`,
  RELEASE: `select conductor.release(attempt_id => $1) ${BOUNDED}`,
  SAVE_STEP: 'select conductor.save_step(attempt_id => $1, name => $2, result => $3::jsonb) as result',
  // a graph member's dependencies: {name: {task_id, status, result, error}} (docs/graphs.md)
  DEPENDENCY_RESULTS: 'select conductor.dependency_results(task_id => $1) as results',
  // a handler's own transaction (ctx.transaction): its one report, sent on its client before
  // COMMIT, with the server session's start as text (a Date would lose the microseconds),
  // which names the session should the connection drop during the COMMIT
  TX_BEGIN: 'begin isolation level read committed',
  COMPLETE_IN_TRANSACTION:
    'select conductor.complete_in_transaction(attempt_id => $1, result => $2::jsonb), ' +
    '(select a.backend_start::text from pg_catalog.pg_stat_activity a where a.pid = pg_catalog.pg_backend_pid()) ' +
    'as backend_start',
  // a COMMIT whose answer was lost: that session ended (waiting up to 10 s), then the attempt read
  END_SESSION:
    'select pg_catalog.pg_terminate_backend(a.pid, 10000) as ended from pg_catalog.pg_stat_activity a ' +
    'where a.pid = $1 and a.backend_start = $2::timestamptz',
  ATTEMPT_OUTCOME:
    'select outcome from conductor.list_attempts(task_ids => array[$1]::bigint[]) where id = $2',
  // a wait (wait_for: children_all, children_any, event, sleep); duration and timeout in seconds
  SUSPEND:
    'select state, result from conductor.suspend(attempt_id => $1, step => $2, wait_for => $3, event => $4, ' +
    `duration => ${interval(5)}, timeout => ${interval(6)})`,
  spawn,
  // issue 31 (docs/workflows.md): the run's published state; the run's next update of a
  // name (a wait, as SUSPEND answers it) and its reply (the first one stays)
  SET_RUN_STATE: 'select conductor.set_run_state(attempt_id => $1, state => $2::jsonb)',
  WAIT_UPDATE:
    'select state, result from conductor.wait_update(attempt_id => $1, step => $2, name => $3, ' +
    `timeout => ${interval(4)})`,
  REPLY_UPDATE: 'select conductor.reply_update(attempt_id => $1, update_id => $2, reply => $3::jsonb) as reply',
  // the sleeper protocol (docs/protocol.md, "Going to sleep")
  SLEEP: 'select conductor.sleep(worker_id => $1, queues => $2::text[]) as settled',
  WAKE: 'select conductor.wake(worker_id => $1)',
  // seconds until the earliest task due later on the worker's queues (NULL: none)
  NEXT_DUE:
    'select extract(epoch from conductor.next_due(queues => $1::text[], kinds => $2::text[]) - conductor.now())::float8 ' +
    'as due_in',
  // reap (what it did, by kind), then seconds until reap next has something to do (NULL: nothing waits or runs)
  REAP: 'select r.*, extract(epoch from conductor.next_wake() - conductor.now())::float8 as wake_in from conductor.reap_report() r',
  DEREGISTER_WORKER: 'select conductor.deregister_worker(worker_id => $1)',
  LISTEN: 'listen conductor',
};
