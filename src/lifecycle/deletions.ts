// Starting and awaiting deletions. One workflow per upload, `delete/{uploadId}`: a repeated
// or concurrent delete (the same request retried, a batch naming it again, retention)
// attaches to the run that exists, or finds the one that finished.
import type { Client, WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, WorkflowFailedError, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { dependency, problem } from '../errors';
import {
  purgeUploadUpdate,
  restoreUploadUpdate,
  type DeletionInput,
  type DeletionReason,
  type DeletionResult,
  type RestoredUpload,
} from '../temporal/definitions';
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

  /**
   * Starts the deletion of an upload made under `key`, or finds the one already started;
   * `graceSeconds`: the tenant's restore window, for a deletion a request asked for.
   */
  async start(tenantId: string, uploadId: string, key: string, reason: DeletionReason, graceSeconds = 0): Promise<WorkflowHandle> {
    this.deps.answers?.forget(tenantId, key);
    const workflowId = workflowIds.deletion(uploadId);
    const input: DeletionInput = {
      tenantId,
      uploadId,
      reason,
      webhookRetry: this.deps.webhookRetry,
      ...(graceSeconds > 0 ? { graceSeconds } : {}),
    };
    return startOrAttach(this.deps.temporal, workflowTypes.deletion, {
      workflowId,
      taskQueue: this.deps.taskQueue,
      args: [input],
      // A run may start again after one that ended: the upload was held, or restored and deleted again.
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
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

  /** Takes the upload's deletion back within its window; 410 once the window has closed. */
  async restore(uploadId: string): Promise<RestoredUpload> {
    return this.update(uploadId, () =>
      this.deps.temporal.workflow.getHandle(workflowIds.deletion(uploadId)).executeUpdate(restoreUploadUpdate),
    );
  }

  /** Ends the upload's restore window now: its erasure starts. */
  async purge(uploadId: string): Promise<void> {
    await this.update(uploadId, () =>
      this.deps.temporal.workflow.getHandle(workflowIds.deletion(uploadId)).executeUpdate(purgeUploadUpdate),
    );
  }

  private update<T>(uploadId: string, send: () => Promise<T>): Promise<T> {
    return dependency('temporal_unavailable', async () => {
      try {
        return await send();
      } catch (err) {
        // Refused (the window closed, or the run has ended): the upload is past taking back.
        const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
        if (cause instanceof ApplicationFailure && cause.type === failureTypes.windowClosed)
          throw problem('upload_deleted', `${cause.message}: the upload is being erased.`, { extra: { uploadId } });
        if (err instanceof WorkflowNotFoundError)
          throw problem('upload_deleted', 'The upload is past its restore window.', { extra: { uploadId } });
        throw err;
      }
    });
  }
}
