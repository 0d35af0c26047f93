// The event log and redelivery, over real HTTP to a real receiver: every event is kept with
// the body it is sent with and every attempt; a receiver that was down gets each missed
// event once more by a recovery, with the original webhook-id; a manual redelivery racing
// an automatic one adds no copy; bad requests change nothing.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant } from '../../src/tenants';
import { postUpload } from '../helpers/http';
import { eventually } from '../helpers/inspect';
import { startStackOnStore, type TestStack } from '../helpers/stack';
import { WebhookReceiver } from '../support/webhook-receiver';

describe.each(['s3', 'local'] as const)('the event log on the %s store', (kind) => {
  let stack: TestStack;
  const receivers: WebhookReceiver[] = [];
  beforeAll(async () => {
    stack = await startStackOnStore(kind, `events_${kind}`, {
      env: { WEBHOOK_RETRY_MAX_ATTEMPTS: '3', WEBHOOK_RETRY_MAX_INTERVAL_SECONDS: '1' },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    for (const r of receivers) await r.stop();
  });

  type Tenant = { tenantId: string; apiKey: string };
  const call = async (t: Tenant, method: string, pathname: string, json?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${stack.url}${pathname}`, {
      method,
      headers: { authorization: `Bearer ${t.apiKey}`, ...(json !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: json !== undefined ? JSON.stringify(json) : undefined,
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
  };
  async function withReceiver(t: Tenant): Promise<{ receiver: WebhookReceiver; endpointId: string }> {
    const receiver = await new WebhookReceiver().start();
    receivers.push(receiver);
    const res = await call(t, 'POST', '/v1/webhook-endpoints', { url: receiver.url });
    expect(res.status).toBe(201);
    receiver.secret = res.json.secret;
    return { receiver, endpointId: res.json.id };
  }
  const upload = async (t: Tenant, text: string) => {
    const res = await postUpload(stack.url, { apiKey: t.apiKey, key: `ev-${randomUUID()}`, body: Buffer.from(text) });
    expect(res.status).toBe(201);
    return res.json.uploadId as string;
  };
  const eventIds = (uploadId: string) => ({
    completed: `evt_${uploadId.replaceAll('-', '')}_completed`,
    processed: `evt_${uploadId.replaceAll('-', '')}_processed`,
  });

  it('a receiver down for a while: events marked failed, then a recovery delivers each once more with its webhook-id', async () => {
    const tenant = await createTenant(stack.runtime.pool, 'events-down');
    const { receiver, endpointId } = await withReceiver(tenant);
    receiver.fallback = 503;
    const since = new Date(Date.now() - 1000).toISOString();
    const uploadId = await upload(tenant, 'while the receiver was down');
    const ids = eventIds(uploadId);
    // Three automatic attempts each, then the child gives up.
    await eventually(async () => receiver.received.filter((r) => r.id === ids.processed).length === 3, 60_000);
    await eventually(async () => {
      const run = await stack.temporal.workflow.getHandle(`downstream/${uploadId}`).describe();
      return run.status.name !== 'RUNNING';
    }, 60_000);
    const failed = await call(tenant, 'GET', '/v1/events?deliveryFailed=true');
    expect(failed.json.items.map((e: { id: string }) => e.id).sort()).toEqual([ids.completed, ids.processed].sort());
    const detail = await call(tenant, 'GET', `/v1/events/${ids.completed}`);
    expect(detail.status).toBe(200);
    expect(detail.json).toMatchObject({ id: ids.completed, type: 'upload.completed', uploadId, payload: { type: 'upload.completed' } });
    expect(detail.json.deliveries).toEqual([expect.objectContaining({ endpointId, attempts: 3, lastStatus: 503, deliveredAt: null })]);
    expect(detail.json.attempts).toHaveLength(3);
    expect(detail.json.attempts.every((a: any) => a.trigger === 'automatic' && a.status === 503 && !a.delivered && a.durationMs >= 0)).toBe(
      true,
    );
    expect((await call(tenant, 'GET', `/v1/events?uploadId=${uploadId}&type=upload.processed`)).json.items.map((e: any) => e.id)).toEqual([
      ids.processed,
    ]);

    receiver.fallback = 200;
    const before = receiver.received.length;
    const started = await call(tenant, 'POST', `/v1/webhook-endpoints/${endpointId}/recover`, { since });
    expect(started.status).toBe(202);
    const location = started.headers.get('location')!;
    const done = await eventually(async () => {
      const p = await call(tenant, 'GET', location);
      return p.json?.done ? p.json : undefined;
    }, 60_000);
    expect(done).toMatchObject({ endpointId, found: 2, delivered: 2, failed: 0, done: true });
    const resent = receiver.received.slice(before);
    expect(resent.map((r) => r.id).sort()).toEqual([ids.completed, ids.processed].sort());
    expect(resent.every((r) => r.verified && r.answered === 200)).toBe(true);
    // The same bytes as the first attempts.
    const firstCompleted = receiver.received.find((r) => r.id === ids.completed)!;
    expect(resent.find((r) => r.id === ids.completed)!.body).toBe(firstCompleted.body);
    expect((await call(tenant, 'GET', '/v1/events?deliveryFailed=true')).json.items).toEqual([]);
    const after = await call(tenant, 'GET', `/v1/events/${ids.completed}`);
    expect(after.json.attempts.at(-1)).toMatchObject({ trigger: 'recover', status: 200, delivered: true });

    // A second recovery of the same window finds nothing left to send.
    const again = await call(tenant, 'POST', `/v1/webhook-endpoints/${endpointId}/recover`, { since, until: started.json.until });
    const second = await eventually(async () => {
      const p = await call(tenant, 'GET', again.headers.get('location')!);
      return p.json?.done && p.json.found === 0 ? p.json : undefined;
    }, 60_000);
    expect(second.delivered).toBe(0);
    expect(receiver.received.length).toBe(before + 2);
  }, 120_000);

  it('a manual redelivery sends the same webhook-id again; racing an automatic delivery it adds no copy', async () => {
    const tenant = await createTenant(stack.runtime.pool, 'events-manual');
    const { receiver, endpointId } = await withReceiver(tenant);
    const uploadId = await upload(tenant, 'delivered fine');
    const ids = eventIds(uploadId);
    // Both automatic deliveries done (each event's own activity; under load either may come last).
    for (const id of [ids.completed, ids.processed])
      await eventually(async () => receiver.received.some((r) => r.id === id && r.answered === 200), 30_000);
    const redone = await call(tenant, 'POST', `/v1/events/${ids.completed}/redeliver`, {}, { prefer: 'wait=30' });
    expect(redone.status).toBe(200);
    expect(redone.json).toMatchObject({ eventId: ids.completed, endpointIds: [endpointId], outcomes: { [endpointId]: 'delivered' } });
    const copies = receiver.received.filter((r) => r.id === ids.completed);
    expect(copies).toHaveLength(2);
    expect(copies[1]!.body).toBe(copies[0]!.body);

    // An endpoint added after the event gets it only when named.
    const late = await withReceiver(tenant);
    const toOriginal = await call(tenant, 'POST', `/v1/events/${ids.processed}/redeliver`, {}, { prefer: 'wait=30' });
    expect(toOriginal.json.endpointIds).toEqual([endpointId]);
    expect(late.receiver.received).toEqual([]);
    const toLate = await call(
      tenant,
      'POST',
      `/v1/events/${ids.processed}/redeliver`,
      { endpointId: late.endpointId },
      { prefer: 'wait=30' },
    );
    expect(toLate.json.outcomes).toEqual({ [late.endpointId]: 'delivered' });
    expect(late.receiver.received.map((r) => r.id)).toEqual([ids.processed]);

    // The race: the automatic delivery is in flight (the receiver holds it 3 s) when the manual one comes.
    const slow = await createTenant(stack.runtime.pool, 'events-race');
    const s = await withReceiver(slow);
    s.receiver.delayMs = 3000;
    const raced = eventIds(await upload(slow, 'raced'));
    await eventually(async () => s.receiver.received.some((r) => r.id === raced.completed), 30_000);
    const manual = await call(slow, 'POST', `/v1/events/${raced.completed}/redeliver`, {}, { prefer: 'wait=30' });
    expect(manual.json.outcomes).toEqual({ [s.endpointId]: 'in_flight' });
    await eventually(
      async () => (await call(slow, 'GET', `/v1/events/${raced.completed}`)).json.deliveries[0]?.deliveredAt !== null,
      30_000,
    );
    expect(s.receiver.received.filter((r) => r.id === raced.completed)).toHaveLength(1);
  }, 120_000);

  it('refuses bad requests and other tenants’ events without changing anything', async () => {
    const tenant = await createTenant(stack.runtime.pool, 'events-owner');
    const { receiver, endpointId } = await withReceiver(tenant);
    const ids = eventIds(await upload(tenant, 'mine'));
    await eventually(async () => [ids.completed, ids.processed].every((id) => receiver.received.some((r) => r.id === id)), 30_000);
    const stranger = await createTenant(stack.runtime.pool, 'events-stranger');
    const sent = receiver.received.length;
    for (const [t, method, path, json, status, error] of [
      [stranger, 'GET', `/v1/events/${ids.completed}`, undefined, 404, 'not_found'],
      [stranger, 'POST', `/v1/events/${ids.completed}/redeliver`, {}, 404, 'not_found'],
      [tenant, 'GET', '/v1/events/evt_nope', undefined, 404, 'not_found'],
      [tenant, 'GET', '/v1/events/not an id', undefined, 404, 'not_found'],
      [tenant, 'POST', `/v1/events/${ids.completed}/redeliver`, { endpointId: randomUUID() }, 404, 'not_found'],
      [tenant, 'POST', `/v1/events/${ids.completed}/redeliver`, { endpointId: 'x' }, 400, 'body_invalid'],
      [stranger, 'POST', `/v1/webhook-endpoints/${endpointId}/recover`, { since: new Date().toISOString() }, 404, 'not_found'],
      [tenant, 'POST', `/v1/webhook-endpoints/${endpointId}/recover`, { since: 'yesterday' }, 400, 'body_invalid'],
      [
        tenant,
        'POST',
        `/v1/webhook-endpoints/${endpointId}/recover`,
        { since: new Date(Date.now() + 60_000).toISOString() },
        400,
        'body_invalid',
      ],
      [tenant, 'GET', '/v1/events?deliveryFailed=maybe', undefined, 400, 'query_invalid'],
      [tenant, 'GET', '/v1/events?type=upload.exploded', undefined, 400, 'query_invalid'],
      [tenant, 'GET', '/v1/events?cursor=bm9wZQ', undefined, 400, 'query_invalid'],
      [tenant, 'GET', `/v1/webhook-endpoints/${endpointId}/recoveries/${encodeURIComponent('recover/x/y/z')}`, undefined, 404, 'not_found'],
    ] as const) {
      const r = await call(t, method, path, json);
      expect(r.status, `${method} ${path} ${JSON.stringify(json)}`).toBe(status);
      expect(r.json.error).toBe(error);
    }
    expect(receiver.received.length).toBe(sent);
    expect((await call(stranger, 'GET', '/v1/events')).json.items).toEqual([]);
    // Paging: one event a page, both found, no repeat.
    const first = await call(tenant, 'GET', '/v1/events?limit=1');
    const second = await call(tenant, 'GET', `/v1/events?limit=1&cursor=${first.json.nextCursor}`);
    expect([first.json.items[0].id, second.json.items[0].id].sort()).toEqual([ids.completed, ids.processed].sort());
    expect(second.json.nextCursor).toBeNull();
  }, 120_000);
});
