// Sending recorded events again, with their original webhook-id and body. A redelivery
// (`redeliver/{eventId}/{requestId}`) sends one event to the named endpoints; a recovery
// (`recover/{endpointId}/{since}/{until}`) sends every event of a window an endpoint did not
// take, a page at a time (continue-as-new between pages keeps the history short), and
// answers its progress to the `progress` query.
import { continueAsNew, proxyActivities, setCurrentDetails, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { stepLabels } from '../src/temporal/step-labels';
import { recoveryProgressQuery, type RecoveryInput, type RecoveryProgress, type RedeliveryInput } from '../src/temporal/definitions';

const { redeliverEvent } = proxyActivities<Activities>({
  summary: stepLabels.redeliverEvent,
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 5 },
});
const { listUndelivered } = proxyActivities<Activities>({ startToCloseTimeout: '1 minute' });

export async function redeliveryWorkflow(input: RedeliveryInput): Promise<Record<string, string>> {
  const outcomes: Record<string, string> = {};
  await Promise.all(
    input.endpointIds.map(async (endpointId) => {
      try {
        outcomes[endpointId] = await redeliverEvent({ tenantId: input.tenantId, eventId: input.eventId, endpointId, trigger: 'manual' });
      } catch {
        outcomes[endpointId] = 'gave_up';
      }
    }),
  );
  return outcomes;
}

const PAGE = 100;
const PARALLEL = 10;

export async function recoveryWorkflow(input: RecoveryInput): Promise<RecoveryProgress> {
  const progress: RecoveryProgress = input.progress ?? { found: 0, delivered: 0, failed: 0, done: false };
  setHandler(recoveryProgressQuery, () => progress);
  const page = await listUndelivered({
    endpointId: input.endpointId,
    since: input.since,
    until: input.until,
    after: input.after ?? null,
    limit: PAGE,
  });
  progress.found += page.length;
  for (let i = 0; i < page.length; i += PARALLEL) {
    await Promise.all(
      page.slice(i, i + PARALLEL).map(async ({ eventId }) => {
        const outcome = await redeliverEvent({ tenantId: input.tenantId, eventId, endpointId: input.endpointId, trigger: 'recover' }).catch(
          () => 'gave_up',
        );
        if (outcome === 'delivered' || outcome === 'already_delivered') progress.delivered++;
        else progress.failed++;
      }),
    );
    setCurrentDetails(`${progress.delivered} delivered, ${progress.failed} failed of ${progress.found} found so far`);
  }
  if (page.length === PAGE) return continueAsNew<typeof recoveryWorkflow>({ ...input, after: page.at(-1)!.position, progress });
  progress.done = true;
  return progress;
}
