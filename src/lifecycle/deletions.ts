// Starting and awaiting deletions. One workflow per upload, `delete/{uploadId}`: a repeated
// or concurrent delete (the same request retried, a batch naming it again, retention)
// attaches to the run that exists, or finds the one that finished.
import type { Client, WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { dependency, problem } from '../errors';
import type { DeletionInput, DeletionReason, DeletionResult } from '../temporal/definitions';
import type { WebhookRetrySchedule } from '../downstream/types';
import { failureTypes, searchAttributes, workflowIds, workflowTypes } from '../temporal/names';
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
      // A run that failed (the upload was held) may run again once the hold is released.
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
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
      dependency('temporal_unavailable', async () => {
        try {
          return (await handle.result()) as DeletionResult;
        } catch (err) {
          // A hold placed between the request's check and the tombstone: nothing was deleted.
          if (err instanceof WorkflowFailedError && err.cause instanceof ApplicationFailure && err.cause.type === failureTypes.legalHold)
            throw problem('legal_hold', 'The upload was placed under a legal hold: nothing was deleted.');
          throw err;
        }
      }),
      waitMs,
    );
  }
}
