'use strict';
// The Node twin of python/tests/apps/versions_app.py's v2 and v2_unsafe (docs/versioning.md),
// run by python/tests/test_versioning_processes.py as
//   CONDUCTOR_TEST_CODE=v2 node workers/node/main.js --handlers workers/node/versions_scenario.js \
//     --code-version v2 --replays v1
// Each step's body records itself in the test's table step_runs (task_id, step, code, pid).
//   v2         charge, fraud_check behind ctx.patched('fraud-check'), reserve renamed
//              reserve_stock behind ctx.patched('reserve-stock'), the wait for 'paid-<task id>', ship
//   v2_unsafe  the same change without the markers

const pg = require('pg');
const { pgOptions } = require('./dsn');

const CODE = process.env.CONDUCTOR_TEST_CODE || 'v2';
const pool = new pg.Pool({ ...pgOptions(process.env.CONDUCTOR_DSN), max: 4 });
pool.on('error', () => {}); // an idle connection lost: the next query opens another

const step = (ctx, name) => ctx.step(name, async () => {
  await pool.query('insert into step_runs (task_id, step, code, pid) values ($1, $2, $3, $4)',
    [ctx.taskId, name, `node-${CODE}`, process.pid]);
  return `${name} by node-${CODE}`;
});

const orders = {
  v2: async (payload, ctx) => {
    await step(ctx, 'charge');
    if (await ctx.patched('fraud-check')) await step(ctx, 'fraud_check');
    await step(ctx, (await ctx.patched('reserve-stock')) ? 'reserve_stock' : 'reserve');
    await ctx.waitForEvent(`paid-${ctx.taskId}`);
    return step(ctx, 'ship');
  },
  v2_unsafe: async (payload, ctx) => {
    await step(ctx, 'charge');
    await step(ctx, 'fraud_check');
    await step(ctx, 'reserve_stock');
    await ctx.waitForEvent(`paid-${ctx.taskId}`);
    return step(ctx, 'ship');
  },
};

module.exports = { order: orders[CODE] };
