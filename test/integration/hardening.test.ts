// One key, one holder, whichever route comes first: an upload, an API key or a webhook
// endpoint under the same Idempotency-Key never both happen, and an upload is acknowledged
// only with its own upload answer (it once answered 201 with another route's sealed body).
// Also: secrets shown once stay hidden from key polls; NUL characters and oversized JSON
// bodies are bad input (4xx) that changes nothing.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyStoragePrefix, uploadWorkflowId } from '../../src/temporal/ids';
import { searchAttributes } from '../../src/temporal/names';
import { getJson, openRequest, postUpload, rawRequest, sha256 } from '../helpers/http';
import { startTestStack, type TestStack } from '../helpers/stack';
import { startWaitingRun } from '../helpers/requests';

let stack: TestStack;
let tenant: { tenantId: string; apiKey: string };

beforeAll(async () => {
  stack = await startTestStack('keyroutes');
  tenant = await stack.createTenant('key-routes');
});
afterAll(() => stack?.stop());

const q = async (sql: string, params: unknown[]) => (await stack.runtime.pool.query(sql, params)).rows;
const uploadsUnder = async (key: string) =>
  q('SELECT id, storage_key FROM uploads WHERE tenant_id = $1 AND idempotency_key = $2', [tenant.tenantId, key]);
const apiKeysLabelled = async (label: string) => q('SELECT id FROM api_keys WHERE tenant_id = $1 AND label = $2', [tenant.tenantId, label]);
const objectsUnderKey = async (key: string) => {
  const keys: string[] = [];
  for await (const o of stack.s3.list(keyStoragePrefix(tenant.tenantId, key))) keys.push(o.key);
  return keys;
};

async function postJson(path: string, body: unknown, key?: string) {
  const headers: Record<string, string> = { 'content-type': 'application/json', authorization: `Bearer ${tenant.apiKey}` };
  if (key) headers['idempotency-key'] = key;
  const res = await fetch(`${stack.url}${path}`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
}

function uploadHead(key: string, length: number): string {
  return `POST /v1/uploads HTTP/1.1\nHost: x\nAuthorization: Bearer ${tenant.apiKey}\nIdempotency-Key: ${key}\nContent-Type: text/plain\nContent-Length: ${length}\n\n`;
}

describe('an Idempotency-Key shared by an upload and another route', () => {
  it("a route that claims the key while the upload body is still arriving wins; the upload gets 422, not that route's answer, and leaves nothing", async () => {
    const key = `cross-${randomUUID()}`;
    const label = `label-${randomUUID()}`;
    const upload = openRequest(stack.url, uploadHead(key, 10));
    await upload.send(Buffer.from('hello'));
    const created = await postJson('/v1/api-keys', { label }, key);
    expect(created.status).toBe(201);
    await upload.send(Buffer.from('world'));
    const answer = await upload.response;
    expect(answer?.status).toBe(422);
    expect(JSON.parse(answer!.body).error).toBe('idempotency_key_reuse');
    expect(answer!.body).not.toContain('sealed:');
    expect(await uploadsUnder(key)).toEqual([]);
    expect(await apiKeysLabelled(label)).toHaveLength(1);
    // The key still answers as the API key it belongs to; the copy is gone.
    const replay = await postJson('/v1/api-keys', { label }, key);
    expect(replay.status).toBe(201);
    expect(replay.text).toBe(created.text);
    await expect.poll(() => objectsUnderKey(key), { timeout: 20_000 }).toEqual([]);
  });

  it('an upload under a key another route holds gets 422 without its body being stored', async () => {
    const key = `cross-${randomUUID()}`;
    expect((await postJson('/v1/webhook-endpoints', { url: 'http://127.0.0.1:9/hook' }, key)).status).toBe(201);
    const body = Buffer.from('some bytes');
    const res = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body, contentType: 'text/plain' });
    expect(res.status).toBe(422);
    expect(res.json.error).toBe('idempotency_key_reuse');
    expect(await uploadsUnder(key)).toEqual([]);
    expect(await objectsUnderKey(key)).toEqual([]);
  });

  it('a route under a key whose upload is running gets 422 and creates nothing', async () => {
    const key = `cross-${randomUUID()}`;
    const label = `label-${randomUUID()}`;
    // The upload's workflow is running (started, no copy committed yet).
    const handle = await startWaitingRun(stack, tenant.tenantId, key, { declaredBytes: 3, receiveTimeoutSeconds: 120 });
    try {
      const refused = await postJson('/v1/api-keys', { label }, key);
      expect(refused.status).toBe(422);
      expect(refused.json.error).toBe('idempotency_key_reuse');
      expect(await apiKeysLabelled(label)).toEqual([]);
      expect(await q('SELECT 1 FROM idempotency_keys WHERE tenant_id = $1 AND key = $2', [tenant.tenantId, key])).toEqual([]);
    } finally {
      await handle.terminate('test done');
    }
  });

  it('racing uploads and API-key creations under one key: at most one holder, and every 201 is its own kind of answer', async () => {
    for (let round = 0; round < 3; round++) {
      const key = `race-${randomUUID()}`;
      const label = `label-${randomUUID()}`;
      const body = randomBytes(2048);
      const results = await Promise.all([
        ...Array.from({ length: 4 }, () =>
          postUpload(stack.url, { apiKey: tenant.apiKey, key, body, contentType: 'application/octet-stream' }).then((r) => ({
            kind: 'upload' as const,
            ...r,
          })),
        ),
        ...Array.from({ length: 4 }, () => postJson('/v1/api-keys', { label }, key).then((r) => ({ kind: 'api-key' as const, ...r }))),
      ]);
      for (const r of results) expect([201, 409, 422, 202]).toContain(r.status);
      const uploads = await uploadsUnder(key);
      const keys = await apiKeysLabelled(label);
      expect(uploads.length + keys.length).toBeLessThanOrEqual(1);
      for (const r of results.filter((x) => x.status === 201)) {
        if (r.kind === 'upload') {
          expect(uploads).toHaveLength(1);
          expect(r.json).toMatchObject({ uploadId: uploads[0].id, sha256: sha256(body), bytes: body.length });
        } else {
          expect(keys).toHaveLength(1);
          expect(r.json.id).toBe(keys[0].id);
        }
      }
    }
  });
});

describe('secrets are shown once', () => {
  // Each kind of secret an answer shows once, the route that makes it and where it sits.
  const kinds = [
    { kind: 'API key', path: '/v1/api-keys', body: () => ({ label: `shown once ${randomUUID()}` }), field: 'key', prefix: 'onc_' },
    {
      kind: 'webhook secret',
      path: '/v1/webhook-endpoints',
      body: () => ({ url: 'http://127.0.0.1:9/hook' }),
      field: 'secret',
      prefix: 'whsec_',
    },
    {
      kind: 'pipeline signing secret',
      path: '/v1/pipelines',
      body: () => ({ name: `secret-${randomUUID().slice(0, 8)}`, steps: [] }),
      field: 'signingSecret',
      prefix: 'whsec_',
    },
    { kind: 'upload token', path: '/v1/upload-tokens', body: () => ({ maxUploads: 1 }), field: 'token', prefix: 'oup_' },
  ] as const;

  it.each(kinds)(
    '$kind: a key poll (even by a read-only key) shows it redacted; a read-only key cannot replay; the replay itself returns it',
    async (k) => {
      const key = `secret-${randomUUID()}`;
      const body = k.body();
      const created = await postJson(k.path, body, key);
      expect(created.status, created.text).toBe(201);
      const secret = created.json[k.field] as string;
      expect(secret.startsWith(k.prefix)).toBe(true);
      const readOnly = await postJson('/v1/api-keys', { label: `read-only ${randomUUID()}`, scopes: ['uploads:read'] });
      expect(readOnly.status).toBe(201);

      for (const reader of [tenant.apiKey, readOnly.json.key as string]) {
        const poll = await getJson(`${stack.url}/v1/idempotency-keys/${encodeURIComponent(key)}`, reader);
        expect(poll.status).toBe(200);
        expect(poll.json.response[k.field]).toBe('[redacted]');
        expect(JSON.stringify(poll.json)).not.toContain(secret);
      }
      // Replaying the request needs the scope of the route it was made on.
      const replayByReader = await fetch(`${stack.url}${k.path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${readOnly.json.key}`, 'idempotency-key': key },
        body: JSON.stringify(body),
      });
      expect(replayByReader.status).toBe(403);
      expect(await replayByReader.text()).not.toContain(secret);
      const replay = await postJson(k.path, body, key);
      expect(replay.status).toBe(201);
      expect(replay.json[k.field]).toBe(secret);
    },
  );
});

describe('NUL characters are bad input, not an outage', () => {
  it.each([
    ['GET', `/v1/idempotency-keys/%00${'a'.repeat(20)}`],
    ['GET', '/v1/idempotency-keys/abcdefgh%00ijklmnop'],
    ['GET', '/v1/uploads/%00'],
    ['GET', `/v1/uploads/${randomUUID()}?wait=%00`],
    ['DELETE', '/v1/api-keys/%00'],
    ['DELETE', '/v1/webhook-endpoints/%00'],
    ['GET', '/v1/api-keys?x=%00'],
  ])('%s %s answers 400 malformed_request', async (method, path) => {
    const res = await fetch(`${stack.url}${path}`, { method, headers: { authorization: `Bearer ${tenant.apiKey}` } });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.headers.get('retry-after')).toBeNull();
    expect(((await res.json()) as { error: string }).error).toBe('malformed_request');
  });

  it('a key poll with control characters or the wrong length is idempotency_key_invalid', async () => {
    for (const k of ['short', `${'a'.repeat(10)}%01${'b'.repeat(10)}`, 'x'.repeat(300)]) {
      const res = await getJson(`${stack.url}/v1/idempotency-keys/${k}`, tenant.apiKey);
      expect(res.status).toBe(400);
      expect(res.json.error).toBe('idempotency_key_invalid');
    }
  });

  it.each([
    ['/v1/api-keys', '{"label":"a\\u0000b"}'],
    ['/v1/webhook-endpoints', '{"url":"http://127.0.0.1:9/x","description":"\\u0000"}'],
    ['/v1/webhook-endpoints', '{"url":"http://127.0.0.1:9/x","\\u0000":"key"}'],
  ])('POST %s with NUL in a JSON string answers 400 and stores nothing', async (path, raw) => {
    const key = `nul-${randomUUID()}`;
    const before = await q('SELECT (SELECT count(*) FROM api_keys) AS keys, (SELECT count(*) FROM webhook_endpoints) AS hooks', []);
    const res = await postJson(path, raw, key);
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('body_invalid');
    expect(await q('SELECT (SELECT count(*) FROM api_keys) AS keys, (SELECT count(*) FROM webhook_endpoints) AS hooks', [])).toEqual(
      before,
    );
    expect(await q('SELECT 1 FROM idempotency_keys WHERE tenant_id = $1 AND key = $2', [tenant.tenantId, key])).toEqual([]);
  });
});

describe('JSON bodies are bounded while they stream', () => {
  it('a declared Content-Length past 64 KiB answers 413 before any body byte is read', async () => {
    const res = await rawRequest(
      stack.url,
      `POST /v1/api-keys HTTP/1.1\nHost: x\nAuthorization: Bearer ${tenant.apiKey}\nContent-Type: application/json\nContent-Length: ${256 * 1024 * 1024}\n\n`,
    );
    expect(res?.status).toBe(413);
    expect(JSON.parse(res!.body).error).toBe('payload_too_large');
  });

  it.each([false, true])(
    'a 256 MiB chunked body (Idempotency-Key: %s) gets 413 early, the process stays flat (< 32 MiB RSS growth), nothing is stored',
    async (keyed) => {
      const key = `big-${randomUUID()}`;
      const before = await q('SELECT count(*) AS n FROM api_keys', []);
      globalThis.gc?.();
      const rss0 = process.memoryUsage().rss;
      let peak = rss0;
      const req = openRequest(
        stack.url,
        `POST /v1/api-keys HTTP/1.1\nHost: x\nAuthorization: Bearer ${tenant.apiKey}\nContent-Type: application/json\nTransfer-Encoding: chunked\n${keyed ? `Idempotency-Key: ${key}\n` : ''}\n`,
      );
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      const framed = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]);
      let sent = 0;
      await req.send(Buffer.from('a\r\n{"label":"\r\n'));
      while (sent < 256 * 1024 * 1024 && !req.answered()) {
        if (!(await req.send(framed))) break;
        sent += chunk.length;
        peak = Math.max(peak, process.memoryUsage().rss);
      }
      const res = await req.response;
      req.close();
      expect(res?.status).toBe(413);
      expect(sent).toBeLessThan(256 * 1024 * 1024);
      expect(peak - rss0).toBeLessThan(32 * 1024 * 1024);
      expect(await q('SELECT count(*) AS n FROM api_keys', [])).toEqual(before);
      expect(await q('SELECT 1 FROM idempotency_keys WHERE tenant_id = $1 AND key = $2', [tenant.tenantId, key])).toEqual([]);
    },
  );
});

describe('Temporal UI summary of an upload', () => {
  it('the longest allowed non-ASCII file name with Markdown/HTML in it is stored, and the run summary is capped and escaped', async () => {
    const name = `**b** <img src=x onerror=alert(1)> [x](javascript:alert) ${'é'.repeat(200)}`.slice(0, 255);
    const key = `summary-${randomUUID()}`;
    const res = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body: Buffer.from('named'),
      contentType: 'text/plain',
      fileName: encodeURIComponent(name),
    });
    expect(res.status, res.text).toBe(201);
    expect(res.json.fileName).toBe(name);
    const described = await stack.temporal.workflow.getHandle(uploadWorkflowId(tenant.tenantId, key)).describe();
    const [staticSummary, staticDetails] = await Promise.all([described.staticSummary(), described.staticDetails()]);
    // The tenant and the key are the run's search attributes: no details repeat them (each is a payload to seal).
    expect(staticDetails).toBeUndefined();
    expect(described.typedSearchAttributes.get(searchAttributes.idempotencyKey)).toBe(key);
    // Nor a memo: only a run started by a session or an import is read by its fingerprint.
    expect(described.memo ?? {}).toEqual({});
    expect(Buffer.byteLength(staticSummary!)).toBeLessThanOrEqual(200);
    expect(staticSummary).toMatch(/^Upload \\\*\\\*b\\\*\\\* \\<img/);
    expect(staticSummary).not.toMatch(/(?<!\\)[<>[\]*]/);
  });
});
