// The event log with failed deliveries first, one event's page, and redelivery and recovery.
import type { Hono } from 'hono';
import { act, html, noticeOf, problemPage, tenantOnly, type C, type ConsoleDeps, type ConsoleEnv } from '../respond';
import { may } from '../views/kit';
import { liveStream } from './live';
import { eventPage, eventsPage, recoveryPage, type Endpoint, type EventSummary, type Recovery } from '../views/events';
import type { EventDetail } from '../views/upload';

export function eventPages(app: Hono<ConsoleEnv>, deps: ConsoleDeps): void {
  const { api } = deps;
  app.get('/events', async (c) => {
    const caller = tenantOnly(c);
    const q = c.req.query();
    try {
      const [failed, all, endpoints] = await Promise.all([
        api.get<{ items: EventSummary[] }>(caller, '/v1/events', { deliveryFailed: 'true', limit: '20' }),
        api.get<{ items: EventSummary[]; nextCursor: string | null }>(caller, '/v1/events', {
          type: q.type,
          cursor: q.cursor,
          limit: '50',
        }),
        may(caller, 'webhooks:manage')
          ? api.get<{ data: Endpoint[] }>(caller, '/v1/webhook-endpoints').then((r) => r.data)
          : Promise.resolve([] as Endpoint[]),
      ]);
      return html(c, eventsPage(caller, { failed: failed.items, ...all, type: q.type, endpoints, notice: noticeOf(c) }));
    } catch (err) {
      return problemPage(c, err);
    }
  });
  app.get('/events/live', (c) => {
    const caller = tenantOnly(c);
    return liveStream(
      c,
      2000,
      async () => (await api.get<{ items: EventSummary[] }>(caller, '/v1/events', { limit: '1' })).items[0]?.id ?? '',
    );
  });
  app.get('/events/:id', async (c) => {
    const caller = tenantOnly(c);
    try {
      const event = await api.get<EventDetail>(caller, `/v1/events/${encodeURIComponent(c.req.param('id'))}`);
      return html(c, eventPage(caller, { event, notice: noticeOf(c) }));
    } catch (err) {
      return problemPage(c, err);
    }
  });
  app.post('/events/:id/redeliver', (c) =>
    act(c, async (caller, once) => {
      const event = await api.json<{ eventId: string }>(caller, 'POST', `/v1/events/${encodeURIComponent(c.req.param('id'))}/redeliver`, {
        idempotencyKey: once,
        body: {},
      });
      return `/console/events/${event.eventId}?notice=redelivered`;
    }),
  );
  app.post('/endpoints/:id/recover', (c) =>
    act(c, async (caller, once, form) => {
      const started = await api.json<Recovery>(caller, 'POST', `/v1/webhook-endpoints/${encodeURIComponent(c.req.param('id'))}/recover`, {
        idempotencyKey: once,
        body: { since: typeof form.since === 'string' ? form.since : new Date(Date.now() - 86_400_000).toISOString() },
      });
      return `${recoveryPath(started)}&notice=recovering`;
    }),
  );
  // A recovery's progress: its counts, refreshed while it runs.
  const recoveryOf = (c: C) =>
    api.get<Recovery>(
      tenantOnly(c),
      `/v1/webhook-endpoints/${encodeURIComponent(c.req.param('id')!)}/recoveries/${encodeURIComponent(c.req.query('id') ?? '')}`,
    );
  app.get('/endpoints/:id/recovery', async (c) => {
    try {
      const recovery = await recoveryOf(c);
      return html(c, recoveryPage(tenantOnly(c), { recovery, live: recoveryPath(recovery, '/live'), notice: noticeOf(c) }));
    } catch (err) {
      return problemPage(c, err);
    }
  });
  app.get('/endpoints/:id/recovery/live', (c) =>
    liveStream(c, 1000, async () => {
      const r = await recoveryOf(c);
      return `${r.found}/${r.delivered}/${r.failed}/${r.done}`;
    }),
  );
}

/** The console's page of a recovery (its id holds slashes: it goes in the query). */
function recoveryPath(r: Pick<Recovery, 'endpointId' | 'recoveryId'>, suffix = ''): string {
  return `/console/endpoints/${r.endpointId}/recovery${suffix}?id=${encodeURIComponent(r.recoveryId)}`;
}
