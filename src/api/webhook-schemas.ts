// The schemas of webhook endpoints and the event log: endpoints, events, redelivery and
// recovery requests and answers.
import { z } from '@hono/zod-openapi';
import { EVENT_TYPES, instant, Uuid, NextCursor } from '../http/schemas';
import { shownOnce } from '../http/redact';
import { ListUploadsQuery } from './schemas';

export const CreateWebhookEndpoint = z
  .object({
    url: z.string().min(1).max(2048).openapi({
      description: 'http(s) URL; private and loopback addresses are refused unless allowed by configuration.',
      example: 'https://example.com/hooks/oncely',
    }),
    description: z.string().max(500).optional(),
  })
  .strict()
  .openapi('CreateWebhookEndpoint');

export const ListEventsQuery = z
  .object({
    cursor: ListUploadsQuery.shape.cursor,
    limit: ListUploadsQuery.shape.limit,
    type: z.enum(EVENT_TYPES, { error: `type must be one of ${EVENT_TYPES.join(', ')}.` }).optional(),
    uploadId: Uuid.optional().openapi({ description: "Only this upload's events." }),
    deliveryFailed: z
      .enum(['true', 'false'], { error: 'deliveryFailed must be true or false.' })
      .optional()
      .openapi({ description: '`true`: only events some endpoint has not taken (attempted, not delivered).' }),
  })
  .strict();

export const WebhookEventSummary = z
  .object({
    id: z.string(),
    type: z.string(),
    uploadId: Uuid.nullable().openapi({ description: "The upload it is about; null for a storage migration's event." }),
    createdAt: z.string(),
  })
  .openapi('WebhookEventSummary');

export const EventList = z.object({ items: z.array(WebhookEventSummary), nextCursor: z.string().nullable() }).openapi('EventList');

export const EventDetail = WebhookEventSummary.extend({
  payload: z.record(z.string(), z.unknown()).openapi({ description: 'The body every delivery of the event sends, byte for byte.' }),
  deliveries: z.array(
    z.object({
      endpointId: Uuid,
      attempts: z.number().int(),
      lastStatus: z.number().int().nullable(),
      lastError: z.string().nullable(),
      deliveredAt: z.string().nullable(),
    }),
  ),
  attempts: z.array(
    z.object({
      endpointId: Uuid,
      trigger: z.enum(['automatic', 'manual', 'recover']),
      attemptedAt: z.string(),
      durationMs: z.number().int(),
      status: z.number().int().nullable(),
      error: z.string().nullable(),
      delivered: z.boolean(),
    }),
  ),
}).openapi('EventDetail');

export const Redeliver = z
  .object({ endpointId: Uuid.optional().openapi({ description: 'Only this endpoint (one added after the event must be named).' }) })
  .strict()
  .openapi('Redeliver');

export const RedeliveryStarted = z
  .object({
    redeliveryId: z.string(),
    eventId: z.string(),
    endpointIds: z.array(Uuid),
    outcomes: z.record(z.string(), z.string()).nullable().openapi({ description: 'Per endpoint, once done within the wait.' }),
  })
  .openapi('RedeliveryStarted');

export const Recover = z
  .object({
    since: instant('since'),
    until: instant('until').optional(),
  })
  .strict()
  .openapi('Recover');

export const Recovery = z
  .object({
    recoveryId: z.string(),
    endpointId: Uuid,
    since: z.string(),
    until: z.string(),
    found: z.number().int(),
    delivered: z.number().int(),
    failed: z.number().int(),
    done: z.boolean(),
  })
  .openapi('Recovery');

export const WebhookEndpoint = z
  .object({
    id: Uuid,
    url: z.string(),
    description: z.string(),
    enabled: z.boolean(),
    disabledReason: z.string().nullable(),
    createdAt: z.string(),
  })
  .openapi('WebhookEndpoint');
export const WebhookEndpointCreated = WebhookEndpoint.extend({
  secret: shownOnce({ description: 'Standard Webhooks signing secret (`whsec_…`), shown on creation only.' }),
}).openapi('WebhookEndpointCreated');
export const WebhookEndpointList = z.object({ data: z.array(WebhookEndpoint), nextCursor: NextCursor }).openapi('WebhookEndpointList');
