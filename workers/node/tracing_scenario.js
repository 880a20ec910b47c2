'use strict';
// The Node handlers of the trace test (python/tests/test_tracing.py), run as
//   node workers/node/main.js --handlers workers/node/tracing_scenario.js ...
// with CONDUCTOR_TEST_SPANS naming a file: an SDK tracer provider (a dev
// dependency) writes each finished span there as one JSON line, in the shape
// python/tests/otel_site/sitecustomize.py writes Python's.

const fs = require('node:fs');
const api = require('@opentelemetry/api');
const { BasicTracerProvider, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');

const KINDS = ['INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'];
const STATUS = ['UNSET', 'OK', 'ERROR'];
const path = process.env.CONDUCTOR_TEST_SPANS;

const fileExporter = {
  export(spans, done) {
    for (const span of spans) {
      const sc = span.spanContext();
      const parent = span.parentSpanContext || null; // sdk-trace-base 2.x
      fs.appendFileSync(path, `${JSON.stringify({
        process: 'node',
        name: span.name,
        kind: KINDS[span.kind],
        trace_id: sc.traceId,
        span_id: sc.spanId,
        parent_span_id: parent ? parent.spanId : (span.parentSpanId || null),
        links: span.links.map((l) => ({ trace_id: l.context.traceId, span_id: l.context.spanId })),
        attributes: span.attributes,
        status: STATUS[span.status.code],
        status_message: span.status.message || null,
        events: span.events.map((e) => e.name),
      })}\n`);
    }
    done({ code: 0 });
  },
  shutdown: () => Promise.resolve(),
};

api.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(fileExporter)] }));

module.exports = {
  // C: the third hop, spawned by the Python handler of otel.b
  'otel.c': async (payload, ctx) => {
    const doubled = await ctx.step('double', async () => payload.n * 2);
    return { doubled };
  },
  'otel.node_fails': async () => {
    throw new Error('node handler fails');
  },
};
