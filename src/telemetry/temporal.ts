// Traces across Temporal's hops (@temporalio/interceptors-opentelemetry, at the SDK's
// version): the client puts the active span's context in each start, update and signal's
// headers; the workflow's interceptors (in its bundle, workflows/tracing.ts) record the
// workflow and each activity it schedules and hand that context on; the worker's activity interceptor continues the trace,
// so an activity retried after its worker died is still in the upload's trace. The workflow
// sandbox's spans reach the process's span processor through a sink. With tracing off the
// clients send no trace header, so neither the workflows nor the activities make spans.
import { context, trace, TraceFlags } from '@opentelemetry/api';
import type { ClientInterceptors, WorkflowClientInterceptor } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client/index.js';
import type { WorkerOptions } from '@temporalio/worker';
import { tracing } from './tracing';
import { workflowInterceptorsPath } from '../paths';
import { carriesSampledTrace } from '../temporal/trace-header';

/** The workflow interceptors' module, bundled with the workflows wherever a bundle is built. */
export const WORKFLOW_TRACING_MODULES = [workflowInterceptorsPath];

/**
 * The client's spans and trace header, only within a sampled span (a traced request, a traced
 * activity): a call the sampler left out, or one made outside any trace (housekeeping), adds
 * no header, so its run makes no spans and starts no orphan trace. With tracing off, none.
 */
export function tracingClientInterceptors(): ClientInterceptors {
  if (!tracing().enabled) return {};
  const otel = new OpenTelemetryWorkflowClientInterceptor();
  const sampled = () => ((trace.getSpanContext(context.active())?.traceFlags ?? 0) & TraceFlags.SAMPLED) === TraceFlags.SAMPLED;
  const methods = Object.getOwnPropertyNames(OpenTelemetryWorkflowClientInterceptor.prototype).filter((m) => m !== 'constructor');
  const gated = Object.fromEntries(
    methods.map((m) => [
      m,
      (input: unknown, next: (input: unknown) => unknown) =>
        sampled() ? (otel as unknown as Record<string, (i: unknown, n: unknown) => unknown>)[m]!(input, next) : next(input),
    ]),
  );
  return { workflow: [gated as WorkflowClientInterceptor] };
}

/** A worker's interceptors and the workflow spans' sink (the worker module loads only in worker roles). */
export async function tracingWorkerOptions(): Promise<Pick<WorkerOptions, 'interceptors' | 'sinks'>> {
  const { makeWorkflowExporter, OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor } =
    await import('@temporalio/interceptors-opentelemetry/lib/worker/index.js');
  const { processor, resource } = tracing();
  return {
    interceptors: {
      client: tracingClientInterceptors(),
      // An activity of a run left out of tracing (or of none) makes no span: no orphan traces.
      activity: [
        (ctx) => {
          const inbound = new OpenTelemetryActivityInboundInterceptor(ctx);
          return {
            inbound: { execute: (input, next) => (carriesSampledTrace(input.headers) ? inbound.execute(input, next) : next(input)) },
            outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
          };
        },
      ],
      workflowModules: WORKFLOW_TRACING_MODULES,
    },
    sinks: { exporter: makeWorkflowExporter(processor, resource) },
  };
}
