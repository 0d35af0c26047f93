// A record event's announcement: written in the transaction that made the change, announced
// after its commit in a run of its own (`announce/{eventId}`), started again by a retry of the
// same change; the run's ID keeps it to one.
import type { Client } from '@temporalio/client';
import type { Queryable } from '../db/pool';
import { recordEvent } from '../db/queries/events';
import { eventBody, type WebhookEvent } from './events';
import type { WebhookRetrySchedule } from './types';
import type { AnnounceEventInput } from '../temporal/definitions';
import { workflowIds, workflowTypes } from '../temporal/names';
import { startOrAttach } from '../temporal/start-or-attach';

export type TimedEvent = WebhookEvent & { timestamp: string };

export interface AnnounceDeps {
  temporal: Client;
  taskQueue: string;
  webhookRetry: WebhookRetrySchedule;
}

/**
 * Writes the event with the body it is sent with (in the change's transaction) and answers it
 * as recorded: a retry of the change gets the first body back. Undefined when it is not
 * written (its upload is already tombstoned).
 */
export async function writeEvent(tx: Queryable, e: TimedEvent): Promise<TimedEvent | undefined> {
  const payload = eventBody(e, e.timestamp);
  const recorded = await recordEvent(
    tx,
    { id: e.id, tenant_id: e.tenantId, upload_id: e.uploadId, type: e.type, payload },
    { afterTombstone: false },
  );
  return recorded === undefined ? undefined : eventOfPayload(e.id, e.tenantId, e.uploadId, recorded);
}

/** The event as written (for a retry of its change), from its recorded body. */
export function eventOfPayload(id: string, tenantId: string, uploadId: string | null, payload: string): TimedEvent {
  const body = JSON.parse(payload) as { type: WebhookEvent['type']; timestamp: string; data: Record<string, unknown> };
  return { id, type: body.type, tenantId, uploadId, timestamp: body.timestamp, data: body.data };
}

export async function announce(deps: AnnounceDeps, event: TimedEvent): Promise<void> {
  const input: AnnounceEventInput = { tenantId: event.tenantId, event, timestamp: event.timestamp, webhookRetry: deps.webhookRetry };
  await startOrAttach(deps.temporal, workflowTypes.announceEvent, {
    workflowId: workflowIds.announce(event.id),
    taskQueue: deps.taskQueue,
    args: [input],
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
    staticSummary: `Announce ${event.type} (${event.id}) of ${event.uploadId ? `upload ${event.uploadId}` : 'its subject'}`,
  });
}
