'use strict';
// OpenTelemetry spans, when @opentelemetry/api is installed (an optional peer
// dependency: the worker runs without it, and then this file does nothing).
// The same span shape as python/pyconductor/tracing.py (docs/tracing.md):
//
//   attempt   a CONSUMER span per claim, `process <kind>`, whose parent is the
//             task's stored W3C traceparent (claim returns it) and which links
//             to it; the messaging conventions' attributes (messaging.system
//             'conductor', operation 'process', destination the queue, message
//             id the task id) and Conductor's (conductor.task.kind, ...).
//             A handler's error is recorded with ERROR status; a wait that
//             parks the task ends it without error (conductor.outcome
//             'waiting').
//   step      an INTERNAL child span `step <name>` per durable step that runs
//   spawn     a child task stores the traceparent of the span that spawns it
//
// The spans are parented explicitly (no context manager is needed); the
// handler also runs inside context.with(its span), so with a context manager
// registered (the SDK's NodeSDK registers one) the handler's own spans nest
// under it. The tracer is the global provider's 'conductor-node-worker'.

let api = null;
try {
  api = require('@opentelemetry/api'); // eslint-disable-line global-require
} catch (err) {
  if (err.code !== 'MODULE_NOT_FOUND') throw err;
}

const TRACER = 'conductor-node-worker';
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The span context a W3C traceparent names (remote), or null when it is absent or malformed. */
function parseTraceparent(text) {
  const m = typeof text === 'string' ? TRACEPARENT.exec(text) : null;
  if (!m || m[1] === 'ff') return null;
  const spanContext = { traceId: m[2], spanId: m[3], traceFlags: parseInt(m[4], 16) & 0xff, isRemote: true };
  return api.trace.isSpanContextValid(spanContext) ? spanContext : null;
}

/** The W3C traceparent of a span (version 00), or null for an invalid one. */
function formatTraceparent(span) {
  const sc = span && span.spanContext();
  if (!sc || !api.trace.isSpanContextValid(sc)) return null;
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

function attributes(ctx) {
  const out = {
    'messaging.system': 'conductor',
    'messaging.operation.type': 'process',
    'messaging.operation.name': 'process',
    'messaging.destination.name': ctx.queue,
    'messaging.message.id': String(ctx.taskId),
    'conductor.task.kind': ctx.kind,
    'conductor.attempt.id': Number(ctx.attemptId),
    'conductor.attempt.number': ctx.attempt,
    'conductor.worker.id': ctx.workerId,
  };
  if (ctx.rootId != null) out['conductor.run.id'] = Number(ctx.rootId);
  if (ctx.parentId != null) out['conductor.task.parent_id'] = Number(ctx.parentId);
  return out;
}

/**
 * Runs `fn()` (the handler) in the attempt's span, which it opens on ctx
 * (ctx._span); returns what fn returns. Without @opentelemetry/api: fn().
 */
function runAttempt(ctx, fn) {
  if (!api) return fn();
  const remote = parseTraceparent(ctx.traceparent);
  const parent = remote ? api.trace.setSpanContext(api.ROOT_CONTEXT, remote) : api.ROOT_CONTEXT;
  const tracer = api.trace.getTracer(TRACER);
  const span = tracer.startSpan(`process ${ctx.kind}`, {
    kind: api.SpanKind.CONSUMER, attributes: attributes(ctx), links: remote ? [{ context: remote }] : [],
  }, parent);
  ctx._span = span;
  ctx._spanContext = api.trace.setSpan(parent, span);
  return api.context.with(ctx._spanContext, fn);
}

/** Ends the attempt's span: error (unless the task was parked by a wait), outcome. */
function endAttempt(ctx, error) {
  const span = ctx._span;
  if (!span) return;
  if (ctx.suspended) {
    span.setAttribute('conductor.outcome', 'waiting');
  } else {
    if (ctx.cancelled) span.setAttribute('conductor.outcome', ctx.cancelReason);
    const failure = error || (ctx.cancelReason === 'timed_out' ? new Error('timed out') : null);
    if (failure) {
      if (failure instanceof Error) span.recordException(failure);
      span.setStatus({
        code: api.SpanStatusCode.ERROR,
        message: failure instanceof Error ? `${failure.name}: ${failure.message}` : String(failure),
      });
    }
  }
  span.end();
  ctx._span = null;
}

/** Runs `fn()` (a durable step that runs) in a child span of the attempt's. */
async function runStep(ctx, name, fn) {
  if (!api || !ctx._spanContext) return fn();
  const tracer = api.trace.getTracer(TRACER);
  const span = tracer.startSpan(`step ${name}`, {
    kind: api.SpanKind.INTERNAL,
    attributes: { 'conductor.step.name': name, 'conductor.task.kind': ctx.kind, 'messaging.message.id': String(ctx.taskId) },
  }, ctx._spanContext);
  try {
    return await api.context.with(api.trace.setSpan(ctx._spanContext, span), fn);
  } catch (err) {
    if (err instanceof Error) span.recordException(err);
    span.setStatus({ code: api.SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    throw err;
  } finally {
    span.end();
  }
}

/**
 * The traceparent a child task of ctx stores: the active span's when a context
 * manager says one is (a step's, or the handler's own), else the attempt's;
 * null without @opentelemetry/api or a span.
 */
function childTraceparent(ctx) {
  if (!api || !ctx._span) return null;
  const active = api.trace.getSpan(api.context.active());
  return formatTraceparent(active || ctx._span);
}

module.exports = {
  available: api !== null, runAttempt, endAttempt, runStep, childTraceparent, parseTraceparent, formatTraceparent,
};
