// Whether a workflow's or an activity's Temporal headers carry a sampled trace context (the
// client and workflow interceptors of @temporalio/interceptors-opentelemetry put a W3C carrier
// there as a payload). Pure: the workflow sandbox and the worker both ask it.
import { defaultPayloadConverter, type Payload } from '@temporalio/common';

/** The header the client interceptor puts the trace context in (a W3C carrier as a payload). */
const TRACE_HEADER = '_tracer-data';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A W3C traceparent's parts (version 00), or undefined when it is not one. */
export function parseTraceparent(traceparent: unknown): { traceId: string; spanId: string; sampled: boolean; flags: number } | undefined {
  const m = typeof traceparent === 'string' ? TRACEPARENT.exec(traceparent) : null;
  if (!m) return undefined;
  const flags = parseInt(m[3]!, 16);
  return { traceId: m[1]!, spanId: m[2]!, flags, sampled: (flags & 1) === 1 };
}

/** Whether Temporal headers (a workflow's or an activity's) carry a sampled W3C trace context. */
export function carriesSampledTrace(headers: Record<string, Payload> | undefined): boolean {
  const payload = headers?.[TRACE_HEADER];
  if (!payload) return false;
  return parseTraceparent(defaultPayloadConverter.fromPayload<Record<string, string> | undefined>(payload)?.traceparent)?.sampled ?? false;
}
