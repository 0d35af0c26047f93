// The OpenTelemetry workflow interceptors (@temporalio/interceptors-opentelemetry), engaged
// only for a run whose start, update or signal carried a sampled trace context: with tracing
// off the clients send none, and a request the sampler left out costs the sandbox nothing (its
// activities then carry no context, and the worker does not trace them either). A run's
// decision comes from its history's headers, so a replay decides the same.
import type {
  ActivityInput,
  ContinueAsNewInput,
  DisposeInput,
  GetLogAttributesInput,
  LocalActivityInput,
  Next,
  SignalInput,
  SignalWorkflowInput,
  StartChildWorkflowExecutionInput,
  UpdateInput,
  WorkflowExecuteInput,
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptors,
  WorkflowInternalsInterceptor,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import type { Payload } from '@temporalio/common';
import type * as OtelWorkflow from '@temporalio/interceptors-opentelemetry/lib/workflow';
import { carriesSampledTrace } from '../src/temporal/trace-header';

/**
 * OpenTelemetry's modules, evaluated in a run's sandbox only once one of its calls carries a
 * sampled trace: each run evaluates its own, and for an untraced run they were a fifth of the
 * workflow thread's time (bench/HISTORY.md, #42).
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const loadOtel = (): typeof OtelWorkflow => require('@temporalio/interceptors-opentelemetry/lib/workflow');

export const interceptors = (): WorkflowInterceptors => {
  let otel:
    | {
        inbound: OtelWorkflow.OpenTelemetryInboundInterceptor;
        outbound: OtelWorkflow.OpenTelemetryOutboundInterceptor;
        module: typeof OtelWorkflow;
      }
    | undefined;
  /** The OpenTelemetry interceptors once a call carried a trace context; undefined until then. */
  const traced = (headers?: Record<string, Payload>) => {
    if (!otel && carriesSampledTrace(headers)) {
      const module = loadOtel();
      otel = { inbound: new module.OpenTelemetryInboundInterceptor(), outbound: new module.OpenTelemetryOutboundInterceptor(), module };
    }
    return otel;
  };

  const inbound: WorkflowInboundCallsInterceptor = {
    execute: (input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>) =>
      traced(input.headers) ? otel!.inbound.execute(input, next) : next(input),
    handleSignal: (input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>) =>
      traced(input.headers) ? otel!.inbound.handleSignal(input, next) : next(input),
    handleUpdate: (input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'handleUpdate'>) =>
      traced(input.headers) ? otel!.inbound.handleUpdate(input, next) : next(input),
    validateUpdate: (input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'validateUpdate'>) =>
      traced(input.headers) ? otel!.inbound.validateUpdate(input, next) : next(input),
  };
  const outbound: WorkflowOutboundCallsInterceptor = {
    scheduleActivity: (input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) =>
      otel ? otel.outbound.scheduleActivity(input, next) : next(input),
    scheduleLocalActivity: (input: LocalActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>) =>
      otel ? otel.outbound.scheduleLocalActivity(input, next) : next(input),
    startChildWorkflowExecution: (
      input: StartChildWorkflowExecutionInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>,
    ) => (otel ? otel.outbound.startChildWorkflowExecution(input, next) : next(input)),
    continueAsNew: (input: ContinueAsNewInput, next: Next<WorkflowOutboundCallsInterceptor, 'continueAsNew'>) =>
      otel ? otel.outbound.continueAsNew(input, next) : next(input),
    signalWorkflow: (input: SignalWorkflowInput, next: Next<WorkflowOutboundCallsInterceptor, 'signalWorkflow'>) =>
      otel ? otel.outbound.signalWorkflow(input, next) : next(input),
    getLogAttributes: (input: GetLogAttributesInput, next: Next<WorkflowOutboundCallsInterceptor, 'getLogAttributes'>) =>
      otel ? otel.outbound.getLogAttributes(input, next) : next(input),
  };
  const internals: WorkflowInternalsInterceptor = {
    dispose: (input: DisposeInput, next: Next<WorkflowInternalsInterceptor, 'dispose'>) =>
      otel ? new otel.module.OpenTelemetryInternalsInterceptor().dispose(input, next) : next(input),
  };
  return { inbound: [inbound], outbound: [outbound], internals: [internals] };
};
