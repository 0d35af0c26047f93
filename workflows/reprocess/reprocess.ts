// Re-processing: a job (ID `reprocess-job/{jobId}`) runs one pipeline version over a fixed
// set of uploads, a page at a time with at most `concurrency` uploads at once, and continues
// as new every few pages so its history stays short however many uploads it takes. Each
// upload is its own child, `reprocess/{uploadId}/{pipeline}/v{version}`: one per (upload,
// version) ever, so a repeated job finds the done ones done. A child writes the new
// version's renditions beside the served ones and switches to them in one statement,
// unless the upload serves a newer version by then (the newest version is served, whichever
// job ends last): that child is `superseded` and discards what it made.
import {
  ApplicationFailure,
  CancellationScope,
  ChildWorkflowFailure,
  ParentClosePolicy,
  continueAsNew,
  executeChild,
  isCancellation,
  patched,
  proxyLocalActivities,
  proxyActivities,
  setCurrentDetails,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { Activities } from '../../activities';
import type { DownstreamInput, WebhookRetrySchedule } from '../../src/downstream/types';
import type { ReprocessOutcome, StepResult } from '../../src/pipelines/step-results';
import { processingOutcome } from '../../src/pipelines/steps';
import { stepActivity } from '../downstream';
import { JOB_STEP_OPTIONS } from '../windows';
import { inWindows } from '../../src/temporal/in-windows';
import { failureTypes } from '../../src/temporal/names';

import { reprocessPatches, reprocessWorkflowIds, type ReprocessJobInput } from '../../src/reprocess/contract';

const local = proxyLocalActivities<Activities>(JOB_STEP_OPTIONS);
const cleanup = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

/** Uploads listed per page, and pages per run before it continues as new. */
const PAGE = 50;
const PAGES_PER_RUN = 10;

export async function reprocessJobWorkflow(input: ReprocessJobInput): Promise<void> {
  let after = input.after ?? null;
  try {
    for (let page = 0; ; page++) {
      const ids = await local.listReprocessPage({ jobId: input.jobId, after, limit: PAGE });
      if (!ids.length) break;
      setCurrentDetails(`re-processing with ${input.pipeline} v${input.version}: a page of ${ids.length} after ${after ?? 'the start'}`);
      const items = await inWindows(ids, input.concurrency, (id) => reprocessOne(input, id));
      await local.recordReprocessItems({ jobId: input.jobId, items });
      after = ids.at(-1)!;
      if (page + 1 >= PAGES_PER_RUN || workflowInfo().continueAsNewSuggested)
        await continueAsNew<typeof reprocessJobWorkflow>({ ...input, after });
    }
    await local.finishReprocessJob({ jobId: input.jobId, state: 'completed' });
  } catch (err) {
    if (isCancellation(err))
      await CancellationScope.nonCancellable(() => local.finishReprocessJob({ jobId: input.jobId, state: 'cancelled' }));
    throw err;
  }
}

async function reprocessOne(input: ReprocessJobInput, uploadId: string): Promise<ReprocessOutcome> {
  try {
    const r = await executeChild(reprocessUploadWorkflow, {
      workflowId: reprocessWorkflowIds.reprocessUpload(uploadId, input.pipeline, input.version),
      // One per (upload, version): a failed or cancelled one may run again, a completed one not.
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      staticSummary: `Re-process upload ${uploadId} with ${input.pipeline} v${input.version}`,
      args: [
        {
          tenantId: input.tenantId,
          uploadId,
          pipeline: input.pipeline,
          version: input.version,
          transcodeQueue: input.transcodeQueue,
          webhookRetry: input.webhookRetry,
        },
      ],
    });
    return { uploadId, ...r };
  } catch (err) {
    if (isCancellation(err)) throw err;
    if (err instanceof WorkflowExecutionAlreadyStartedError)
      return { uploadId, outcome: 'skipped', reason: `already re-processed with version ${input.version}` };
    const cause = err instanceof ChildWorkflowFailure ? err.cause : err;
    return { uploadId, outcome: 'failed', reason: cause instanceof Error ? cause.message : String(cause) };
  }
}

export interface ReprocessUploadInput {
  tenantId: string;
  uploadId: string;
  pipeline: string;
  version: number;
  transcodeQueue: string;
  webhookRetry: WebhookRetrySchedule;
}

/** One upload under one version: its rendition steps, then the switch (or, if one fails, nothing of it stays). */
export async function reprocessUploadWorkflow(input: ReprocessUploadInput): Promise<Omit<ReprocessOutcome, 'uploadId'>> {
  const plan = await local.planReprocess(input);
  if ('skip' in plan) return { outcome: 'skipped', reason: plan.skip };
  if ('superseded' in plan) return superseded(plan.superseded);
  const upload: DownstreamInput = {
    ...plan.upload,
    uploadId: input.uploadId,
    tenantId: input.tenantId,
    transcodeQueue: input.transcodeQueue,
    webhookRetry: input.webhookRetry,
    pipelines: true,
  };
  const version = { uploadId: input.uploadId, pipeline: input.pipeline, version: input.version };
  const results: StepResult[] = [];
  // A cancelled job's step may still be writing: the discard below waits for it to stop.
  const waitForCancel = patched(reprocessPatches.reprocessStepWaitsForCancel);
  try {
    for (const [index, step] of plan.steps) {
      setCurrentDetails(`${input.pipeline} v${input.version}: step ${index + 1}, ${step.type}`);
      results.push(
        await stepActivity(upload, step, index, waitForCancel).runStep({
          upload,
          step,
          ref: { pipeline: input.pipeline, version: input.version, index },
        }),
      );
    }
    const failed = results.find((r) => r.status !== 'succeeded');
    if (failed) throw ApplicationFailure.nonRetryable(failed.reason ?? `a step ended ${failed.status}`, failureTypes.stepFailed);
    // Local: one transaction and a few deletes, without another trip through the task queue.
    const switch_ = await local.switchRenditions({ ...version, outcome: processingOutcome(results, null) });
    if (switch_.switched) return { outcome: 'done', reason: null };
    if (switch_.servedVersion === undefined) return { outcome: 'skipped', reason: 'upload deleted' };
    await cleanup.discardVersion(version);
    return superseded(switch_.servedVersion);
  } catch (err) {
    // What this run made goes; the served renditions stay as they were.
    await CancellationScope.nonCancellable(() => cleanup.discardVersion(version));
    if (isCancellation(err)) throw err;
    const cause = err instanceof ApplicationFailure ? err : ((err as { cause?: Error }).cause ?? (err as Error));
    return { outcome: 'failed', reason: cause.message };
  }
}

function superseded(servedVersion: number): Omit<ReprocessOutcome, 'uploadId'> {
  return { outcome: 'superseded', reason: `the upload serves version ${servedVersion}, newer than this one` };
}
