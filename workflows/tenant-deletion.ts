// The deletion of a tenant (ID `tenant-delete/{tenantId}`; a repeated DELETE attaches to
// it): closed first (no row of it can be written from then on, its credentials and webhook
// endpoints gone), then swept (its open sessions ended, its other runs terminated, every
// upload erased by its own deletion run), then its data keys
// destroyed and what it kept besides its uploads scrubbed. Its payloads are the
// deployment's (payload-scope.ts): its result outlives the tenant's keys.
import { ApplicationFailure, proxyActivities, proxyLocalActivities, setCurrentDetails } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { failureTypes } from '../src/temporal/names';
import type { TenantDeletionInput, TenantDeletionResult } from '../src/temporal/definitions';
import { stepLabels } from '../src/temporal/step-labels';

const step = proxyLocalActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

export async function tenantDeletionWorkflow(input: TenantDeletionInput): Promise<TenantDeletionResult> {
  const { tenantId } = input;
  const closed = await step.closeTenant({ tenantId });
  if (!closed) throw ApplicationFailure.nonRetryable(`No tenant ${tenantId}`, failureTypes.notFound);

  setCurrentDetails('ending sessions and jobs, erasing every upload');
  const swept = await proxyActivities<Activities>({
    summary: stepLabels.sweepTenant,
    startToCloseTimeout: '7 days',
    heartbeatTimeout: '30 seconds',
    retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
  }).sweepTenant({ tenantId, webhookRetry: input.webhookRetry });

  // Listing and deleting what is left under its prefix may take a while for a large tenant.
  const erased = await proxyLocalActivities<Activities>({
    startToCloseTimeout: '10 minutes',
    retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
  }).eraseTenant({ tenantId });
  setCurrentDetails(`erased: ${erased.uploadsErased} uploads, ${erased.dataKeysDestroyed} data keys destroyed`);
  return { tenantId, closedAt: closed.closedAt, ...swept, ...erased };
}
