'use strict';
// TaskContext: one claim of one task, as a handler sees it (the second
// argument of `async (payload, ctx) => result`), and its durable steps.
//
// Checkpoint names follow docs/protocol.md ("Durable runs"), exactly as
// python/pyconductor/context.py does: a base name used more than once in one
// execution of the handler is numbered in call order ('charge', 'charge#2',
// ...), one counter per base name. A replay asks for the same names in the
// same order, so a step already in `steps` (claim returns them) is not run
// again: its stored result is returned.

const sql = require('./sql');
const { TaskCancelled, refusal } = require('./errors');

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
    this.steps = { ...(row.steps || {}) }; // {checkpoint name: result}
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

  /**
   * Runs `fn` once for the whole run: the stored result when the step already
   * finished, else `await fn()`, checkpointed with save_step (the first write
   * wins: the stored value is what comes back). The value must be JSON
   * (undefined is stored as null).
   */
  async step(name, fn) {
    const key = this._nextName(name);
    if (Object.prototype.hasOwnProperty.call(this.steps, key)) return this.steps[key];
    this.throwIfCancelled();
    const value = await fn();
    const body = JSON.stringify(value === undefined ? null : value);
    let rows;
    try {
      rows = await this._worker.query(sql.SAVE_STEP, [this.attemptId, key, body], { retry: true });
    } catch (err) {
      const why = refusal(err);
      if (why) this.cancel(why); // the worker discards this attempt's outcome
      throw err;
    }
    this.steps[key] = rows[0].result;
    return rows[0].result;
  }
}

module.exports = { TaskContext };
