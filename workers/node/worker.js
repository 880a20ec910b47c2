'use strict';
// A Conductor worker in Node.js, following docs/protocol.md step by step:
//
//   start()    check conductor.version(); register_worker; LISTEN conductor on a
//              connection of its own (reconnected with backoff, then a claim at once)
//   claim loop claim(kinds, queues, max_tasks = free slots); a short claim runs the
//              sleeper protocol (sleep, claim once more, wait for a notification, a
//              free slot, the next due time or the poll); a full one calls wake
//   handlers   `async (payload, ctx) => result`; complete, or fail (the database
//              decides whether and when it runs again); ctx.step, ctx.spawn and
//              the waits are durable (context.js); a parked wait reports nothing;
//              a report that meets a task row another session holds (55P03) is
//              sent again shortly, the attempt still held, until the holder ends;
//              a handler that completed in its own transaction (ctx.transaction,
//              ctx.completeIn) has reported already: nothing is sent
//   heartbeat  every `heartbeat` seconds for every held attempt; 'cancelled' and
//              'lost' stop the handler (ctx.cancelled) and drop its outcome,
//              'timed_out' is reported with fail(timed_out => true) (the database
//              writes the error), 'finished' is ignored
//   reap       every `reap` seconds, sooner at next_wake() (any worker may)
//   stop()     claim nothing more; running handlers get `shutdownGrace` seconds,
//              the rest are handed back with release; wake; deregister_worker
//
// It decides nothing the database decides: retries, backoff, leases, time
// limits and dead-lettering are SQL's. Connections come from one pg.Pool; a
// lost connection is retried with backoff (0.1 s doubling to 5 s), never fatal.

const os = require('node:os');
const crypto = require('node:crypto');
const pg = require('pg');
const sql = require('./sql');
const tracing = require('./tracing');
const { pgOptions } = require('./dsn');
const { TaskContext } = require('./context');
const { RESULT_TOO_LARGE, locked, refusal, transient } = require('./errors');

const SCHEMA_VERSION = '0.3.0'; // the conductor schema release this worker was written for
const VERSION = require('./package.json').version;

const DEFAULTS = {
  queues: null, // every queue
  kinds: null, // every kind the handlers module defines
  codeVersion: null, // the handlers' code version (docs/versioning.md); null: declares none
  replays: null, // older code versions whose runs these handlers still replay
  concurrency: 8,
  lease: 60, // seconds a claim holds a task without a heartbeat
  heartbeat: null, // seconds; null: lease / 6
  poll: 10, // the backstop for a missed notification
  reap: 30,
  shutdownGrace: 30,
  listen: true, // false: no LISTEN, no sleep marks; poll and wake at due times (transaction poolers)
};
const RECHECK_FIRST = 0.005; // an unsettled sleep() is retried after this, doubling ...
const RECHECK_MAX = 1; // ... up to this (any session can hold the key sleep() tries: latency, not a spin)
const BACKOFF_MIN = 0.1; // a lost connection is retried after this, doubling ...
const BACKOFF_MAX = 5; // ... up to this
const CALL_RETRY_FOR = 30; // seconds a report or a step waits out a lost connection
const REPORT_AFTER_GRACE = 5; // seconds stop() gives reports in flight after the grace
const REAP_MIN_WAIT = 0.05; // seconds between reaps when next_wake() is due already
const LOCKED_RETRY_FIRST = 0.05; // a report that met a row another session holds goes again after this, doubling ...
const LOCKED_RETRY_MAX = 2; // ... up to this (the attempt stays held, and heartbeated, meanwhile)

/** One waiter at a time; a set() with nobody waiting is kept for the next wait(). */
class Wakeup {
  constructor() {
    this._pending = null;
    this._resolve = null;
  }

  set(reason) {
    if (this._resolve) {
      const resolve = this._resolve;
      this._resolve = null;
      resolve(reason);
    } else if (!this._pending) {
      this._pending = reason;
    }
  }

  /** Resolves with the reason given to set(), or 'timeout' after `seconds`. */
  wait(seconds) {
    if (this._pending) {
      const reason = this._pending;
      this._pending = null;
      return Promise.resolve(reason);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this._resolve = null;
        resolve('timeout');
      }, Math.max(0, seconds) * 1000);
      this._resolve = (reason) => {
        clearTimeout(timer);
        resolve(reason);
      };
    });
  }
}

const errorText = (err) => {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return text.replace(/\0/g, '\uFFFD'); // text holding NUL cannot be sent
};

class Worker {
  /** options: dsn, handlers ({kind: async (payload, ctx) => result}), and DEFAULTS' keys. */
  constructor(options) {
    const o = { ...DEFAULTS };
    for (const [key, value] of Object.entries(options)) if (value !== undefined) o[key] = value;
    if (!o.dsn) throw new Error('a DSN is needed (--dsn or CONDUCTOR_DSN)');
    this.dsn = o.dsn;
    this.handlers = o.handlers;
    this.kinds = o.kinds || Object.keys(o.handlers);
    if (this.kinds.length === 0) throw new Error('the handlers module defines no kind');
    this.queues = o.queues && o.queues.length ? o.queues : null;
    if (o.replays && o.replays.length && !o.codeVersion) {
      throw new Error('replays needs a code version: the versions a worker replays are older than its own');
    }
    // what claims name: [its code version, the versions it replays]; null: none (docs/versioning.md)
    this.codeVersions = o.codeVersion ? [o.codeVersion, ...(o.replays || [])] : null;
    this.concurrency = o.concurrency;
    this.lease = o.lease;
    this.heartbeat = o.heartbeat || o.lease / 6;
    this.poll = o.poll;
    this.reapEvery = o.reap;
    this.shutdownGrace = o.shutdownGrace;
    this.listen = o.listen;
    this.workerId = o.workerId || `${os.hostname()}-${process.pid}-${crypto.randomBytes(3).toString('hex')}`;
    this.log = o.log || defaultLog(this.workerId);
    this.held = new Map(); // attempt_id -> TaskContext: claimed, outcome not yet reported
    this.stopping = false; // claim nothing more
    this.halted = false; // stop heartbeat, reaper, listener
    this.wakeup = new Wakeup(); // the claim loop: a notification, a free slot, stop
    this.idle = new Wakeup(); // stop(): a held task left
    this.reapNudge = new Wakeup(); // the reaper: a wait was parked
    this._halt = new AbortController();
    this._loops = [];
  }

  // -- the database ------------------------------------------------------------------

  /** Rows of one statement (autocommit); `retry`: wait out a lost connection (30 s). */
  async query(text, params, { retry = false } = {}) {
    let delay = BACKOFF_MIN;
    const until = Date.now() + CALL_RETRY_FOR * 1000;
    for (;;) {
      try {
        return (await this.pool.query(text, params)).rows;
      } catch (err) {
        if (!retry || !transient(err) || Date.now() > until) throw err;
        this.log('warn', `database unreachable (${err.message}); retrying in ${delay} s`);
        await this.pause(delay);
        delay = Math.min(delay * 2, BACKOFF_MAX);
      }
    }
  }

  /** Resolves after `seconds`, or at once when the worker halts. */
  pause(seconds) {
    if (this.halted) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, seconds * 1000);
      const signal = this._halt.signal;
      function done() {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done);
    });
  }

  // -- 1. start --------------------------------------------------------------------------

  async start() {
    this.pool = new pg.Pool({
      ...pgOptions(this.dsn),
      max: this.concurrency + 4,
      application_name: `conductor-node ${this.workerId}`.slice(0, 63),
    });
    this.pool.on('error', (err) => this.log('warn', `an idle connection was lost: ${err.message}`));
    this.pool.on('connect', (client) =>
      client.on('notice', (notice) => {
        // complete() stored no result that large: the task failed instead (QC107, a WARNING)
        if (notice.code === RESULT_TOO_LARGE) this.log('error', notice.message);
      }),
    );
    await this._checkSchema();
    await this.query(
      sql.REGISTER_WORKER,
      [this.workerId, os.hostname(), process.pid, this.queues, this.concurrency, `node ${VERSION}`,
        JSON.stringify({ language: 'node', node: process.version, code_versions: this.codeVersions }), this.kinds],
      { retry: true },
    );
    // a claim of nothing: a code_versions list the database refuses (QC123) stops the start
    if (this.codeVersions) await this._claimQuery(0);
    if (this.listen) this._loops.push(this._listenLoop(await this._listenClient()));
    this._loops.push(this._heartbeatLoop(), this._reapLoop());
    this._claiming = this._claimLoop();
    const queues = this.queues ? this.queues.join(', ') : 'all';
    this.log('info', `worker started: kinds ${this.kinds.join(', ')}; queues ${queues}; ` +
      `concurrency ${this.concurrency}, lease ${this.lease} s, heartbeat ${this.heartbeat} s`);
  }

  async _checkSchema() {
    let version;
    try {
      [{ version }] = await this.query(sql.VERSION, [], { retry: true });
    } catch (err) {
      if (err.code === '42883' || err.code === '3F000') version = 'none or 0.1.0';
      else throw err;
    }
    if (version !== SCHEMA_VERSION) {
      throw new Error(`the database holds conductor schema ${version}, this worker needs ${SCHEMA_VERSION}: ` +
        'run `pyconductor migrate --dsn ...` (or `sqitch deploy`)');
    }
  }

  /** A connected client that LISTENs on `conductor`. */
  async _listenClient() {
    const client = new pg.Client({
      ...pgOptions(this.dsn),
      application_name: `conductor-node listen ${this.workerId}`.slice(0, 63),
    });
    client.on('error', (err) => this.log('warn', `listener lost: ${err.message}`));
    client.on('notification', (msg) => {
      if (this.queues === null || this.queues.includes(msg.payload)) this.wakeup.set('notified');
    });
    try {
      await client.connect();
      await client.query(sql.LISTEN);
    } catch (err) {
      client.end().catch(() => {});
      throw err;
    }
    return client;
  }

  /** Keeps a LISTEN connection: after a loss, reconnects with backoff, then claims at once. */
  async _listenLoop(client) {
    let delay = BACKOFF_MIN;
    while (!this.halted) {
      if (client) {
        this.listener = client;
        await new Promise((resolve) => client.once('end', resolve));
        client.end().catch(() => {});
        this.listener = client = null;
        if (this.halted) return;
      }
      await this.pause(delay);
      try {
        client = await this._listenClient();
        delay = BACKOFF_MIN;
        this.wakeup.set('listening'); // notifications sent while it was away are lost: look now
      } catch (err) {
        this.log('warn', `LISTEN failed: ${err.message}`);
        delay = Math.min(delay * 2, BACKOFF_MAX);
      }
    }
  }

  // -- 2. claim, and the sleeper protocol -----------------------------------------------

  async _claimLoop() {
    let marked = false; // sleep() since the last wake()
    let settled = false; // the last sleep() answered true
    let recheck = RECHECK_FIRST;
    let backoff = BACKOFF_MIN;
    while (!this.stopping) {
      const free = this.concurrency - this.held.size;
      if (free <= 0) {
        await this.wakeup.wait(this.poll);
        continue;
      }
      try {
        const got = await this._claim(free);
        backoff = BACKOFF_MIN;
        if (got === free) { // full: there may be more
          if (marked) await this.query(sql.WAKE, [this.workerId]);
          marked = settled = false;
          continue;
        }
        if (this.listen && !settled) {
          settled = (await this.query(sql.SLEEP, [this.workerId, this.queues]))[0].settled;
          marked = true;
          if (this.stopping) break;
          if (await this._claim(free - got)) continue; // committed before the mark was visible
          if (!settled) { // an enqueue that may have missed the mark is in flight
            await this.wakeup.wait(recheck);
            recheck = Math.min(recheck * 2, RECHECK_MAX);
            continue;
          }
        }
        recheck = RECHECK_FIRST;
        const [{ due_in: dueIn }] = await this.query(sql.NEXT_DUE, [this.queues, this.kinds]);
        const wait = dueIn === null ? this.poll : Math.min(this.poll, Math.max(dueIn, 0) + 0.001);
        const why = await this.wakeup.wait(wait);
        if (why === 'timeout' && wait === this.poll) settled = false; // the poll: mark again
      } catch (err) {
        this.log('error', `claim failed: ${err.message}`);
        settled = false;
        await this.wakeup.wait(backoff);
        backoff = Math.min(backoff * 2, BACKOFF_MAX);
      }
    }
  }

  /** Claims up to n tasks and starts their handlers; returns how many came. */
  _claimQuery(n) {
    return this.codeVersions
      ? this.query(sql.CLAIM_VERSIONED, [this.workerId, this.queues, n, this.lease, this.kinds, this.codeVersions])
      : this.query(sql.CLAIM, [this.workerId, this.queues, n, this.lease, this.kinds]);
  }

  async _claim(n) {
    const rows = await this._claimQuery(n);
    for (const row of rows) {
      const ctx = new TaskContext(row, this);
      this.held.set(ctx.attemptId, ctx);
      if (this.stopping) this._release(ctx); // claimed while stopping: back unrun
      else this._run(ctx).catch((err) => this.log('error', `task ${ctx.taskId}: ${err.stack || err}`));
    }
    return rows.length;
  }

  _forget(ctx) {
    this.held.delete(ctx.attemptId);
    this.wakeup.set('slot');
    this.idle.set('left');
  }

  // -- 3. run, 4. report -------------------------------------------------------------------

  async _run(ctx) {
    const handler = this.handlers[ctx.kind];
    let outcome;
    try {
      // in the attempt's span, with @opentelemetry/api (tracing.js)
      outcome = handler
        ? { result: await tracing.runAttempt(ctx, () => handler(ctx.payload, ctx)) }
        : { error: new Error(`no handler for kind '${ctx.kind}'`), unknownKind: true };
    } catch (err) {
      outcome = { error: err };
    }
    // a replay mismatch fails the task without a retry, even if the handler caught it (context.js)
    if (ctx.mismatch) outcome = { error: ctx.mismatch, retryable: false };
    tracing.endAttempt(ctx, outcome.error);
    if (ctx.completed) { // its own transaction stored the success: nothing to report
      if (outcome.error) this.log('warn', `task ${ctx.taskId} (${ctx.kind}) threw after its transaction completed it: ${outcome.error.message}`);
      else if (outcome.result !== undefined && outcome.result !== null) {
        this.log('warn', `task ${ctx.taskId} (${ctx.kind}) returned a value after its transaction completed it; dropped`);
      }
      this.log('info', `task ${ctx.taskId} (${ctx.kind}) succeeded (in its transaction)`);
      this._forget(ctx);
      return;
    }
    if (ctx.suspended) { // parked by a wait: the attempt is over, with nothing to report
      this.log('info', `task ${ctx.taskId} (${ctx.kind}) waiting`);
      this._forget(ctx);
      return;
    }
    if (ctx.cancelled) {
      // cancelled or lost: discarded (held already dropped by the heartbeat or the
      // refused step); timed out or released: reported by whoever noticed it
      if (ctx.cancelReason === 'cancelled' || ctx.cancelReason === 'lost') {
        this.log('warn', `task ${ctx.taskId} (${ctx.kind}) ${ctx.cancelReason}; its outcome is discarded`);
        if (this.held.get(ctx.attemptId) === ctx) this._forget(ctx);
      }
      return;
    }
    await this._report(ctx, outcome);
  }

  async _report(ctx, outcome) {
    if (ctx.reporting) return;
    ctx.reporting = true;
    try {
      await this._untilUnlocked(ctx, () =>
        'result' in outcome ? this._complete(ctx, outcome.result) : this._fail(ctx, outcome.error, outcome));
    } catch (err) {
      const why = refusal(err);
      if (why) this.log('warn', `task ${ctx.taskId} (${ctx.kind}) ${why} before its report; outcome discarded`);
      else this.log('error', `reporting task ${ctx.taskId} (${ctx.kind}) failed: ${err.message}; left to the reaper`);
    } finally {
      this._forget(ctx);
    }
  }

  async _complete(ctx, result) {
    let body;
    try {
      body = JSON.stringify(result === undefined ? null : result);
    } catch (err) {
      return this._fail(ctx, new TypeError(`the result of task ${ctx.taskId} is not JSON: ${err.message}`));
    }
    try {
      await this.query(sql.COMPLETE, [ctx.attemptId, body], { retry: true });
    } catch (err) {
      // PostgreSQL refused the value before complete ran (e.g. a string holding \u0000):
      // the handler's effects are done, so the task fails without a retry
      if (err instanceof pg.DatabaseError && err.code.startsWith('22')) {
        return this._fail(ctx, new Error(`result not storable: ${err.message}`), { retryable: false });
      }
      throw err;
    }
    this.log('info', `task ${ctx.taskId} (${ctx.kind}) succeeded`);
  }

  /** fail(); timedOut: the attempt reached its time limit, a reason (no error: the database writes it). */
  async _fail(ctx, err, { unknownKind = false, retryable = true, timedOut = false } = {}) {
    const trace = err instanceof Error && err.stack ? err.stack.replace(/\0/g, '\uFFFD') : null;
    const error = timedOut ? null : errorText(err);
    const [{ status }] = await this.query(
      sql.FAIL, [ctx.attemptId, error, null, trace, unknownKind, retryable, timedOut], { retry: true },
    );
    const next = status === 'queued' ? 'will retry' : `now ${status}`;
    const level = status === 'queued' ? 'warn' : 'error';
    this.log(level, `task ${ctx.taskId} (${ctx.kind}) failed, ${next}: ${timedOut ? 'timed out' : error}`);
  }

  /**
   * report(), sent again while it meets a task row another session holds (55P03: a client's
   * cancel or emit_event left open in its transaction): nothing changed, the attempt is still
   * held (and heartbeated); after LOCKED_RETRY_FIRST s, doubling, until the holder ends.
   */
  async _untilUnlocked(ctx, report) {
    let delay = LOCKED_RETRY_FIRST;
    for (;;) {
      try {
        return await report();
      } catch (err) {
        if (!locked(err) || this.halted) throw err;
        this.log('info', `task ${ctx.taskId} (${ctx.kind}): another session holds its row; reporting again in ${delay} s`);
        await this.pause(delay);
        delay = Math.min(delay * 2, LOCKED_RETRY_MAX);
      }
    }
  }

  async _release(ctx) {
    ctx.cancel('released');
    ctx.reporting = true;
    try {
      await this._untilUnlocked(ctx, () => this.query(sql.RELEASE, [ctx.attemptId], { retry: true }));
      this.log('info', `task ${ctx.taskId} (${ctx.kind}) handed back`);
    } catch (err) {
      if (!refusal(err)) this.log('error', `release of task ${ctx.taskId} failed: ${err.message}`);
    } finally {
      this._forget(ctx);
    }
  }

  // -- heartbeat and reaper ------------------------------------------------------------------

  async _heartbeatLoop() {
    while (!this.halted) {
      await this.pause(this.heartbeat);
      if (!this.halted) await this.beat();
    }
  }

  /** One heartbeat for every held attempt (also marks the worker seen when it holds none). */
  async beat() {
    let rows;
    try {
      rows = await this.query(sql.HEARTBEAT, [this.workerId, [...this.held.keys()], this.lease]);
    } catch (err) {
      this.log('error', `heartbeat failed: ${err.message}`);
      return;
    }
    for (const { attempt_id: id, state } of rows) {
      const ctx = this.held.get(id);
      if (!ctx || state === 'finished') continue; // a report of ours crossed the beat
      ctx.cancel(state);
      if (state === 'timed_out') {
        this._report(ctx, { timedOut: true }); // the database writes the error
      } else { // 'cancelled' or 'lost': stop the handler; nothing will be reported
        this.log('warn', `task ${ctx.taskId} (${ctx.kind}) ${state}; stopping its handler`);
        this._forget(ctx);
      }
    }
  }

  /** reap(), then again after `reap` seconds, or sooner when next_wake() says so or a wait was parked. */
  async _reapLoop() {
    while (!this.halted) {
      let delay = this.reapEvery;
      try {
        const [row] = await this.query(sql.REAP, []);
        this._logReap(row);
        if (row.wake_in !== null) delay = Math.min(delay, Math.max(row.wake_in, REAP_MIN_WAIT));
      } catch (err) {
        this.log('error', `reap failed: ${err.message}`);
      }
      await this.reapNudge.wait(delay);
    }
  }

  /** What a reap did, as the Python worker says it: reclaims (a lost worker's lease), time limits,
   * failed runs and dead-lettered kinds at warn; waits that ended at their deadline at info. */
  _logReap(row) {
    const parts = [];
    if (row.leases_lost) {
      const dead = row.leases_dead ? `, ${row.leases_dead} of them dead` : '';
      parts.push(`took back ${row.leases_lost} task(s) whose worker was lost (lease expired${dead})`);
    }
    if (row.leases_timed_out) parts.push(`failed ${row.leases_timed_out} attempt(s) past their time limit`);
    if (row.runs_failed) parts.push(`failed ${row.runs_failed} run(s) at their recovery limit`);
    if (row.kinds_swept) parts.push(`dead-lettered ${row.kinds_swept} task(s) of a kind no live worker serves`);
    if (parts.length) this.log('warn', `reaper ${parts.join('; ')}`);
    if (row.waits_ended) {
      this.log('info', `reaper ended ${row.waits_ended} wait(s) (a deadline passed, or an event's waiter was woken)`);
    }
  }

  /** A handler's wait parked its task: reap (and read next_wake) again now. */
  waiting() {
    this.reapNudge.set('waiting');
  }

  // -- 7. stop -------------------------------------------------------------------------------

  /** Claim nothing more, let handlers finish within the grace, release the rest, deregister. */
  stop() {
    if (!this._stopped) this._stopped = this._stop();
    return this._stopped;
  }

  async _stop() {
    if (!this.pool) return; // stopped before start() got anywhere
    this.log('info', `stopping: ${this.held.size} task(s) held, ${this.shutdownGrace} s to finish`);
    this.stopping = true;
    this.wakeup.set('stop');
    await this._claiming;
    const graceEnds = Date.now() + this.shutdownGrace * 1000;
    while (this.held.size > 0 && Date.now() < graceEnds) await this.idle.wait((graceEnds - Date.now()) / 1000);
    await Promise.all([...this.held.values()].filter((ctx) => !ctx.reporting).map((ctx) => this._release(ctx)));
    const reportsEnd = Date.now() + REPORT_AFTER_GRACE * 1000;
    while (this.held.size > 0 && Date.now() < reportsEnd) await this.idle.wait((reportsEnd - Date.now()) / 1000);
    this.halted = true;
    this._halt.abort();
    this.reapNudge.set('halt');
    for (const statement of [sql.WAKE, sql.DEREGISTER_WORKER]) {
      try {
        await this.query(statement, [this.workerId]);
      } catch (err) {
        this.log('error', `${statement}: ${err.message}`);
      }
    }
    if (this.listener) await this.listener.end().catch(() => {});
    await Promise.all(this._loops);
    await this.pool.end();
    this.log('info', 'worker stopped');
  }
}

function defaultLog(workerId) {
  return (level, message) => {
    process.stderr.write(`${new Date().toISOString()} ${level.toUpperCase()} conductor-node[${workerId}] ${message}\n`);
  };
}

module.exports = { Worker, DEFAULTS, SCHEMA_VERSION };
