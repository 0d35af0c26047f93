// Starting and awaiting a tenant's deletion: one run per tenant, `tenant-delete/{tenantId}`;
// a repeated DELETE attaches to the run that exists, or finds the one that finished.
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TenantDeletionInput, TenantDeletionResult } from '../temporal/definitions';
import type { WebhookRetrySchedule } from '../downstream/types';
import { dependency, problem } from '../errors';
import { failureTypes, workflowIds, workflowTypes } from '../temporal/names';
import { resultWithin } from '../temporal/result-within';
import { startOrAttach } from '../temporal/start-or-attach';

export class TenantDeletions {
  constructor(private readonly deps: { temporal: Client; taskQueue: string; webhookRetry: WebhookRetrySchedule }) {}

  /** The deletion's result if it finishes within `waitMs`, else undefined (still running). */
  async run(tenantId: string, waitMs: number): Promise<TenantDeletionResult | undefined> {
    const { temporal } = this.deps;
    const workflowId = workflowIds.tenantDeletion(tenantId);
    const input: TenantDeletionInput = { tenantId, webhookRetry: this.deps.webhookRetry };
    const handle = await startOrAttach(temporal, workflowTypes.tenantDeletion, {
      workflowId,
      taskQueue: this.deps.taskQueue,
      args: [input],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      staticSummary: `Delete tenant ${tenantId}`,
    });
    return resultWithin(
      dependency('temporal_unavailable', () =>
        (handle.result() as Promise<TenantDeletionResult>).catch((err: unknown) => {
          if (err instanceof WorkflowFailedError && err.cause instanceof ApplicationFailure && err.cause.type === failureTypes.notFound)
            throw problem('not_found', 'No such tenant.');
          throw err;
        }),
      ),
      waitMs,
    );
  }
}
