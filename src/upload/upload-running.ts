// Whether an upload of (tenant, key) is running: its workflow exists and has not closed.
// The other keyed routes ask before they claim a key (an upload writes its key row only at
// commit, so until then Temporal is where the key is held).
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { problem } from '../errors';
import { uploadWorkflowId } from '../temporal/ids';

const DESCRIBE_DEADLINE_MS = 5_000;

/** Where the key's run is: under way, ended (its answer is in Postgres, or on its way), or never started. */
export type UploadRunState = 'running' | 'closed' | 'none';

/** Where a run is, by workflow ID (the latest run of that ID); Temporal not answering is 503. */
export async function workflowRunState(temporal: Client, workflowId: string, deadlineMs = DESCRIBE_DEADLINE_MS): Promise<UploadRunState> {
  try {
    const { status } = await temporal.withDeadline(Date.now() + deadlineMs, () => temporal.workflow.getHandle(workflowId).describe());
    return status.name === 'RUNNING' ? 'running' : 'closed';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return 'none';
    throw problem('temporal_unavailable', undefined, { cause: err });
  }
}

export function uploadRunStateCheck(
  temporal: Client,
  deadlineMs = DESCRIBE_DEADLINE_MS,
): (tenantId: string, key: string) => Promise<UploadRunState> {
  return (tenantId, key) => workflowRunState(temporal, uploadWorkflowId(tenantId, key), deadlineMs);
}

export function uploadRunningCheck(
  temporal: Client,
  deadlineMs = DESCRIBE_DEADLINE_MS,
): (tenantId: string, key: string) => Promise<boolean> {
  const state = uploadRunStateCheck(temporal, deadlineMs);
  return async (tenantId, key) => (await state(tenantId, key)) === 'running';
}
