'use strict';
// The SQLSTATEs a worker handles (docs/protocol.md, "SQLSTATEs a worker
// handles") and the one test for "the connection, not the call, failed".

const { DatabaseError } = require('pg');

const LEASE_LOST = 'QC201'; // the attempt no longer holds its task: discard the outcome
const CANCELLED = 'QC202'; // the task was cancelled: stop, discard the outcome
const NOT_FOUND = 'QC203'; // no such attempt: as lease lost
const RESULT_TOO_LARGE = 'QC107'; // save_step refuses the value; complete warns and fails the task
const LOCKED = '55P03'; // a report met a task row another session holds: nothing changed, send it again later

/** Why a call about an attempt was refused ('lost' or 'cancelled'), or null. */
function refusal(err) {
  if (!(err instanceof DatabaseError)) return null;
  if (err.code === CANCELLED) return 'cancelled';
  if (err.code === LEASE_LOST || err.code === NOT_FOUND) return 'lost';
  return null;
}

/** True when a report met a task row another session holds (55P03): send the same call again later. */
function locked(err) {
  return err instanceof DatabaseError && err.code === LOCKED;
}

/** True when the connection failed (retry the call on a new one), not the statement. */
function transient(err) {
  if (!(err instanceof DatabaseError)) return true; // socket closed, refused, reset, timeout
  return err.code.startsWith('08') || ['57P01', '57P02', '57P03'].includes(err.code);
}

/**
 * QC211: a resumed run's handler asked for a checkpoint that is not the next one its run
 * recorded (docs/protocol.md, "Replaying a run"); the task fails at once, not retried.
 */
class ReplayMismatch extends Error {
  constructor(message, { taskId, position, expected, asked }) {
    super(message);
    this.name = 'ReplayMismatch';
    this.code = 'QC211';
    this.taskId = taskId;
    this.position = position;
    this.expected = expected;
    this.asked = asked;
  }
}

/** What a handler may throw to stop early, and what ctx.throwIfCancelled() throws. */
class TaskCancelled extends Error {
  constructor(message) {
    super(message);
    this.name = 'TaskCancelled';
  }
}

module.exports = {
  LEASE_LOST, CANCELLED, NOT_FOUND, RESULT_TOO_LARGE, LOCKED, ReplayMismatch, TaskCancelled, locked, refusal,
  transient,
};
