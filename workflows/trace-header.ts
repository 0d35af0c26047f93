// Whether a workflow's or an activity's Temporal headers carry a sampled trace context (the
// client and workflow interceptors of @temporalio/interceptors-opentelemetry put a W3C carrier
// there as a payload). Pure: the workflow sandbox and the worker both ask it.
import { defaultPayloadConverter, type Payload } from '@temporalio/common';

/** The header the client interceptor puts the trace context in (a W3C carrier as a payload). */
const TRACE_HEADER = '_tracer-data';

/** Whether Temporal headers (a workflow's or an activity's) carry a sampled W3C trace context. */
export function carriesSampledTrace(headers: Record<string, Payload> | undefined): boolean {
  const payload = headers?.[TRACE_HEADER];
  if (!payload) return false;
  const traceparent = defaultPayloadConverter.fromPayload<Record<string, string> | undefined>(payload)?.traceparent;
  const flags =
    typeof traceparent === 'string' ? /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-([0-9a-f]{2})$/.exec(traceparent)?.[1] : undefined;
  return flags !== undefined && (parseInt(flags, 16) & 1) === 1;
}
