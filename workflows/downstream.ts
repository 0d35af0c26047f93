// The downstream child workflow, one per upload (ID `downstream/{uploadId}`): it runs the
// pipeline version the upload was committed with. Announce the upload, run each step that
// applies to the file on the transcode task queue, record the outcome, announce the
// renditions. Webhook event ids are derived from the upload, so every retry of a delivery
// carries the same `webhook-id`.
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  condition,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
} from '@temporalio/workflow';
import { completeStepUpdate } from '../src/temporal/definitions';
import { failureTypes } from '../src/temporal/names';
import { announcer } from './announce';
import { downstreamV1 } from './downstream-v1';
import type { Activities } from '../activities';
import { eventId, uploadEventData, type EventType } from '../src/downstream/events';
import type { DownstreamInput, DownstreamResult } from '../src/downstream/types';
import type { SettledStep, StepDecision, StepResult } from '../src/pipelines/step-results';
import type { PipelineVersion } from '../src/pipelines/steps';
import { idleReason, isGate, processingOutcome, stepApplies, type ProcessingStep } from '../src/pipelines/steps';

// Short database steps run as local activities: no task-queue round trip each.
const { planDownstream, markUploadProcessed, openGate, markRejected, recordStep } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});
// A rejected upload's bytes go as a deleted one's do (the same activities, retry-safe).
const cleanup = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

export async function downstreamWorkflow(input: DownstreamInput): Promise<DownstreamResult> {
  if (!input.pipelines) return downstreamV1(input);
  // The tenant's decisions on async http.call steps; one may come before the step's call is
  // even recorded here, and is kept until the step asks for it.
  const plan: { pipeline?: PipelineVersion } = {};
  const decisions = new Map<number, StepDecision>();
  const undecidable = new Set<number>();
  setHandler(
    completeStepUpdate,
    (d) => {
      if (!decisions.has(d.step)) decisions.set(d.step, d);
      return { step: d.step, outcome: d.outcome };
    },
    {
      validator: (d) => {
        const step = plan.pipeline?.steps[d.step];
        const refuse = (why: string) => {
          throw ApplicationFailure.nonRetryable(why, failureTypes.stepNotWaiting);
        };
        if (step?.type !== 'http.call' || !step.async) refuse(`step ${d.step} is not an async http.call of this upload's pipeline`);
        if (undecidable.has(d.step)) refuse(`step ${d.step} passed its deadline`);
        const prior = decisions.get(d.step);
        if (prior && prior.outcome !== d.outcome) refuse(`step ${d.step} was already decided: ${prior.outcome}`);
      },
    },
  );
  const { pipeline, endpoints } = await planDownstream({ tenantId: input.tenantId, uploadId: input.uploadId });
  plan.pipeline = pipeline;
  const deliveries: Record<string, string> = {};
  const announce = announcer(endpoints, input.webhookRetry, deliveries);
  const announced: Promise<void>[] = [];
  const event = (type: EventType, data: Record<string, unknown>, timestamp: string) =>
    announced.push(
      announce({ id: eventId(input.uploadId, type), type, tenantId: input.tenantId, uploadId: input.uploadId, data }, timestamp),
    );
  const label = `pipeline ${pipeline.name} v${pipeline.version}`;

  const uploadData = { ...uploadEventData(input), pipeline: { name: pipeline.name, version: pipeline.version } };
  // The steps that apply to the file, in the declared order, gates first; the others never
  // leave the workflow (no task-queue trip).
  const applying = [...pipeline.steps.entries()].filter(
    (entry): entry is [number, ProcessingStep] => entry[1].type !== 'webhook' && stepApplies(entry[1], input.contentType),
  );
  const gates = applying.filter(([, step]) => isGate(step));
  const results: StepResult[] = [];
  /**
   * Runs one step. A step whose activity gives up is `failed` — a gate `rejected`: one that
   * cannot be decided fails closed — and an async http.call waits for the tenant's decision
   * until its deadline.
   */
  const runStep = async (index: number, step: ProcessingStep): Promise<StepResult> => {
    const ref = { pipeline: pipeline.name, version: pipeline.version, index };
    const settle = async (result: SettledStep) => {
      await recordStep({ uploadId: input.uploadId, ref, type: step.type, result });
      return result;
    };
    const none = { media: null, renditions: [] };
    let result: StepResult;
    try {
      result = await stepActivity(input, step, index).runStep({ upload: input, step, ref });
    } catch (err) {
      if (isCancellation(err)) throw err;
      const why = err instanceof ActivityFailure && err.cause ? err.cause.message : String(err);
      return settle({ status: isGate(step) ? 'rejected' : 'failed', reason: `${step.type} gave up: ${why}`, ...none });
    }
    if (result.status !== 'waiting' || step.type !== 'http.call') return result;
    setCurrentDetails(`${label}: step ${index + 1} waits for the tenant's decision (at most ${step.deadlineSeconds} s)`);
    if (!(await condition(() => decisions.has(index), step.deadlineSeconds * 1000))) {
      undecidable.add(index);
      return settle({ status: step.gate ? 'rejected' : 'failed', reason: `no decision within ${step.deadlineSeconds} s`, ...none });
    }
    const d = decisions.get(index)!;
    return settle(
      d.outcome === 'accept'
        ? { status: 'succeeded', reason: d.message, ...none, ...(d.data != null ? { data: d.data } : {}) }
        : { status: 'rejected', reason: `refused by the tenant${d.message ? `: ${d.message}` : ''}`, ...none },
    );
  };
  /** Runs the steps one at a time; the first that rejects the upload ends the pipeline. */
  const runSteps = async (steps: [number, ProcessingStep][]): Promise<StepResult | undefined> => {
    for (const [index, step] of steps) {
      setCurrentDetails(`${label}: step ${index + 1} of ${pipeline.steps.length}, ${step.type}`);
      const result = await runStep(index, step);
      results.push(result);
      if (result.status === 'rejected') return result;
    }
    return undefined;
  };

  const heldBack = await runSteps(gates);
  if (heldBack) return reject(heldBack);
  if (gates.length) await openGate({ uploadId: input.uploadId });
  setCurrentDetails(`${label}: announcing upload.completed`);
  // Announced once the upload is available: at its commit, or once its gates passed.
  event('upload.completed', uploadData, gates.length ? new Date().toISOString() : input.createdAt);
  const rejection = await runSteps(applying.filter(([, step]) => !isGate(step)));
  if (rejection) return reject(rejection);

  const outcome = processingOutcome(results, idleReason(pipeline, input.contentType));
  const renditions = results.flatMap((r) => r.renditions);
  await markUploadProcessed({ uploadId: input.uploadId, outcome });
  setCurrentDetails(`processing ${outcome.status}; announcing upload.processed`);
  event('upload.processed', { ...uploadData, processing: outcome, renditions }, new Date().toISOString());
  await Promise.all(announced);
  setCurrentDetails(`done: processing ${outcome.status}, ${Object.keys(deliveries).length} deliveries`);
  return { processing: outcome.status, renditions: renditions.map((x) => x.name), deliveries };

  /** Rejects the upload for good: no longer served, its key answers the rejection, its bytes deleted, upload.rejected sent. */
  async function reject(result: StepResult): Promise<DownstreamResult> {
    const reason = result.reason ?? 'rejected by a step';
    setCurrentDetails(`${label}: rejected (${reason}); deleting its bytes`);
    await markRejected({ uploadId: input.uploadId, reason });
    await cleanup.eraseRenditions({ tenantId: input.tenantId, uploadId: input.uploadId });
    await cleanup.releaseOriginal({ uploadId: input.uploadId });
    await markUploadProcessed({ uploadId: input.uploadId, outcome: { status: 'failed', reason, media: null } });
    event(
      'upload.rejected',
      { ...uploadData, rejection: { reason, ...(result.scan ? { scan: result.scan } : {}) } },
      new Date().toISOString(),
    );
    await Promise.all(announced);
    return { processing: 'failed', renditions: [], deliveries, rejected: reason };
  }
}

/**
 * A step's activity: on the transcode queue, with a summary the Temporal UI shows. With
 * `waitForCancel`, a cancelled run waits until the step has stopped, so what it cleans up
 * afterwards cannot be written again by a step still running.
 */
export function stepActivity(input: DownstreamInput, step: ProcessingStep, index: number, waitForCancel = false) {
  return proxyActivities<Activities>({
    ...(waitForCancel ? { cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED } : {}),
    summary: `Step ${index + 1}: ${step.type} of ${input.contentType} (${input.bytes} bytes)`,
    taskQueue: input.transcodeQueue,
    startToCloseTimeout: '30 minutes',
    heartbeatTimeout: '10 seconds',
    // Bounded: a step that keeps failing (a crashing worker, a poisoned file) ends, and the
    // upload stays committed; media that defeats the tools is a 'failed' outcome, not a retry.
    // A scan whose clamd is down is retried on this schedule (SCAN_TRIES) before it is not_scanned.
    retry: {
      initialInterval: '1 second',
      maximumInterval: '1 minute',
      maximumAttempts: 5,
      nonRetryableErrorTypes: [failureTypes.objectMissing],
    },
  });
}
