// The downstream child workflow, one per upload (ID `downstream/{uploadId}`): it runs the
// pipeline version the upload was committed with. Announce the upload, run each step that
// applies to the file on the transcode task queue, record the outcome, announce the
// renditions. Webhook event ids are derived from the upload, so every retry of a delivery
// carries the same `webhook-id`.
import { proxyActivities, proxyLocalActivities, setCurrentDetails } from '@temporalio/workflow';
import { announcer } from './announce';
import { downstreamV1 } from './downstream-v1';
import type { Activities } from '../activities';
import { eventId, type DownstreamInput, type DownstreamResult, type EventType, type StepResult } from '../src/downstream/types';
import { idleReason, isGate, processingOutcome, stepApplies, type ProcessingStep } from '../src/pipelines/steps';

// Short database steps run as local activities: no task-queue round trip each.
const { planDownstream, markUploadProcessed, openGate, markRejected } = proxyLocalActivities<Activities>({
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
  const { pipeline, endpoints } = await planDownstream({ tenantId: input.tenantId, uploadId: input.uploadId });
  const deliveries: Record<string, string> = {};
  const announce = announcer(endpoints, input.webhookRetry, deliveries);
  const announced: Promise<void>[] = [];
  const event = (type: EventType, data: Record<string, unknown>, timestamp: string) =>
    announced.push(
      announce({ id: eventId(input.uploadId, type), type, tenantId: input.tenantId, uploadId: input.uploadId, data }, timestamp),
    );
  const label = `pipeline ${pipeline.name} v${pipeline.version}`;

  const uploadData = {
    uploadId: input.uploadId,
    storageKey: input.storageKey,
    bytes: input.bytes,
    sha256: input.sha256,
    contentType: input.contentType,
    fileName: input.fileName,
    createdAt: input.createdAt,
    pipeline: { name: pipeline.name, version: pipeline.version },
    ...(input.attribution ?? {}),
  };
  // The steps that apply to the file, in the declared order, gates first; the others never
  // leave the workflow (no task-queue trip).
  const applying = [...pipeline.steps.entries()].filter(
    (entry): entry is [number, ProcessingStep] => entry[1].type !== 'webhook' && stepApplies(entry[1], input.contentType),
  );
  const gates = applying.filter(([, step]) => isGate(step));
  const results: StepResult[] = [];
  /** Runs the steps one at a time; the first that rejects the upload ends the pipeline. */
  const runSteps = async (steps: [number, ProcessingStep][]): Promise<StepResult | undefined> => {
    for (const [index, step] of steps) {
      setCurrentDetails(`${label}: step ${index + 1} of ${pipeline.steps.length}, ${step.type}`);
      const result = await stepActivity(input, step, index).runStep({
        upload: input,
        step,
        ref: { pipeline: pipeline.name, version: pipeline.version, index },
      });
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

/** A step's activity: on the transcode queue, with a summary the Temporal UI shows. */
function stepActivity(input: DownstreamInput, step: ProcessingStep, index: number) {
  return proxyActivities<Activities>({
    summary: `Step ${index + 1}: ${step.type} of ${input.contentType} (${input.bytes} bytes)`,
    taskQueue: input.transcodeQueue,
    startToCloseTimeout: '30 minutes',
    heartbeatTimeout: '10 seconds',
    // Bounded: a step that keeps failing (a crashing worker, a poisoned file) ends, and the
    // upload stays committed; media that defeats the tools is a 'failed' outcome, not a retry.
    // A scan whose clamd is down is retried on this schedule (SCAN_TRIES) before it is not_scanned.
    retry: { initialInterval: '1 second', maximumInterval: '1 minute', maximumAttempts: 5, nonRetryableErrorTypes: ['object_missing'] },
  });
}
