'use strict';
// TaskContext: one claim of one task, as a handler sees it (the second
// argument of `async (payload, ctx) => result`), and its durable calls:
// step, spawn, and the waits (waitForChildren, waitForEvent, sleep); issue 31's
// publishState, waitForUpdate and reply (docs/workflows.md).
//
// Checkpoint names follow docs/protocol.md ("Durable runs"), exactly as
// python/pyconductor/context.py does: a base name used more than once in one
// execution of the handler is numbered in call order ('charge', 'charge#2',
// ...), one counter per base name shared by steps, spawns ('spawn:<kind>') and
// waits ('children', 'event:<name>', 'update:<name>', 'sleep'). A replay asks for the same
// names in the same order, so a step already in `steps` (claim returns them)
// is not run again: its stored result is returned.
//
// Replay check (docs/protocol.md, "Replaying a run"; context.py keeps the same
// rule): claim answers the recorded steps' names in saved order (step_order).
// While recorded names remain, each checkpoint asked for must be the next of
// them, else ReplayMismatch (QC211) before anything runs, and the worker fails
// the task without a retry even if the handler caught it. ctx.patched(marker)
// answers true where the run has nothing left to replay (checkpointed as
// 'patch:<marker>') or replays the marker, false where the run recorded another
// step there. ctx.codeVersion: the code version the run started on (null: none).
//
// The handler's own transaction: `await ctx.transaction(async (client) => ...)`
// runs the callback with a client of the worker's pool in a READ COMMITTED
// transaction; `ctx.completeIn(client, result)` inside it completes the task in
// that transaction (conductor.complete_in_transaction, sent before the COMMIT),
// so the handler's writes and the task's success commit together
// (docs/transactions.md, docs/protocol.md). Once per attempt; the worker then
// reports nothing for the task, and the handler's return value is dropped.
//
// A wait that must wait parks the task in SQL (suspend answers 'waiting', the
// attempt is over): the call throws Suspended, which ends the handler; the
// worker reports nothing for the attempt. Woken, the task is claimed again and
// its handler runs from the top, finding the wait's outcome in `steps`.

const sql = require('./sql');
const tracing = require('./tracing');
const { ReplayMismatch, TaskCancelled, refusal, transient } = require('./errors');

/** Thrown by a wait that parked the task; the handler must let it through. */
class Suspended extends Error {
  constructor(message) {
    super(message);
    this.name = 'Suspended';
  }
}

/** waitForUpdate's timeout passed before an update came (checkpointed: a replay throws it again). */
class UpdateTimeout extends Error {
  constructor(name, taskId) {
    super(`no update '${name}' came before the wait's timeout (task ${taskId})`);
    this.name = 'UpdateTimeout';
    this.update = name;
  }
}

/** waitForEvent's timeout passed before the event was emitted (checkpointed: a replay throws it again). */
class EventTimeout extends Error {
  constructor(event, taskId) {
    super(`event '${event}' was not emitted before the wait's timeout (task ${taskId})`);
    this.name = 'EventTimeout';
    this.event = event;
  }
}

const has = (object, key) => Object.prototype.hasOwnProperty.call(object, key);

class TaskContext {
  constructor(row, worker) {
    this.taskId = row.task_id; // bigint ids stay strings (node-postgres)
    this.attemptId = row.attempt_id; // the fencing token of this claim
    this.attempt = row.attempt; // 1 for the first run; counts against maxAttempts
    this.kind = row.kind;
    this.queue = row.queue;
    this.payload = row.payload;
    this.priority = row.priority;
    this.maxAttempts = row.max_attempts;
    this.recoveries = row.recoveries; // how many times a worker was lost running it
    this.parentId = row.parent_id;
    this.rootId = row.root_id;
    this.timeout = row.timeout; // seconds, or null
    this.traceparent = row.traceparent || null; // the enqueuer's W3C trace context (tracing.js)
    this.steps = { ...(row.steps || {}) }; // {checkpoint name: result}
    this.codeVersion = row.code_version || null; // the code version the run started on
    this.stepOrder = row.step_order || []; // the recorded names, in saved order: replayed in that order
    this.mismatch = null; // the run's ReplayMismatch once thrown: the task fails with it
    this._replayed = 0; // how many of stepOrder the handler asked for
    this.workerId = worker.workerId;
    this._worker = worker;
    this._counts = new Map();
    this._reason = null;
    this._waiters = [];
  }

  // -- cancellation: set by the worker from a heartbeat's answer, a refused
  // step, or a shutdown that hands the task back ------------------------------

  /** True once the task was cancelled, its lease lost, its time limit passed, or it was handed back. */
  get cancelled() {
    return this._reason !== null;
  }

  /** 'cancelled', 'lost', 'timed_out' or 'released'; null while not cancelled. */
  get cancelReason() {
    return this._reason;
  }

  cancel(reason) {
    if (this._reason !== null) return;
    this._reason = reason;
    for (const wake of this._waiters.splice(0)) wake(true);
  }

  /** Resolves true as soon as the task is cancelled, or false after `seconds`. */
  waitCancelled(seconds) {
    if (this.cancelled) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), seconds * 1000);
      this._waiters.push((value) => {
        clearTimeout(timer);
        resolve(value);
      });
    });
  }

  throwIfCancelled() {
    if (this.cancelled) {
      throw new TaskCancelled(`task ${this.taskId} (${this.kind}) attempt ${this.attemptId}: ${this._reason}`);
    }
  }

  // -- durable steps -------------------------------------------------------------

  _nextName(base) {
    const n = (this._counts.get(base) || 0) + 1;
    this._counts.set(base, n);
    return n === 1 ? base : `${base}#${n}`;
  }

  /** True while recorded checkpoints remain that the handler has not asked for yet. */
  get replaying() {
    return this._replayed < this.stepOrder.length;
  }

  /** The replay rule: true when `key` is the next recorded checkpoint, false when none is left; else throws. */
  _replay(key) {
    if (this.mismatch) throw this.mismatch; // nothing runs after a mismatch, even if the handler caught it
    if (this.stepOrder.length === 0) return has(this.steps, key); // no order given: by name
    if (!this.replaying) return false;
    const expected = this.stepOrder[this._replayed];
    if (key !== expected) {
      const position = this._replayed + 1;
      this.mismatch = new ReplayMismatch(
        `replay mismatch in task ${this.taskId} (${this.kind}): step ${position} of the run is '${expected}', ` +
        `the handler asks for '${key}' (recorded under code version ${this.codeVersion || 'none'}); the handler ` +
        'changed under the run: keep the old path behind ctx.patched(), or let a worker that still runs the old ' +
        'code finish it',
        { taskId: this.taskId, position, expected, asked: key },
      );
      throw this.mismatch;
    }
    this._replayed += 1;
    return true;
  }

  /**
   * Whether this run takes the code path of patch `marker` (docs/versioning.md): true where
   * the run has nothing left to replay (checkpointed as 'patch:<marker>', so a replay answers
   * true again) or replays that marker; false where the run recorded another step here.
   */
  async patched(marker) {
    if (typeof marker !== 'string' || marker === '') {
      throw new TypeError(`a patch marker is a non-empty string, not ${JSON.stringify(marker)}`);
    }
    const key = this._nextName(`patch:${marker}`);
    if (this.mismatch) throw this.mismatch;
    if (this.replaying) {
      if (this.stepOrder[this._replayed] !== key) return false;
      this._replayed += 1;
      return true;
    }
    this._checkRunning();
    await this._call(sql.SAVE_STEP, [this.attemptId, key, 'true']);
    this.steps[key] = true;
    return true;
  }

  /**
   * Runs `fn` once for the whole run: the stored result when the step already
   * finished, else `await fn()`, checkpointed with save_step (the first write
   * wins: the stored value is what comes back). The value must be JSON
   * (undefined is stored as null). options.client: the client of the open
   * ctx.transaction(); the checkpoint is then saved in that transaction, so it
   * commits with the writes fn made on it, or not at all.
   */
  async step(name, fn, { client = null } = {}) {
    const tx = client === null ? null : this._tx;
    if (client !== null && (tx === null || tx.client !== client)) {
      throw new TypeError('step(..., { client }) needs the client of the open ctx.transaction()');
    }
    const key = this._nextName(name);
    if (this._replay(key)) return this.steps[key];
    this._checkRunning();
    return tracing.runStep(this, key, async () => { // a span of its own, with @opentelemetry/api
      const value = await fn();
      const body = JSON.stringify(value === undefined ? null : value);
      const rows = tx === null
        ? await this._call(sql.SAVE_STEP, [this.attemptId, key, body])
        : await this._refused(() => tx.client.query(sql.SAVE_STEP, [this.attemptId, key, body])).then((r) => r.rows);
      this.steps[key] = rows[0].result;
      if (tx !== null) tx.steps.push(key); // forgotten again should the transaction roll back
      return rows[0].result;
    });
  }

  // -- the handler's own transaction ----------------------------------------------

  /** True once a ctx.transaction() committed the task's completion. */
  get completed() {
    return this._completed === true;
  }

  /**
   * Runs `await fn(client)` in a transaction of its own (READ COMMITTED) on a client
   * of the worker's pool, and commits; what fn throws rolls it back and is thrown.
   * With ctx.completeIn(client, result) inside, the task's completion is sent on
   * the client before the COMMIT and commits with fn's writes. Resolves to fn's value.
   */
  async transaction(fn) {
    if (this._tx) throw new Error('ctx.transaction() calls do not nest');
    if (this.completed) throw new Error(`task ${this.taskId} was completed already in a transaction`);
    this._checkRunning();
    const client = await this._worker.pool.connect();
    const tx = { client, body: undefined, steps: [], session: null };
    this._tx = tx;
    let broken = false;
    try {
      await client.query(sql.TX_BEGIN);
      let value;
      try {
        value = await fn(client);
        if (tx.body !== undefined) {
          const { rows } = await this._refused(() =>
            client.query(sql.COMPLETE_IN_TRANSACTION, [this.attemptId, tx.body]));
          tx.session = [client.processID, rows[0].backend_start];
        }
      } catch (err) {
        try {
          await client.query('rollback');
        } catch (lost) {
          broken = true; // its server session rolls back itself
        }
        this._rolledBack(tx);
        throw err;
      }
      try {
        await client.query('commit');
      } catch (err) {
        broken = true;
        if (tx.body === undefined || !transient(err)) {
          this._rolledBack(tx);
          throw err;
        }
        await this._settle(tx, err);
        return value;
      }
      if (tx.body !== undefined) this._completed = true;
      return value;
    } finally {
      this._tx = null;
      client.release(broken || undefined);
    }
  }

  /** Completes the task with `result` (JSON) when the open ctx.transaction() of `client` commits; once per attempt. */
  completeIn(client, result) {
    if (this.mismatch) throw this.mismatch; // a run whose handler changed under it fails, never completes
    const tx = this._tx;
    if (!tx || tx.client !== client) throw new TypeError('completeIn needs the client of the open ctx.transaction()');
    if (tx.body !== undefined) throw new Error(`task ${this.taskId} is already completed in this transaction`);
    tx.body = JSON.stringify(result === undefined ? null : result);
  }

  _rolledBack(tx) {
    for (const key of tx.steps) delete this.steps[key];
  }

  /** A call in the handler's transaction; a refusal (QC201/QC202/QC203) cancels the context. */
  async _refused(call) {
    try {
      return await call();
    } catch (err) {
      const why = refusal(err);
      if (why) this.cancel(why);
      throw err;
    }
  }

  /**
   * The connection dropped during the COMMIT of a completing transaction: whether it
   * committed is the database's to say. The old session is ended first (waiting for
   * it), then the attempt's outcome read: 'succeeded' is the success; none (still
   * held) means it did not commit: `lost` is thrown, the handler fails; else a refusal.
   */
  async _settle(tx, lost) {
    this._worker.log('warn', `task ${this.taskId} (${this.kind}): the connection was lost during the commit of its ` +
      'transaction; asking the database whether it committed');
    if (tx.session) await this._worker.query(sql.END_SESSION, tx.session, { retry: true });
    const rows = await this._worker.query(sql.ATTEMPT_OUTCOME, [this.taskId, this.attemptId], { retry: true });
    const outcome = rows.length ? rows[0].outcome : null;
    if (outcome === 'succeeded') {
      this._completed = true;
      return;
    }
    this._rolledBack(tx);
    if (rows.length && outcome === null) throw lost;
    this.cancel(outcome === 'cancelled' ? 'cancelled' : 'lost');
    throw new TaskCancelled(`task ${this.taskId}: attempt ${this.attemptId} no longer holds it (${outcome || 'lost'}); ` +
      'its transaction did not commit');
  }

  /**
   * Enqueues a child task (same run, parent = this task) and returns its id (a
   * string); a replay gets the same child, never a second one. options: queue,
   * priority, run_at, max_attempts, dedupe_key, concurrency_key, max_recoveries,
   * concurrency_limit, expires_in (seconds: how long after it is due the child may
   * wait for its first start, then it ends 'expired'), rate_key (the child's key
   * under per-key rate limits: docs/flow-control.md);
   * those not given take the child kind's configuration, else the database's.
   * With a dedupe_key: dedupe_window, debounce, debounce_max (interval text such
   * as '30 seconds'), dedupe_states (an array of statuses), on_duplicate
   * ('ignore', 'replace', 'preserve_run_at'): docs/uniqueness.md.
   * traceparent (W3C) defaults to the span that spawns it (tracing.js).
   */
  async spawn(kind, payload = {}, options = {}) {
    const unknown = Object.keys(options).filter((name) => !has(sql.SPAWN_OPTIONS, name));
    if (unknown.length) throw new TypeError(`unknown spawn option(s): ${unknown.join(', ')}`);
    const key = this._nextName(`spawn:${kind}`);
    const done = this._replay(key) ? this.steps[key] : undefined;
    if (done && typeof done === 'object' && has(done, 'task_id')) return String(done.task_id);
    this._checkRunning();
    if (options.traceparent == null) {
      const traceparent = tracing.childTraceparent(this);
      if (traceparent) options = { ...options, traceparent };
    }
    const given = Object.keys(options).filter((name) => options[name] !== undefined && options[name] !== null);
    const values = given.map((name) => (options[name] instanceof Date ? options[name].toISOString() : options[name]));
    const rows = await this._call(sql.spawn(given), [this.attemptId, key, kind, JSON.stringify(payload ?? {}), ...values]);
    this.steps[key] = { task_id: Number(rows[0].child) };
    return rows[0].child;
  }

  /**
   * The outcomes of this task's dependencies in its graph (docs/graphs.md), by name:
   * {name: {task_id, status, result, error}}; {} for a task in no graph. Read from
   * the database at each call (conductor.dependency_results).
   */
  async dependencies() {
    const rows = await this._call(sql.DEPENDENCY_RESULTS, [this.taskId]);
    return rows[0].results || {};
  }

  /**
   * The outcomes of this task's children ({task_id, kind, status, result, error},
   * oldest first) once all ('all') or any ('any') finished; the task waits
   * without a worker slot meanwhile. timeout: seconds (default 4 h, in SQL).
   */
  async waitForChildren(mode = 'all', timeout = null) {
    if (mode !== 'all' && mode !== 'any') throw new TypeError(`mode must be 'all' or 'any', not ${mode}`);
    const key = this._nextName('children');
    if (this._replay(key)) return this.steps[key];
    return this._wait(key, `children_${mode}`, null, null, timeout);
  }

  /** The payload of event `name`, emitted before or after this call; throws EventTimeout after `timeout` seconds. */
  async waitForEvent(name, timeout = null) {
    const key = this._nextName(`event:${name}`);
    const outcome = this._replay(key) ? this.steps[key] : await this._wait(key, 'event', name, null, timeout);
    if (outcome && outcome.timed_out) throw new EventTimeout(name, this.taskId);
    return outcome ? outcome.payload : null;
  }

  /** Sleeps durably: the task waits `seconds` without a worker slot (the wake time is checkpointed). */
  async sleep(seconds) {
    const key = this._nextName('sleep');
    this._replay(key); // its place in the run is checked like any checkpoint's
    await this._wait(key, 'sleep', null, seconds, null); // asked of SQL even on replay: it knows the time
  }

  /**
   * Publishes `value` (JSON) as the run's current state, replacing the last one: a
   * client reads it with conductor.run_state(task_id) while the run runs or waits. Not
   * a step: a replay publishes again.
   */
  async publishState(value) {
    await this._call(sql.SET_RUN_STATE, [this.attemptId, JSON.stringify(value === undefined ? null : value)]);
  }

  /**
   * The run's next update `name` (conductor.send_update), sent before or after this
   * call, in the order sent, as {id, name, payload} (id: a string); the task waits
   * without a worker slot until it comes (step 'update:<name>', numbered), or until
   * `timeout` seconds: then UpdateTimeout. A replay gets the same update. Answer it
   * with reply().
   */
  async waitForUpdate(name, timeout = null) {
    const key = this._nextName(`update:${name}`);
    let outcome;
    if (this._replay(key)) {
      outcome = this.steps[key];
    } else {
      const [{ state, result }] = await this._call(sql.WAIT_UPDATE, [this.attemptId, key, name, timeout]);
      if (state === 'waiting') {
        this._suspended = true;
        this._worker.waiting(this);
        throw new Suspended(`task ${this.taskId} waits (update '${name}')`);
      }
      this.steps[key] = outcome = result;
    }
    if (outcome.timed_out) throw new UpdateTimeout(name, this.taskId);
    const sent = outcome.payload;
    return { id: String(sent.update_id), name: sent.name, payload: sent.payload };
  }

  /** Answers an update of this run ({id} from waitForUpdate, or its id) with `value`; returns the reply stored (the first one). */
  async reply(update, value) {
    const id = typeof update === 'object' && update !== null ? update.id : update;
    const rows = await this._call(sql.REPLY_UPDATE, [this.attemptId, id, JSON.stringify(value === undefined ? null : value)]);
    return rows[0].reply;
  }

  /** True once a wait parked the task (the handler is being stopped). */
  get suspended() {
    return this._suspended === true;
  }

  async _wait(key, waitFor, event, duration, timeout) {
    const [{ state, result }] = await this._call(sql.SUSPEND, [this.attemptId, key, waitFor, event, duration, timeout]);
    if (state === 'waiting') {
      this._suspended = true;
      this._worker.waiting(this);
      throw new Suspended(`task ${this.taskId} waits (${waitFor} '${key}')`);
    }
    this.steps[key] = result;
    return result;
  }

  _checkRunning() {
    if (this._suspended) throw new Suspended(`task ${this.taskId} is waiting`);
    this.throwIfCancelled();
  }

  /** One durable call; a refusal (QC201/QC202/QC203) cancels the context, so its outcome is dropped. */
  async _call(text, params) {
    this._checkRunning();
    try {
      return await this._worker.query(text, params, { retry: true });
    } catch (err) {
      const why = refusal(err);
      if (why) this.cancel(why);
      throw err;
    }
  }
}

module.exports = { TaskContext, Suspended, EventTimeout, UpdateTimeout };
