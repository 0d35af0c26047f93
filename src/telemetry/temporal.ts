// Traces across Temporal's hops (@temporalio/interceptors-opentelemetry, at the SDK's
// version): the client puts the active span's context in each start, update and signal's
// headers; the workflow's interceptors (in its bundle, workflows/tracing.ts) record the
// workflow and each activity it schedules and hand that context on; the worker's activity interceptor continues the trace,
// so an activity retried after its worker died is still in the upload's trace. The workflow
// sandbox's spans reach the process's span processor through a sink. With tracing off the
// clients send no trace header, so neither the workflows nor the activities make spans.
import type { ClientInterceptors } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client/index.js';
import type { WorkerOptions } from '@temporalio/worker';
import { tracing } from './tracing';
import { workflowInterceptorsPath } from '../paths';

/** The workflow interceptors' module, bundled with the workflows wherever a bundle is built. */
export const WORKFLOW_TRACING_MODULES = [workflowInterceptorsPath];

/** With tracing off, none: no trace header reaches a workflow, whose sandbox then makes no spans. */
export function tracingClientInterceptors(): ClientInterceptors {
  return tracing().enabled ? { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } : {};
}

/** A worker's interceptors and the workflow spans' sink (the worker module loads only in worker roles). */
export async function tracingWorkerOptions(): Promise<Pick<WorkerOptions, 'interceptors' | 'sinks'>> {
  const { makeWorkflowExporter, OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor } =
    await import('@temporalio/interceptors-opentelemetry/lib/worker/index.js');
  const { processor, resource } = tracing();
  return {
    interceptors: {
      client: tracingClientInterceptors(),
      activity: [
        (ctx) => ({
          inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
          outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
      workflowModules: WORKFLOW_TRACING_MODULES,
    },
    sinks: { exporter: makeWorkflowExporter(processor, resource) },
  };
}
