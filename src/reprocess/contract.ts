// The re-processing wing's Temporal contract, beneath every caller (its service, its runs):
// the job's type, ID and input, each upload's re-run ID, and its patches. Pure: workflows
// import it.
import type { WebhookRetrySchedule } from '../downstream/types';

/** The job's run type (the name its function is exported under). */
export const reprocessWorkflowTypes = {
  reprocessJob: 'reprocessJobWorkflow',
} as const;

/** Its runs' IDs, derived from what they are about. */
export const reprocessWorkflowIds = {
  reprocessJob: (jobId: string) => `reprocess-job/${jobId}`,
  /** One per (upload, version) ever: a repeated job finds the done ones done. */
  reprocessUpload: (uploadId: string, pipeline: string, version: number) => `reprocess/${uploadId}/${pipeline}/v${version}`,
} as const;

/** Its runs' patches (`patched(id)`). */
export const reprocessPatches = {
  /** A re-processing child's steps wait for their activities' cancellation. */
  reprocessStepWaitsForCancel: 'reprocess-step-waits-for-cancel',
} as const;

/** A re-processing job (ID `reprocess-job/{jobId}`): one pipeline version over a fixed set of uploads. */
export interface ReprocessJobInput {
  jobId: string;
  tenantId: string;
  pipeline: string;
  version: number;
  concurrency: number;
  transcodeQueue: string;
  webhookRetry: WebhookRetrySchedule;
  /** Where the previous run stopped (continue-as-new). */
  after?: string | null;
}
