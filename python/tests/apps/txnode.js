'use strict';
// Handlers for the Node cases of test_handler_transactions.py: each writes a row to
// the table effects and completes in the same transaction (ctx.transaction).
//   order  completes with {n}
//   raise  completes, then throws: everything rolls back, the task fails
//   gate   completes, then waits (polling in its transaction) until the test inserts
//          the task's id into gates: the test cancels the task meanwhile

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function write(client, ctx) {
  await client.query('insert into effects (task_id, note) values ($1, $2)', [ctx.taskId, ctx.kind]);
}

module.exports = {
  order: async (payload, ctx) => {
    await ctx.transaction(async (client) => {
      await write(client, ctx);
      await ctx.step('reserved', async () => ({ stock: 1 }), { client });
      ctx.completeIn(client, { n: payload.n });
      let twice = null;
      try {
        ctx.completeIn(client, { n: -1 });
      } catch (err) {
        twice = err.message;
      }
      if (!/already completed/.test(twice || '')) throw new Error(`completeIn twice: ${twice}`);
    });
    return 'dropped: the transaction completed the task';
  },
  raise: async (payload, ctx) => {
    await ctx.transaction(async (client) => {
      await write(client, ctx);
      ctx.completeIn(client, { ok: true });
      throw new Error('out of stock');
    });
  },
  gate: async (payload, ctx) => {
    await ctx.transaction(async (client) => {
      await write(client, ctx);
      ctx.completeIn(client, { ok: true });
      for (;;) {
        const { rows } = await client.query('select 1 from gates where task_id = $1', [ctx.taskId]);
        if (rows.length) break;
        await sleep(20);
      }
    });
  },
};
