'use strict';
// The handlers of the lifecycle scenario (python/tests/lifecycle/scenario.json,
// which says what each kind does; python/tests/lifecycle/app.py is the Python
// twin). Run by python/tests/test_lifecycle_scenario.py as
//   node workers/node/main.js --handlers workers/node/scenario.js ...
// Side effects go to the table lifecycle_log, which the test creates.

const pg = require('pg');
const { TaskCancelled } = require('./errors');
const { pgOptions } = require('./dsn');

const pool = new pg.Pool({ ...pgOptions(process.env.CONDUCTOR_DSN), max: 4 });
pool.on('error', () => {}); // an idle connection lost: the next query opens another

const record = (ctx, event, detail = null) =>
  pool.query('insert into lifecycle_log (task_id, event, detail, pid) values ($1, $2, $3, $4)',
    [ctx.taskId, event, detail, process.pid]);

const sleep = (seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

module.exports = {
  'lifecycle.echo': async (payload) => ({ echo: payload.value }),

  'lifecycle.flaky': async (payload, ctx) => {
    if (ctx.attempt <= payload.fail_times) {
      throw new Error(`flaky: attempt ${ctx.attempt} fails (fail_times ${payload.fail_times})`);
    }
    return { attempt: ctx.attempt };
  },

  'lifecycle.doomed': async (payload) => {
    throw new Error(payload.message);
  },

  'lifecycle.wait': async (payload, ctx) => {
    await record(ctx, 'started');
    if (!(await ctx.waitCancelled(payload.seconds))) return { cancelled: false };
    await record(ctx, 'observed', ctx.cancelReason);
    throw new TaskCancelled(`task ${ctx.taskId}: ${ctx.cancelReason}`);
  },

  'lifecycle.parent': async (payload, ctx) => {
    // an hour to start (expires_in): a spawn option both languages pass to SQL
    for (const value of payload.values) await ctx.spawn('lifecycle.echo', { value }, { expires_in: 3600 });
    const children = await ctx.waitForChildren('all');
    await ctx.sleep(payload.sleep);
    return { children: children.map((c) => ({ status: c.status, result: c.result })) };
  },

  'lifecycle.durable': async (payload, ctx) => {
    const steps = [];
    for (const [i, name] of payload.steps.entries()) {
      const index = i + 1;
      steps.push(await ctx.step(name, async () => {
        await record(ctx, 'step', String(index));
        if (index === payload.block_at && ctx.recoveries === 0) {
          await sleep(60); // the test kills this process meanwhile
        }
        return { name, index };
      }));
    }
    return { steps };
  },
};
