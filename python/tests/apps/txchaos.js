'use strict';
// The Node twin of apps/txchaos_app.py (test_transaction_chaos.py): kind 'effect'
// writes one row to the table effects and completes in the same transaction,
// pausing up to pause_ms between the two so that a kill lands there often.
//   node workers/node/main.js --handlers python/tests/apps/txchaos.js ...

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

module.exports = {
  effect: async (payload, ctx) => {
    await ctx.transaction(async (client) => {
      await client.query('insert into effects (task_id, attempt_id) values ($1, $2)', [ctx.taskId, ctx.attemptId]);
      await sleep(Math.random() * (payload.pause_ms ?? 20));
      ctx.completeIn(client, { attempt_id: Number(ctx.attemptId) });
    });
  },
};
