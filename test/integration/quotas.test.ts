// Per-tenant quotas: live webhook endpoints and active API keys are counts (409 past them,
// also under concurrent creation), uploads in flight a rate (429 + Retry-After before the
// body is read), open sessions of every resumable or signed mode a cap across replicas
// (429 too_many_sessions, replays never refused); another tenant is unaffected. At the largest fan-out (every endpoint the
// quota allows) an upload's downstream child stays small.
import { createHash, randomUUID } from 'node:crypto';
import { ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { WebhookReceiver } from '../support/webhook-receiver';
import { getJson, openRequest, postUpload } from '../helpers/http';
import { png } from '../helpers/media';
import { startTestStack, type TestStack } from '../helpers/stack';

const IN_FLIGHT = 6;
const OPEN_SESSIONS = 5;
let stack: TestStack;
let receiver: WebhookReceiver;

beforeAll(async () => {
  stack = await startTestStack('quotas', {
    env: { TENANT_MAX_UPLOADS_IN_FLIGHT: String(IN_FLIGHT), TENANT_MAX_OPEN_SESSIONS: String(OPEN_SESSIONS) },
  });
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
    for (const r of burst.filter((x) => x.status !== 201))
      expect(r.json).toMatchObject({ status: 409, error: 'quota_exceeded', limit: 16 });
    const list = await getJson(`${stack.url}/v1/webhook-endpoints`, t.apiKey);
    expect(list.json.data).toHaveLength(16);

    // A refused creation under an Idempotency-Key stores nothing: the key works once a slot frees.
    const key = `quota-${randomUUID()}`;
    expect((await postJson(t.apiKey, '/v1/webhook-endpoints', { url: receiver.url }, key)).status).toBe(409);
    expect(
      (
        await fetch(`${stack.url}/v1/webhook-endpoints/${list.json.data[0].id}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${t.apiKey}` },
        })
      ).status,
    ).toBe(204);
    const retried = await postJson(t.apiKey, '/v1/webhook-endpoints', { url: receiver.url }, key);
    expect(retried.status, JSON.stringify(retried.json)).toBe(201);
  });

  it('a tenant has at most 32 active API keys (its first included); revoking one frees a slot', async () => {
    const t = await stack.createTenant('keys');
    const made = await Promise.all(Array.from({ length: 34 }, (_, i) => postJson(t.apiKey, '/v1/api-keys', { label: `k${i}` })));
    expect(made.filter((r) => r.status === 201)).toHaveLength(31);
    expect(made.filter((r) => r.status === 409).every((r) => r.json.error === 'quota_exceeded')).toBe(true);
    const victim = made.find((r) => r.status === 201)!.json.id as string;
    expect(
      (await fetch(`${stack.url}/v1/api-keys/${victim}`, { method: 'DELETE', headers: { authorization: `Bearer ${t.apiKey}` } })).status,
    ).toBe(204);
    expect((await postJson(t.apiKey, '/v1/api-keys', { label: 'after revoke' })).status).toBe(201);
  });
});

describe('uploads in flight', () => {
  it(`past ${IN_FLIGHT} uploads in flight a tenant gets 429 + Retry-After without its body being read; others are unaffected; slots come back`, async () => {
    const busy = await stack.createTenant('busy');
    const other = await stack.createTenant('other');
    const earlyKey = `early-${randomUUID()}`;
    expect(
      (await postUpload(stack.url, { apiKey: busy.apiKey, key: earlyKey, body: Buffer.from('early'), contentType: 'text/plain' })).status,
    ).toBe(201);
    const open = Array.from({ length: IN_FLIGHT }, () =>
      openRequest(
        stack.url,
        `POST /v1/uploads HTTP/1.1\nHost: x\nAuthorization: Bearer ${busy.apiKey}\nIdempotency-Key: slow-${randomUUID()}\nContent-Type: text/plain\nContent-Length: 4\n\n`,
      ),
    );
    try {
      await Promise.all(open.map((r) => r.send(Buffer.from('ab'))));
      // Every one of them holds its slot (the handler has taken it) before the next request.
      await expect
        .poll(async () => /^oncely_uploads_in_flight (\d+)$/m.exec(await (await fetch(`${stack.url}/metrics`)).text())?.[1], {
          timeout: 20_000,
        })
        .toBe(String(IN_FLIGHT));
      const refused = await postUpload(stack.url, {
        apiKey: busy.apiKey,
        key: `extra-${randomUUID()}`,
        body: Buffer.from('x'),
        contentType: 'text/plain',
      });
      expect(refused.json).toMatchObject({ status: 429, error: 'too_many_uploads' });
      expect(refused.headers.get('retry-after')).toBe('1');
      const elsewhere = await postUpload(stack.url, {
        apiKey: other.apiKey,
        key: `other-${randomUUID()}`,
        body: Buffer.from('fine'),
        contentType: 'text/plain',
      });
      expect(elsewhere.status).toBe(201);
      // A replay is not a new upload: it is answered even while the tenant is at its limit.
      const replay = await postUpload(stack.url, {
        apiKey: busy.apiKey,
        key: earlyKey,
        body: Buffer.from('early'),
        contentType: 'text/plain',
      });
      expect(replay.status).toBe(201);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
    } finally {
      await Promise.all(open.map((r) => r.send(Buffer.from('cd'))));
    }
    const answers = await Promise.all(open.map((r) => r.response));
    expect(answers.map((a) => a?.status)).toEqual(Array(IN_FLIGHT).fill(201));
    const after = await postUpload(stack.url, {
      apiKey: busy.apiKey,
      key: `after-${randomUUID()}`,
      body: Buffer.from('again'),
      contentType: 'text/plain',
    });
    expect(after.status).toBe(201);
  });
});

describe('downstream at the largest fan-out', () => {
  it('an upload with 16 endpoints delivers 2 events to each, and its child history stays bounded', async () => {
    const t = await stack.createTenant('fanout');
    for (let i = 0; i < 16; i++)
      expect((await postJson(t.apiKey, '/v1/webhook-endpoints', { url: `${receiver.url}?n=${i}` })).status).toBe(201);
    const created = await postUpload(stack.url, {
      apiKey: t.apiKey,
      key: `fanout-${randomUUID()}`,
      body: await png(64, 64),
      contentType: 'image/png',
    });
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

describe('open sessions', () => {
  const tus = (apiKey: string, key: string, length = 10) =>
    fetch(`${stack.url}/v1/tus`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${apiKey}`,
        'tus-resumable': '1.0.0',
        'upload-length': String(length),
        'idempotency-key': key,
        'upload-metadata': 'filetype dGV4dC9wbGFpbg==',
      },
    });
  const direct = (apiKey: string, key: string, body = 'direct bytes') =>
    postJson(
      apiKey,
      '/v1/direct-uploads',
      { bytes: body.length, sha256: createHash('sha256').update(body).digest('hex'), contentType: 'text/plain' },
      key,
    );
  const uppy = async (apiKey: string, key: string) => {
    const endpoint = (await postJson(apiKey, '/v1/uppy-endpoints', {})).json.companionEndpoint as string;
    return postJson(apiKey, `${endpoint}/s3/multipart`, {
      filename: 'u.bin',
      type: 'application/octet-stream',
      metadata: { idempotencyKey: key, name: 'u.bin' },
    });
  };
  const openCount = async (tenantId: string) =>
    (
      await stack.runtime.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM resumable_sessions WHERE tenant_id = $1 AND state <> 'committed'",
        [tenantId],
      )
    ).rows[0]!.n;
  const multipartsUnder = async (tenantId: string) => {
    const { endpoint, accessKeyId, secretAccessKey } = inject('stack').s3;
    const s3 = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId, secretAccessKey } });
    const listed = await s3.send(new ListMultipartUploadsCommand({ Bucket: stack.config.S3_BUCKET, Prefix: `tenants/${tenantId}/` }));
    s3.destroy();
    return (listed.Uploads ?? []).length;
  };

  it(`a tenant has at most ${OPEN_SESSIONS} open sessions across tus, direct and Uppy, also under concurrent creation; replays are answered at the limit; finishing one frees a slot`, async () => {
    const t = await stack.createTenant('sessions');
    const other = await stack.createTenant('sessions-other');
    const firstKey = `tus-${randomUUID()}`;
    const first = await tus(t.apiKey, firstKey);
    expect(first.status).toBe(201);
    expect((await direct(t.apiKey, `direct-${randomUUID()}`)).status).toBe(201);
    expect((await uppy(t.apiKey, `uppy-${randomUUID()}`)).status).toBe(200);

    // Two slots left, six creations at once (two of each mode): exactly two are made.
    const burst = await Promise.all([
      ...[0, 1].map(async () => ({ status: (await tus(t.apiKey, `tus-${randomUUID()}`)).status })),
      ...[0, 1].map(() => direct(t.apiKey, `direct-${randomUUID()}`)),
      ...[0, 1].map(() => uppy(t.apiKey, `uppy-${randomUUID()}`)),
    ]);
    expect(burst.filter((r) => r.status < 300)).toHaveLength(2);
    expect(burst.filter((r) => r.status === 429)).toHaveLength(4);
    expect(await openCount(t.tenantId)).toBe(OPEN_SESSIONS);
    const multiparts = await multipartsUnder(t.tenantId);

    // One more of each mode is refused with the problem, Retry-After, and nothing made.
    const refusedTus = await tus(t.apiKey, `tus-${randomUUID()}`);
    expect(refusedTus.status).toBe(429);
    expect(refusedTus.headers.get('retry-after')).toBe('10');
    expect(await refusedTus.json()).toMatchObject({ status: 429, error: 'too_many_sessions', limit: OPEN_SESSIONS });
    expect((await direct(t.apiKey, `direct-${randomUUID()}`)).json).toMatchObject({ status: 429, error: 'too_many_sessions' });
    expect((await uppy(t.apiKey, `uppy-${randomUUID()}`)).json).toMatchObject({ status: 429, error: 'too_many_sessions' });
    expect(await openCount(t.tenantId)).toBe(OPEN_SESSIONS);
    expect(await multipartsUnder(t.tenantId)).toBe(multiparts);

    // The same creation again is the existing session, never a refusal.
    const again = await tus(t.apiKey, firstKey);
    expect(again.status).toBe(201);
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    // Another tenant is unaffected.
    expect((await tus(other.apiKey, `tus-${randomUUID()}`)).status).toBe(201);

    // Terminating a session frees its slot.
    const auth = { authorization: `Bearer ${t.apiKey}`, 'tus-resumable': '1.0.0' };
    expect((await fetch(`${stack.url}${first.headers.get('location')}`, { method: 'DELETE', headers: auth })).status).toBe(204);
    const replacement = await tus(t.apiKey, `tus-${randomUUID()}`);
    expect(replacement.status).toBe(201);
    expect((await tus(t.apiKey, `tus-${randomUUID()}`)).status).toBe(429);

    // Completing one frees its slot too: its last PATCH commits it.
    const patched = await fetch(`${stack.url}${replacement.headers.get('location')}`, {
      method: 'PATCH',
      headers: { ...auth, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
      body: '0123456789',
    });
    expect(patched.status).toBe(204);
    expect(await openCount(t.tenantId)).toBe(OPEN_SESSIONS - 1);
    expect((await tus(t.apiKey, `tus-${randomUUID()}`)).status).toBe(201);
  });
});
