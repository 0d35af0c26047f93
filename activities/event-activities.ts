// The event log sent again: a recorded event to an endpoint (a manual redelivery or a
// recovery, through the same delivery as the first), and pages of what an endpoint missed.
import type { Pool } from '../src/db/pool';
import { failedDeliveries, findEvent } from '../src/db/queries/events';
import type { ListPosition } from '../src/db/queries/keyset';
import type { EventType, WebhookEvent } from '../src/downstream/events';
import type { DeliveryOutcome, WebhookActivities } from './webhook-activities';
import { findUploadById } from '../src/db/queries/uploads';
import { linkToCommit } from '../src/telemetry/context';

export function createEventActivities({ pool }: { pool: Pool }, webhooks: Pick<WebhookActivities, 'deliverWebhook'>) {
  return {
    /**
     * Sends a recorded event to an endpoint again (same webhook-id, same body): a manual
     * redelivery or a recovery. `gone` when the event has expired from the log.
     */
    async redeliverEvent(a: {
      tenantId: string;
      eventId: string;
      endpointId: string;
      trigger: 'manual' | 'recover';
    }): Promise<DeliveryOutcome | 'event_gone'> {
      const row = await findEvent(pool, a.tenantId, a.eventId);
      if (!row) return 'event_gone';
      // A redelivery is a trace of its own (its request's, or a recovery's), linked to the upload's commit.
      if (row.upload_id) linkToCommit((await findUploadById(pool, row.upload_id))?.traceparent, 'redelivery');
      const sent = JSON.parse(row.payload) as { timestamp: string; data: Record<string, unknown> };
      const event: WebhookEvent = {
        id: row.id,
        type: row.type as EventType,
        tenantId: row.tenant_id,
        uploadId: row.upload_id,
        data: sent.data,
      };
      return webhooks.deliverWebhook({ event, endpointId: a.endpointId, timestamp: sent.timestamp, trigger: a.trigger });
    },

    /** A page of an endpoint's undelivered events in [since, until), after a position (recoveries). */
    async listUndelivered(a: {
      endpointId: string;
      since: string;
      until: string;
      after: ListPosition | null;
      limit: number;
    }): Promise<{ eventId: string; position: ListPosition }[]> {
      const rows = await failedDeliveries(pool, a.endpointId, new Date(a.since), new Date(a.until), a.after, a.limit);
      return rows.map((r) => ({ eventId: r.event_id, position: { createdMicros: r.created_micros, id: r.event_id } }));
    },
  };
}
