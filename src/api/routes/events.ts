// The event log: GET /v1/events (a page at a time), GET /v1/events/{id} with its deliveries
// and every attempt, POST /v1/events/{id}/redeliver, and an endpoint's recovery of a window
// (POST /v1/webhook-endpoints/{id}/recover, polled at …/recoveries/{recoveryId}). A
// redelivery sends the recorded body with the original webhook-id, so receivers dedupe.
import { createRoute, z } from '@hono/zod-openapi';
import type { Config } from '../../config';
import type { Pool } from '../../db/pool';
import { findEvent, listAttempts, listEventDeliveries, listEvents, type EventRow } from '../../db/queries/events';
import { findEndpoint } from '../../db/queries/webhooks';
import { dependency, problem } from '../../errors';
import { resultWithin } from '../../temporal/result-within';
import type { Redeliveries } from '../../lifecycle/redeliveries';
import { header } from '../../http/headers';
import { jsonBody } from '../../http/json-body';
import { idempotentRoute, type IdempotentRouteOptions } from '../../http/idempotent-route';
import { COMMON_V1_PROBLEMS, IDEMPOTENT_PROBLEMS, problems, route, router, jsonRequestBody } from '../../http/openapi';
import { encodeCursor } from '../../http/list-query';
import { parseEventQuery } from '../parse/list-query';
import { parsePrefer } from '../../http/parse/request-headers';
import { EventDetail, EventList, ListEventsQuery, Recover, Recovery, RedeliveryStarted, Redeliver } from '../webhook-schemas';
import { IdempotencyKey, PreferHeader, Uuid } from '../../http/schemas';
import { requires } from '../../http/scopes';

const EventId = z
  .string()
  .regex(/^evt_[0-9a-z_]{1,80}$/)
  .openapi({ example: 'evt_0b8f7a4e2f4c4d7e9b593c1b8e0a6d21_completed' });

export function eventRoutes(deps: { pool: Pool; redeliveries: Redeliveries; config: Config; idempotency: IdempotentRouteOptions }) {
  const { pool, redeliveries, config } = deps;
  const app = router();

  const tenantEvent = async (tenantId: string, id: string) => {
    const event = EventId.safeParse(id).success ? await dependency('database_unavailable', () => findEvent(pool, tenantId, id)) : undefined;
    if (!event) throw problem('not_found', 'No such event (events are kept for EVENT_RETENTION_DAYS).');
    return event;
  };

  route(app, listEventsRoute, async function listTenantEvents(c) {
    const { filter, after, limit } = parseEventQuery(c.req.query());
    const rows = await dependency('database_unavailable', () => listEvents(pool, c.get('tenantId'), filter, after, limit + 1));
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return c.json({
      items: page.map(eventSummary),
      nextCursor: rows.length > limit && last ? encodeCursor({ createdMicros: last.created_micros, id: last.id }) : null,
    });
  });

  route(app, getEventRoute, async function getEvent(c) {
    const event = await tenantEvent(c.get('tenantId'), c.req.param('id')!);
    const [deliveries, attempts] = await dependency('database_unavailable', () =>
      Promise.all([listEventDeliveries(pool, event.id), listAttempts(pool, event.id)]),
    );
    return c.json({
      ...eventSummary(event),
      payload: JSON.parse(event.payload) as Record<string, unknown>,
      deliveries: deliveries.map((d) => ({
        endpointId: d.endpoint_id,
        attempts: d.attempts,
        lastStatus: d.last_status,
        lastError: d.last_error,
        deliveredAt: d.delivered_at?.toISOString() ?? null,
      })),
      attempts: attempts.map((a) => ({
        endpointId: a.endpoint_id,
        trigger: a.trigger,
        attemptedAt: a.attempted_at.toISOString(),
        durationMs: a.duration_ms,
        status: a.status,
        error: a.error,
        delivered: a.delivered,
      })),
    });
  });

  route(app, redeliverRoute, idempotentRoute(deps.idempotency), async function redeliverEvent(c) {
    const tenantId = c.get('tenantId');
    const event = await tenantEvent(tenantId, c.req.param('id')!);
    const body = await jsonBody(c, Redeliver);
    const { waitMs } = parsePrefer(header(c, 'prefer'), 0, config.MAX_WAIT_SECONDS);
    let endpointIds: string[];
    if (body.endpointId) {
      const endpoint = await dependency('database_unavailable', () => findEndpoint(pool, body.endpointId!));
      if (!endpoint || endpoint.tenant_id !== tenantId) throw problem('not_found', 'No such webhook endpoint.');
      endpointIds = [endpoint.id];
    } else {
      // The endpoints the event was addressed to; one added since must be named.
      endpointIds = (await dependency('database_unavailable', () => listEventDeliveries(pool, event.id))).map((d) => d.endpoint_id);
    }
    const run = await redeliveries.redeliver({ tenantId, eventId: event.id, endpointIds });
    const outcomes = waitMs > 0 ? await resultWithin(run.result() as Promise<Record<string, string>>, waitMs) : undefined;
    return c.json({ redeliveryId: run.workflowId, eventId: event.id, endpointIds, outcomes: outcomes ?? null }, outcomes ? 200 : 202);
  });

  route(app, recoverRoute, idempotentRoute(deps.idempotency), async function recoverEndpoint(c) {
    const tenantId = c.get('tenantId');
    const endpointId = c.req.param('id')!;
    const endpoint = Uuid.safeParse(endpointId).success
      ? await dependency('database_unavailable', () => findEndpoint(pool, endpointId))
      : undefined;
    if (!endpoint || endpoint.tenant_id !== tenantId) throw problem('not_found', 'No such webhook endpoint.');
    const body = await jsonBody(c, Recover);
    const since = new Date(body.since).toISOString();
    const until = new Date(body.until ?? Date.now()).toISOString();
    if (since >= until) throw problem('body_invalid', 'since must be before until.');
    const run = await redeliveries.recover({ tenantId, endpointId, since, until });
    return c.json({ recoveryId: run.workflowId, endpointId, since, until, found: 0, delivered: 0, failed: 0, done: false }, 202, {
      location: `/v1/webhook-endpoints/${endpointId}/recoveries/${encodeURIComponent(run.workflowId)}`,
    });
  });

  route(app, recoveryRoute, async function getRecovery(c) {
    const tenantId = c.get('tenantId');
    const endpointId = c.req.param('id')!;
    const recoveryId = c.req.param('recoveryId')!;
    const endpoint = Uuid.safeParse(endpointId).success
      ? await dependency('database_unavailable', () => findEndpoint(pool, endpointId))
      : undefined;
    const [, ofEndpoint, since, until] = recoveryId.split('/');
    if (!endpoint || endpoint.tenant_id !== tenantId || ofEndpoint !== endpointId || !since || !until)
      throw problem('not_found', 'No such recovery.');
    const progress = await redeliveries.progress(recoveryId);
    if (!progress) throw problem('not_found', 'No such recovery.');
    return c.json({ recoveryId, endpointId, since, until, ...progress });
  });

  return app;
}

function eventSummary(e: EventRow) {
  return { id: e.id, type: e.type, uploadId: e.upload_id, createdAt: e.created_at.toISOString() };
}

const listEventsRoute = createRoute({
  method: 'get',
  path: '/events',
  tags: ['webhooks'],
  summary: "The tenant's webhook events, newest first, a page at a time",
  security: requires('webhooks:manage'),
  request: { query: ListEventsQuery },
  responses: {
    200: { description: 'One page', content: { 'application/json': { schema: EventList } } },
    ...problems(...COMMON_V1_PROBLEMS, 'query_invalid'),
  },
});

const getEventRoute = createRoute({
  method: 'get',
  path: '/events/{id}',
  tags: ['webhooks'],
  summary: 'An event with its body, its delivery per endpoint and every attempt',
  security: requires('webhooks:manage'),
  request: { params: z.object({ id: EventId }) },
  responses: {
    200: { description: 'The event', content: { 'application/json': { schema: EventDetail } } },
    ...problems(...COMMON_V1_PROBLEMS, 'not_found'),
  },
});

const redeliverRoute = createRoute({
  method: 'post',
  path: '/events/{id}/redeliver',
  tags: ['webhooks'],
  summary: 'Send an event again, with its original webhook-id and body',
  description:
    'To the endpoints it was addressed to, or to the one named (an endpoint added after the event only when named). Sent even when ' +
    'delivered before (receivers dedupe on webhook-id). An automatic retry in flight and a redelivery never send at the same time, so a race ' +
    'adds at most one copy. 200 with each outcome when done within `Prefer: wait=N`, else 202.',
  security: requires('webhooks:manage'),
  request: {
    params: z.object({ id: EventId }),
    headers: z.object({ 'idempotency-key': IdempotencyKey.optional(), prefer: PreferHeader.optional() }),
    body: jsonRequestBody(Redeliver, { endpointId: '…' }),
  },
  responses: {
    200: { description: 'Done', content: { 'application/json': { schema: RedeliveryStarted } } },
    202: { description: 'Started', content: { 'application/json': { schema: RedeliveryStarted } } },
    ...problems(...COMMON_V1_PROBLEMS, ...IDEMPOTENT_PROBLEMS, 'not_found', 'header_invalid', 'temporal_unavailable'),
  },
});

const recoverRoute = createRoute({
  method: 'post',
  path: '/webhook-endpoints/{id}/recover',
  tags: ['webhooks'],
  summary: 'Send again every event of a window this endpoint did not take',
  description:
    'Starts (or, while one runs for the same window, attaches to) a recovery workflow that redelivers each undelivered event recorded in ' +
    '[since, until) (until: now) with its original webhook-id. Poll the Location for its progress.',
  security: requires('webhooks:manage'),
  request: {
    params: z.object({ id: Uuid }),
    headers: z.object({ 'idempotency-key': IdempotencyKey.optional() }),
    body: jsonRequestBody(Recover, { since: '2026-12-01T00:00:00Z' }),
  },
  responses: {
    202: { description: 'Started', content: { 'application/json': { schema: Recovery } } },
    ...problems(...COMMON_V1_PROBLEMS, ...IDEMPOTENT_PROBLEMS, 'not_found', 'temporal_unavailable'),
  },
});

const recoveryRoute = createRoute({
  method: 'get',
  path: '/webhook-endpoints/{id}/recoveries/{recoveryId}',
  tags: ['webhooks'],
  summary: "A recovery's progress",
  security: requires('webhooks:manage'),
  request: { params: z.object({ id: Uuid, recoveryId: z.string() }) },
  responses: {
    200: { description: 'Progress', content: { 'application/json': { schema: Recovery } } },
    ...problems(...COMMON_V1_PROBLEMS, 'not_found', 'temporal_unavailable'),
  },
});
