// The active span as a W3C traceparent, kept with what a step commits, and back: a later,
// separate trace (a replay, a redelivery, a deletion) links to the step that committed.
import {
  context,
  createContextKey,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  trace,
  type Context,
  type Link,
  type SpanContext,
} from '@opentelemetry/api';
import { parseTraceparent } from '../temporal/trace-header';

const LEFT_OUT = createContextKey('oncely.unsampled');

/**
 * The context of a request the sampler left out: its decision (and ids, for log lines and a
 * session's later requests), but no span, so nothing beneath it (pg, S3, outgoing HTTP, the
 * Temporal client) does any tracing work for it.
 */
export function leftOutContext(decision: SpanContext): Context {
  return ROOT_CONTEXT.setValue(LEFT_OUT, decision);
}

/** The active span's context, or the left-out request's decision. */
function activeSpanContext(): SpanContext | undefined {
  return trace.getActiveSpan()?.spanContext() ?? (context.active().getValue(LEFT_OUT) as SpanContext | undefined);
}

/**
 * The active span's traceparent, or null when there is none (tracing off). An unsampled one is
 * kept too: a session's later requests then keep its sampling decision.
 */
export function activeTraceparent(): string | null {
  const carrier: Record<string, string> = {};
  const active = context.active();
  const leftOut = active.getValue(LEFT_OUT) as SpanContext | undefined;
  propagation.inject(leftOut && !trace.getSpan(active) ? trace.setSpanContext(active, leftOut) : active, carrier);
  return carrier.traceparent ?? null;
}

export function spanContextOf(traceparent: string | null | undefined): SpanContext | undefined {
  const p = parseTraceparent(traceparent);
  return p ? { traceId: p.traceId, spanId: p.spanId, traceFlags: p.flags, isRemote: true } : undefined;
}

/** Links the active span (this request's, this activity's) to the step that committed `traceparent`, when that step was recorded. */
export function linkToCommit(traceparent: string | null | undefined, why: string): void {
  const target = spanContextOf(traceparent);
  const span = trace.getActiveSpan();
  if (!target || !(target.traceFlags & 1) || !span?.isRecording()) return;
  const link: Link = { context: target, attributes: { 'oncely.link': why } };
  span.addLink(link);
}

/** A log line's trace fields (pino's mixin): every line written within a span names it. */
export function traceFields(): Record<string, string> {
  const span = activeSpanContext();
  return span && isSpanContextValid(span) ? { trace_id: span.traceId, span_id: span.spanId } : {};
}
