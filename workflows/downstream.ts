// The downstream child workflow, one per upload (ID `downstream/{uploadId}`): it runs the
// pipeline version the upload was committed with. Announce the upload, run each step that
// applies to the file on the transcode task queue, record the outcome, announce the
// renditions. Webhook event ids are derived from the upload, so every retry of a delivery
// carries the same `webhook-id`.
import { proxyActivities, proxyLocalActivities, setCurrentDetails } from '@temporalio/workflow';
import { announcer } from './announce';
import { downstreamV1 } from './downstream-v1';
import type { Activities } from '../activities';
import type { ProcessingStep } from '../src/media/transcode';
import { eventId, type DownstreamInput, type DownstreamResult, type StepResult } from '../src/downstream/types';
import { idleReason, processingOutcome, stepApplies } from '../src/pipelines/steps';

// Short database steps run as local activities: no task-queue round trip each.
const { planDownstream, markUploadProcessed } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

export async function downstreamWorkflow(input: DownstreamInput): Promise<DownstreamResult> {
  if (!input.pipelines) return downstreamV1(input);
  const { pipeline, endpoints } = await planDownstream({ tenantId: input.tenantId, uploadId: input.uploadId });
  const deliveries: Record<string, string> = {};
  const announce = announcer(endpoints, input.webhookRetry, deliveries);

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
  setCurrentDetails(`pipeline ${pipeline.name} v${pipeline.version}: announcing upload.completed`);
  const completed = announce(
    {
      id: eventId(input.uploadId, 'upload.completed'),
      type: 'upload.completed',
      tenantId: input.tenantId,
      uploadId: input.uploadId,
      data: uploadData,
    },
    input.createdAt,
  );
  // One step at a time, in the declared order; steps that do not apply to the file never
  // leave the workflow (no task-queue trip).
  const results: StepResult[] = [];
  for (const [index, step] of pipeline.steps.entries()) {
    if (step.type === 'webhook' || !stepApplies(step, input.contentType)) continue;
    setCurrentDetails(`pipeline ${pipeline.name} v${pipeline.version}: step ${index + 1} of ${pipeline.steps.length}, ${step.type}`);
    results.push(
      await stepActivity(input, step, index).runStep({
        upload: input,
        step,
        ref: { pipeline: pipeline.name, version: pipeline.version, index },
      }),
    );
  }
  const outcome = processingOutcome(results, idleReason(pipeline, input.contentType));
  const renditions = results.flatMap((r) => r.renditions);
  await markUploadProcessed({ uploadId: input.uploadId, outcome });
  setCurrentDetails(`processing ${outcome.status}; announcing upload.processed`);
  const processed = announce(
    {
      id: eventId(input.uploadId, 'upload.processed'),
      type: 'upload.processed',
      tenantId: input.tenantId,
      uploadId: input.uploadId,
      data: { ...uploadData, processing: outcome, renditions },
    },
    new Date().toISOString(),
  );
  await Promise.all([completed, processed]);
  setCurrentDetails(`done: processing ${outcome.status}, ${Object.keys(deliveries).length} deliveries`);
  return { processing: outcome.status, renditions: renditions.map((x) => x.name), deliveries };
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
    retry: { initialInterval: '1 second', maximumInterval: '1 minute', maximumAttempts: 5, nonRetryableErrorTypes: ['object_missing'] },
  });
}
