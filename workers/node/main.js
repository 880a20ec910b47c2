#!/usr/bin/env node
'use strict';
// The command line: node main.js --handlers ./my-handlers.js [options]
//
// Every option also reads a CONDUCTOR_* environment variable (the same names
// as `pyconductor worker`). SIGTERM or SIGINT: claim nothing more, let running
// handlers finish within --shutdown-grace, hand the rest back (release),
// deregister, exit 0; a second signal exits at once with code 130 and leaves
// the held tasks to the reaper.

const path = require('node:path');
const { parseArgs } = require('node:util');
const { Worker, DEFAULTS } = require('./worker');

const OPTIONS = {
  handlers: { env: 'CONDUCTOR_HANDLERS', help: 'module exporting {kind: async (payload, ctx) => result} (required)' },
  dsn: { env: 'CONDUCTOR_DSN', help: 'libpq URL or connection string (required)' },
  queues: { env: 'CONDUCTOR_QUEUES', help: 'comma-separated queues (default: every queue)' },
  kinds: { env: 'CONDUCTOR_KINDS', help: 'comma-separated kinds to claim (default: every kind of the handlers module)' },
  'code-version': { env: 'CONDUCTOR_CODE_VERSION', help: 'the handlers\' code version: runs it starts record it; it claims only runs of it, of --replays, or of none (docs/versioning.md)' },
  replays: { env: 'CONDUCTOR_REPLAYS', help: 'comma-separated older code versions whose runs these handlers still replay (needs --code-version)' },
  concurrency: { env: 'CONDUCTOR_WORKER_MAX_INFLIGHT', number: true, integer: true, help: `tasks running at once (default: ${DEFAULTS.concurrency})` },
  lease: { env: 'CONDUCTOR_LEASE', number: true, help: `lease in seconds (default: ${DEFAULTS.lease})` },
  heartbeat: { env: 'CONDUCTOR_HEARTBEAT', number: true, help: 'heartbeat interval in seconds (default: lease / 6)' },
  poll: { env: 'CONDUCTOR_POLL', number: true, help: `poll interval in seconds (default: ${DEFAULTS.poll})` },
  reap: { env: 'CONDUCTOR_REAP', number: true, help: `reap interval in seconds (default: ${DEFAULTS.reap})` },
  'shutdown-grace': { env: 'CONDUCTOR_SHUTDOWN_GRACE', number: true, help: `seconds handlers get to finish at stop (default: ${DEFAULTS.shutdownGrace})` },
  'worker-id': { env: 'CONDUCTOR_WORKER_ID', help: 'worker id (default: host-pid-random)' },
  'no-listen': { env: 'CONDUCTOR_NO_LISTEN', flag: true, help: 'no LISTEN and no sleep marks: poll, and wake at due times (for a transaction pooler)' },
};

function usage() {
  const lines = Object.entries(OPTIONS).map(([name, o]) => `  --${name.padEnd(16)} ${o.help} [env ${o.env}]`);
  return `usage: node main.js --handlers MODULE [options]\n\n${lines.join('\n')}\n`;
}

function options(argv) {
  const spec = { help: { type: 'boolean' } };
  for (const [name, o] of Object.entries(OPTIONS)) spec[name] = { type: o.flag ? 'boolean' : 'string' };
  const { values } = parseArgs({ args: argv, options: spec, strict: true });
  if (values.help) {
    process.stdout.write(usage());
    process.exit(0);
  }
  const out = {};
  for (const [name, o] of Object.entries(OPTIONS)) {
    let value = values[name] ?? process.env[o.env];
    if (value === undefined || value === '') continue;
    if (o.flag) value = value === true || !['0', 'false', 'no'].includes(String(value).toLowerCase());
    else if (o.number) {
      value = Number(value);
      if (!(value > 0) || (o.integer && !Number.isInteger(value))) {
        throw new Error(`--${name} must be ${o.integer ? 'a whole number' : 'a number'} above 0`);
      }
    }
    out[name.replace(/-(.)/g, (_, c) => c.toUpperCase())] = value;
  }
  return out;
}

async function main() {
  let opts;
  try {
    opts = options(process.argv.slice(2));
    if (!opts.handlers) throw new Error('--handlers is required');
  } catch (err) {
    process.stderr.write(`conductor-node: ${err.message}\n${usage()}`);
    process.exit(2);
  }
  const list = (text) => (text ? text.split(',').map((s) => s.trim()).filter(Boolean) : null);
  const handlers = require(path.resolve(opts.handlers));
  const worker = new Worker({
    dsn: opts.dsn, handlers, queues: list(opts.queues), kinds: list(opts.kinds),
    codeVersion: opts.codeVersion, replays: list(opts.replays),
    concurrency: opts.concurrency, lease: opts.lease, heartbeat: opts.heartbeat,
    poll: opts.poll, reap: opts.reap, shutdownGrace: opts.shutdownGrace, workerId: opts.workerId,
    listen: !opts.noListen,
  });

  let signals = 0;
  const onSignal = (sig) => {
    signals += 1;
    if (signals > 1) {
      worker.log('warn', `${sig} again: exiting now; the reaper takes back what is held`);
      process.exit(130);
    }
    worker.stop().then(() => process.exit(0), (err) => {
      worker.log('error', `stop failed: ${err.stack || err}`);
      process.exit(1);
    });
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    await worker.start();
  } catch (err) {
    worker.log('error', `cannot start: ${err.message}`);
    process.exit(1);
  }
}

main();
