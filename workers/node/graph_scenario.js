'use strict';
// The handlers of the Node graph test (python/tests/test_graphs_processes.py):
// a graph's members run under this worker, `graph.sum` reading its dependencies'
// results with ctx.dependencies(), as the Python handlers do.
//   node workers/node/main.js --handlers workers/node/graph_scenario.js ...

module.exports = {
  'graph.value': async (payload) => ({ value: payload.value }),

  'graph.sum': async (payload, ctx) => {
    const deps = await ctx.dependencies();
    const names = Object.keys(deps).sort();
    return { sum: names.reduce((total, name) => total + deps[name].result.value, 0), from: names };
  },

  'graph.report': async (payload) => payload.graph.statuses,
};
