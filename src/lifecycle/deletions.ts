// Starting and awaiting deletions. One workflow per upload, `delete/{uploadId}`: a repeated
// or concurrent delete (the same request retried, a batch naming it again, retention)
// attaches to the run that exists, or finds the one that finished.
import type { Client, WorkflowHandle } from '@temporalio/client';
import { dependency } from '../errors';
import type { DeletionInput, DeletionReason, DeletionResult } from '../temporal/definitions';
import type { WebhookRetrySchedule } from '../downstream/types';
import { searchAttributes, workflowIds, workflowTypes } from '../temporal/names';
import { resultWithin } from '../temporal/result-within';
import { startOrAttach } from '../temporal/start-or-attach';
import type { AnswerCache } from '../upload/answer-cache';

export class Deletions {
  constructor(
    private readonly deps: {
      temporal: Client;
      taskQueue: string;
      webhookRetry: WebhookRetrySchedule;
      /** This process's replay cache, if it has one: a deleted upload's key answers 410 from now on. */
      answers?: AnswerCache;
    },
  ) {}

  /** Starts the deletion of an upload made under `key`, or finds the one already started. */
  async start(tenantId: string, uploadId: string, key: string, reason: DeletionReason): Promise<WorkflowHandle> {
    this.deps.answers?.forget(tenantId, key);
    const workflowId = workflowIds.deletion(uploadId);
    const input: DeletionInput = { tenantId, uploadId, reason, webhookRetry: this.deps.webhookRetry };
    return startOrAttach(this.deps.temporal, workflowTypes.deletion, {
      workflowId,
      taskQueue: this.deps.taskQueue,
      args: [input],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      staticSummary: `Delete upload ${uploadId} (${reason})`,
      typedSearchAttributes: [
        { key: searchAttributes.tenant, value: tenantId },
        { key: searchAttributes.phase, value: 'deleting' },
      ],
    });
  }

  /** The deletion's result if it finishes within `waitMs`, else undefined (still running). */
  result(handle: WorkflowHandle, waitMs: number): Promise<DeletionResult | undefined> {
    return resultWithin(
      dependency('temporal_unavailable', () => handle.result() as Promise<DeletionResult>),
      waitMs,
    );
  }
}
