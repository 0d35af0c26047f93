// Starting a run whose ID is derived from what it is about, so every repeat (a retried
// request, another replica, a batch naming it again) lands on one run: a running one is
// attached to (USE_EXISTING); a finished one, which the reuse policy refuses to start again,
// is found (its result is the answer).
import { WorkflowExecutionAlreadyStartedError, type Client, type WorkflowHandle, type WorkflowStartOptions } from '@temporalio/client';
import { dependency } from '../errors';

export function startOrAttach(
  temporal: Client,
  workflowType: string,
  options: Omit<WorkflowStartOptions, 'workflowIdConflictPolicy'>,
): Promise<WorkflowHandle> {
  return dependency('temporal_unavailable', async () => {
    try {
      return await temporal.workflow.start(workflowType, { ...options, workflowIdConflictPolicy: 'USE_EXISTING' });
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return temporal.workflow.getHandle(options.workflowId);
      throw err;
    }
  });
}
