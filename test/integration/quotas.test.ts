// Per-tenant quotas: live webhook endpoints and active API keys are counts (409 past them,
// also under concurrent creation), uploads in flight a rate (429 + Retry-After before the
// body is read); another tenant is unaffected. At the largest fan-out (every endpoint the
// quota allows) an upload's downstream child stays small.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookReceiver } from '../../src/devstack/webhook-receiver';
import { getJson, openRequest, postUpload } from '../helpers/http';
import { png } from '../helpers/media';
import { startTestStack, type TestStack } from '../helpers/stack';

const IN_FLIGHT = 6;
let stack: TestStack;
let receiver: WebhookReceiver;

beforeAll(async () => {
  stack = await startTestStack('quotas', { env: { TENANT_MAX_UPLOADS_IN_FLIGHT: String(IN_FLIGHT) } });
  receiver = await new WebhookReceiver().start();
});
afterAll(async () => {
  await receiver?.stop();
  await stack?.stop();
});

async function postJson(apiKey: string, path: string, body: unknown, key?: string) {
  const headers: Record<string, string> = { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` };
  if (key) headers['idempotency-key'] = key;
  const res = await fetch(`${stack.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

describe('count quotas', () => {
  it('a tenant has at most 16 live webhook endpoints; concurrent creations never overshoot; deleting one frees a slot', async () => {
    const t = await stack.createTenant('endpoints');
    for (let i = 0; i < 12; i++) expect((await postJson(t.apiKey, '/v1/webhook-endpoints', { url: receiver.url })).status).toBe(201);
    const burst = await Promise.all(Array.from({ length: 8 }, () => postJson(t.apiKey, '/v1/webhook-endpoints', { url: receiver.url })));
    expect(burst.filter((r) => r.status === 201)).toHaveLength(4);
    for (const r of burst.filter((x) => x.status !== 201)) expect(r.json).toMatchObject({ status: 409, error: 'quota_exceeded', limit: 16 });
    const list = await getJson(`${stack.url}/v1/webhook-endpoints`, t.apiKey);
    expect(list.json.data).toHaveLength(16);

    // A refused creation under an Idempotency-Key stores nothing: the key works once a slot frees.
    const key = `quota-${randomUUID()}`;
    expect((await postJson(t.apiKey, '/v1/webhook-endpoints', { url: receiver.url }, key)).status).toBe(409);
    expect((await fetch(`${stack.url}/v1/webhook-endpoints/${list.json.data[0].id}`, { method: 'DELETE', headers: { authorization: `Bearer ${t.apiKey}` } })).status).toBe(204);
    const retried = await postJson(t.apiKey, '/v1/webhook-endpoints', { url: receiver.url }, key);
    expect(retried.status, JSON.stringify(retried.json)).toBe(201);
  });

  it('a tenant has at most 32 active API keys (its first included); revoking one frees a slot', async () => {
    const t = await stack.createTenant('keys');
    const made = await Promise.all(Array.from({ length: 34 }, (_, i) => postJson(t.apiKey, '/v1/api-keys', { label: `k${i}` })));
    expect(made.filter((r) => r.status === 201)).toHaveLength(31);
    expect(made.filter((r) => r.status === 409).every((r) => r.json.error === 'quota_exceeded')).toBe(true);
    const victim = made.find((r) => r.status === 201)!.json.id as string;
    expect((await fetch(`${stack.url}/v1/api-keys/${victim}`, { method: 'DELETE', headers: { authorization: `Bearer ${t.apiKey}` } })).status).toBe(204);
    expect((await postJson(t.apiKey, '/v1/api-keys', { label: 'after revoke' })).status).toBe(201);
  });
});

describe('uploads in flight', () => {
  it(`past ${IN_FLIGHT} uploads in flight a tenant gets 429 + Retry-After without its body being read; others are unaffected; slots come back`, async () => {
    const busy = await stack.createTenant('busy');
    const other = await stack.createTenant('other');
    const earlyKey = `early-${randomUUID()}`;
    expect((await postUpload(stack.url, { apiKey: busy.apiKey, key: earlyKey, body: Buffer.from('early'), contentType: 'text/plain' })).status).toBe(201);
    const open = Array.from({ length: IN_FLIGHT }, () =>
      openRequest(stack.url, `POST /v1/uploads HTTP/1.1\nHost: x\nAuthorization: Bearer ${busy.apiKey}\nIdempotency-Key: slow-${randomUUID()}\nContent-Type: text/plain\nContent-Length: 4\n\n`),
    );
    try {
      await Promise.all(open.map((r) => r.send(Buffer.from('ab'))));
      // Every one of them holds its slot (the handler has taken it) before the next request.
      await expect
        .poll(async () => /^oncely_uploads_in_flight (\d+)$/m.exec(await (await fetch(`${stack.url}/metrics`)).text())?.[1], { timeout: 20_000 })
        .toBe(String(IN_FLIGHT));
      const refused = await postUpload(stack.url, { apiKey: busy.apiKey, key: `extra-${randomUUID()}`, body: Buffer.from('x'), contentType: 'text/plain' });
      expect(refused.json).toMatchObject({ status: 429, error: 'too_many_uploads' });
      expect(refused.headers.get('retry-after')).toBe('1');
      const elsewhere = await postUpload(stack.url, { apiKey: other.apiKey, key: `other-${randomUUID()}`, body: Buffer.from('fine'), contentType: 'text/plain' });
      expect(elsewhere.status).toBe(201);
      // A replay is not a new upload: it is answered even while the tenant is at its limit.
      const replay = await postUpload(stack.url, { apiKey: busy.apiKey, key: earlyKey, body: Buffer.from('early'), contentType: 'text/plain' });
      expect(replay.status).toBe(201);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
    } finally {
      await Promise.all(open.map((r) => r.send(Buffer.from('cd'))));
    }
    const answers = await Promise.all(open.map((r) => r.response));
    expect(answers.map((a) => a?.status)).toEqual(Array(IN_FLIGHT).fill(201));
    const after = await postUpload(stack.url, { apiKey: busy.apiKey, key: `after-${randomUUID()}`, body: Buffer.from('again'), contentType: 'text/plain' });
    expect(after.status).toBe(201);
  });
});

describe('downstream at the largest fan-out', () => {
  it('an upload with 16 endpoints delivers 2 events to each, and its child history stays bounded', async () => {
    const t = await stack.createTenant('fanout');
    for (let i = 0; i < 16; i++) expect((await postJson(t.apiKey, '/v1/webhook-endpoints', { url: `${receiver.url}?n=${i}` })).status).toBe(201);
    const created = await postUpload(stack.url, { apiKey: t.apiKey, key: `fanout-${randomUUID()}`, body: await png(64, 64), contentType: 'image/png' });
    expect(created.status).toBe(201);
    const done = await getJson(`${stack.url}/v1/uploads/${created.json.uploadId}?wait=60`, t.apiKey);
    expect(done.json.status).toBe('processed');
    const child = stack.temporal.workflow.getHandle(`downstream/${created.json.uploadId}`);
    const result = await child.result();
    expect(Object.keys(result.deliveries)).toHaveLength(32);
    const history = await child.fetchHistory();
    // 32 deliveries × 3 events, the transcode, bookkeeping: far below Temporal's 51,200-event
    // limit and its 10,240-event warning, whatever the retries (they add no events).
    expect(history.events!.length).toBeLessThan(200);
  });
});
