// Webhook fan-out shared by the workflows that announce events: one delivery activity per
// (event, endpoint), retried on the tenant's schedule; one that exhausts its retries is
// recorded in the result, not fatal.
import { ParentClosePolicy, proxyActivities, proxyLocalActivities, setCurrentDetails, startChild } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { WebhookEvent } from '../src/downstream/events';
import type { AnnounceEventInput } from '../src/temporal/definitions';
import type { WebhookRetrySchedule } from '../src/downstream/types';
import { workflowIds } from '../src/temporal/names';

/** Delivers an event to each endpoint, writing each outcome into `deliveries`. */
export function announcer(endpoints: string[], r: WebhookRetrySchedule, deliveries: Record<string, string>) {
  const deliverWith = (summary: string) =>
    proxyActivities<Activities>({
      summary,
      startToCloseTimeout: r.attemptTimeoutSeconds * 1000,
      retry: {
        initialInterval: r.initialSeconds * 1000,
        backoffCoefficient: r.coefficient,
        maximumInterval: r.maxIntervalSeconds * 1000,
        maximumAttempts: r.maxAttempts,
      },
    }).deliverWebhook;
  return async function announce(event: WebhookEvent, timestamp: string): Promise<void> {
    await Promise.all(
      endpoints.map(async (endpointId) => {
        try {
          const deliver = deliverWith(`Deliver ${event.type} (${event.id}) to endpoint ${endpointId}`);
          deliveries[`${event.type} → ${endpointId}`] = await deliver({ event, endpointId, timestamp });
        } catch {
          deliveries[`${event.type} → ${endpointId}`] = 'gave_up';
        }
      }),
    );
  };
}

const { listWebhookEndpoints } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

/**
 * An event announced to each of the tenant's endpoints in a run of its own (ID
 * `announce/{eventId}`), started and left by the run that caused it: a receiver that never
 * answers holds up only this run, never the answer of what it announces.
 */
export async function announceEventWorkflow(input: AnnounceEventInput): Promise<Record<string, string>> {
  setCurrentDetails(`announcing ${input.event.type}`);
  const deliveries: Record<string, string> = {};
  await announcer(await listWebhookEndpoints(input.tenantId), input.webhookRetry, deliveries)(input.event, input.timestamp);
  return deliveries;
}

/**
 * Starts the event's own announcing run and leaves it (its caller's answer waits for no
 * receiver); the run's ID, `announce/{eventId}`, keeps a retried start to one.
 */
export async function startAnnouncing(input: AnnounceEventInput, staticSummary?: string): Promise<void> {
  await startChild(announceEventWorkflow, {
    workflowId: workflowIds.announce(input.event.id),
    args: [input],
    parentClosePolicy: ParentClosePolicy.ABANDON,
    ...(staticSummary === undefined ? {} : { staticSummary }),
  });
}
