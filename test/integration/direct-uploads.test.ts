// Direct uploads under one key, on the real S3 server (versitygw: presigned PUTs and
// multipart parts the client sends itself) and on the embedded store (URLs the API signs
// to itself). The store refuses bytes other than the declared ones; completion is the
// same commit as a one-request upload and answers the same JSON, replayed ever after.
import http from 'node:http';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import { getJson, postUpload, sha256 } from '../helpers/http';
import { readObject } from '../helpers/inspect';
import { startTestStack, type TestStack } from '../helpers/stack';

const MiB = 1024 * 1024;

interface Ctx {
  stack: TestStack;
  tenant: { tenantId: string; apiKey: string };
}

async function call(ctx: Ctx, method: string, pathname: string, opts: { key?: string; json?: unknown; apiKey?: string } = {}) {
  const res = await fetch(`${ctx.stack.url}${pathname}`, {
    method,
    headers: {
      authorization: `Bearer ${opts.apiKey ?? ctx.tenant.apiKey}`,
      ...(opts.key ? { 'idempotency-key': opts.key } : {}),
      ...(opts.json !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: opts.json !== undefined ? JSON.stringify(opts.json) : undefined,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
}

/** Sends a signed request exactly as planned (node:http: fetch will not send Content-Length as given). */
function sendSigned(
  base: string,
  signed: { method: string; url: string; headers: Record<string, string> },
  body: Buffer,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(signed.url, base), { method: signed.method, headers: { ...signed.headers, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * S3 may refuse a request before its body is all written: it answers and closes, and the
 * writer sees a reset, which counts as the store's 4xx refusal there.
 */
const resetAsRefusal = (kind: string) => (err: NodeJS.ErrnoException) => {
  if (kind === 's3' && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) return { status: 400, text: 'reset by the store' };
  throw err;
};

const plan = (ctx: Ctx, key: string, file: Buffer, extra: Record<string, unknown> = {}) =>
  call(ctx, 'POST', '/v1/direct-uploads', {
    key,
    json: { bytes: file.length, sha256: sha256(file), contentType: 'application/octet-stream', fileName: 'direct.bin', ...extra },
  });

describe.each(['s3', 'local'] as const)('direct uploads on the %s store', (kind) => {
  const ctx = {} as Ctx;
  let dataDir: string | undefined;
  beforeAll(async () => {
    dataDir = kind === 'local' ? mkdtempSync(path.join(os.tmpdir(), 'oncely-direct-')) : undefined;
    ctx.stack = await startTestStack(`direct_${kind}`, {
      env: { S3_SINGLE_PUT_MAX_MIB: '8', DIRECT_UPLOAD_PART_MIB: '5', ...(dataDir ? { S3_ENDPOINT: '', DATA_DIR: dataDir } : {}) },
    });
    ctx.tenant = await ctx.stack.createTenant('direct');
  });
  afterAll(async () => {
    await ctx.stack?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('plan, PUT, complete: one upload, the same answer on every retry, and the bytes never pass the API (on S3)', async () => {
    const file = randomBytes(3 * MiB + 5);
    const key = `direct-${randomUUID()}`;
    const created = await plan(ctx, key, file);
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ state: 'open', bytes: file.length, sha256: sha256(file), upload: { method: 'PUT' } });
    if (kind === 's3') expect(created.json.upload.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    // Absolute on the embedded store too: the API's own origin (PUBLIC_URL when set).
    else
      expect(created.json.upload.url).toMatch(
        new RegExp(`^${ctx.stack.url}/v1/direct-uploads/[0-9a-f-]{36}/object\\?by=k-[0-9a-f-]{36}&expires=\\d+&signature=`),
      );
    // Complete before the bytes are there: 409, the session stays open.
    const early = await call(ctx, 'POST', `/v1/direct-uploads/${created.json.id}/complete`);
    expect(early.status).toBe(409);
    expect(early.json.error).toBe('direct_upload_incomplete');

    expect((await sendSigned(ctx.stack.url, created.json.upload, file)).status).toBe(200);
    const done = await call(ctx, 'POST', `/v1/direct-uploads/${created.json.id}/complete`);
    expect(done.status).toBe(201);
    expect(done.json).toMatchObject({ bytes: file.length, sha256: sha256(file), fileName: 'direct.bin' });
    expect(done.headers.get('location')).toBe(`/v1/uploads/${done.json.uploadId}`);
    expect(sha256(await readObject(ctx.stack.runtime.store, done.json.storageKey))).toBe(sha256(file));

    // complete again (its answer lost), with the session's key or none: the same bytes, replayed.
    for (const k of [undefined, key]) {
      const again = await call(ctx, 'POST', `/v1/direct-uploads/${created.json.id}/complete`, { key: k });
      expect(again.status).toBe(201);
      expect(again.text).toBe(done.text);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
    }
    // Another key on complete is refused.
    expect((await call(ctx, 'POST', `/v1/direct-uploads/${created.json.id}/complete`, { key: `other-${randomUUID()}` })).status).toBe(422);
    // The key answers the same JSON as a one-request upload would; creation again is the same session, committed.
    const answer = await getJson(`${ctx.stack.url}/v1/idempotency-keys/${key}`, ctx.tenant.apiKey);
    expect(answer.json).toMatchObject({ state: 'completed', status: 201, response: { uploadId: done.json.uploadId } });
    const replayed = await plan(ctx, key, file);
    expect(replayed.status).toBe(201);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.json).toMatchObject({ id: created.json.id, state: 'committed' });
    expect(replayed.json.upload).toBeUndefined();
    const rows = await ctx.stack.runtime.pool.query('SELECT count(*)::int AS n FROM uploads WHERE idempotency_key = $1', [key]);
    expect(rows.rows[0].n).toBe(1);
    expect((await audit(ctx.stack.runtime.pool, ctx.stack.runtime.store)).violations).toEqual([]);
  });

  it('other bytes under the signed request are refused by the store (or the API), and nothing is committed', async () => {
    const file = randomBytes(MiB);
    const key = `direct-bad-${randomUUID()}`;
    const created = await plan(ctx, key, file);
    const other = Buffer.from(file);
    other[12345] = other[12345]! ^ 0xff;
    const refused = await sendSigned(ctx.stack.url, created.json.upload, other).catch(resetAsRefusal(kind));
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(refused.status).toBeLessThan(500);
    if (kind === 'local') expect(JSON.parse(refused.text).error).toBe('checksum_mismatch');
    const incomplete = await call(ctx, 'POST', `/v1/direct-uploads/${created.json.id}/complete`);
    expect(incomplete.status).toBe(409);
    // A shorter body with the planned headers is refused too.
    const short = await sendSigned(
      ctx.stack.url,
      { ...created.json.upload, headers: { ...created.json.upload.headers, 'content-length': String(file.length - 1) } },
      file.subarray(1),
    ).catch(resetAsRefusal(kind));
    expect(short.status).toBeGreaterThanOrEqual(400);
    // The right bytes then complete.
    expect((await sendSigned(ctx.stack.url, created.json.upload, file)).status).toBe(200);
    expect((await call(ctx, 'POST', `/v1/direct-uploads/${created.json.id}/complete`)).status).toBe(201);
  });

  it('a URL whose object key or signature is changed is refused; another tenant cannot see or complete the plan', async () => {
    const file = randomBytes(4096);
    const created = await plan(ctx, `direct-tamper-${randomUUID()}`, file);
    const url = new URL(created.json.upload.url, ctx.stack.url);
    if (kind === 's3') {
      // Another object key (say, another tenant's prefix) under the same signature.
      url.pathname = url.pathname.replace(/tenants\/[^/]+\//, `tenants/${randomUUID()}/`);
    } else {
      url.searchParams.set(
        'signature',
        url.searchParams.get('signature')!.replace(/^./, (ch) => (ch === 'A' ? 'B' : 'A')),
      );
    }
    const tampered = await sendSigned(ctx.stack.url, { ...created.json.upload, url: url.toString() }, file);
    expect(tampered.status).toBe(403);
    // A direct upload's id is not a tus upload.
    const asTus = await fetch(`${ctx.stack.url}/v1/tus/${created.json.id}`, {
      method: 'PATCH',
      headers: {
        authorization: `Bearer ${ctx.tenant.apiKey}`,
        'tus-resumable': '1.0.0',
        'upload-offset': '0',
        'content-type': 'application/offset+octet-stream',
      },
      body: file,
    });
    expect(asTus.status).toBe(404);
    const other = await ctx.stack.createTenant('direct-other');
    expect((await call(ctx, 'GET', `/v1/direct-uploads/${created.json.id}`, { apiKey: other.apiKey })).status).toBe(404);
    expect((await call(ctx, 'POST', `/v1/direct-uploads/${created.json.id}/complete`, { apiKey: other.apiKey })).status).toBe(404);
  });

  it('the key owns the session: same request → same session; other bytes, type or name → 422; 50 creations at once → one session', async () => {
    const file = randomBytes(2048);
    const key = `direct-key-${randomUUID()}`;
    const results = await Promise.all(Array.from({ length: 50 }, () => plan(ctx, key, file)));
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(201));
    expect(new Set(results.map((r) => r.json.id)).size).toBe(1);
    expect((await plan(ctx, key, file, { fileName: 'other.bin' })).status).toBe(422);
    expect((await plan(ctx, key, file, { sha256: sha256('x') })).status).toBe(422);
    expect((await plan(ctx, key, file, { bytes: 2049 })).status).toBe(422);
    const n = await ctx.stack.runtime.pool.query('SELECT count(*)::int AS n FROM resumable_sessions WHERE idempotency_key = $1', [key]);
    expect(n.rows[0].n).toBe(1);
    // A key first used by a one-request upload is refused here, and the other way round.
    const oneKey = `direct-one-${randomUUID()}`;
    expect((await postUpload(ctx.stack.url, { apiKey: ctx.tenant.apiKey, key: oneKey, body: file })).status).toBe(201);
    expect((await plan(ctx, oneKey, file)).status).toBe(422);
    expect((await postUpload(ctx.stack.url, { apiKey: ctx.tenant.apiKey, key, body: file })).status).toBe(422);
  });

  it('refuses bad plans with a 4xx problem and creates nothing', async () => {
    const key = `direct-badreq-${randomUUID()}`;
    const cases: [unknown, number][] = [
      [{ bytes: -1, sha256: sha256('a') }, 400],
      [{ bytes: 1.5, sha256: sha256('a') }, 400],
      [{ bytes: 10, sha256: 'abc' }, 400],
      [{ bytes: 10, sha256: sha256('a'), contentType: 'not a type' }, 400],
      [{ bytes: 10, sha256: sha256('a'), fileName: 'a/b' }, 400],
      [{ bytes: 10, sha256: sha256('a'), extra: true }, 400],
      [{ bytes: 10 * 1024 ** 4, sha256: sha256('a') }, 413],
    ];
    for (const [json, status] of cases) {
      const res = await call(ctx, 'POST', '/v1/direct-uploads', { key, json });
      expect(res.status, JSON.stringify(json)).toBe(status);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
    expect((await call(ctx, 'POST', '/v1/direct-uploads', { json: { bytes: 1, sha256: sha256('a') } })).json.error).toBe(
      'idempotency_key_required',
    );
    const n = await ctx.stack.runtime.pool.query('SELECT count(*)::int AS n FROM resumable_sessions WHERE idempotency_key = $1', [key]);
    expect(n.rows[0].n).toBe(0);
    expect((await call(ctx, 'GET', `/v1/direct-uploads/${randomUUID()}`)).status).toBe(404);
  });

  if (kind === 's3') {
    it('multipart: parts sent by the client (one twice, one retried after a wrong body), completed server-side once', async () => {
      const file = randomBytes(12 * MiB + 77);
      const key = `direct-mp-${randomUUID()}`;
      const created = await plan(ctx, key, file);
      expect(created.json.multipart).toEqual({ partBytes: 5 * MiB, partCount: 3 });
      expect(created.json.upload).toBeUndefined();
      const part = (n: number) => file.subarray((n - 1) * 5 * MiB, Math.min(file.length, n * 5 * MiB));
      const partUrl = async (n: number, body = part(n)) => {
        const res = await call(ctx, 'POST', `/v1/direct-uploads/${created.json.id}/parts/${n}`, {
          json: { sha256: createHash('sha256').update(body).digest('hex') },
        });
        expect(res.status).toBe(200);
        return res.json;
      };
      const u1 = await partUrl(1);
      const r1 = await sendSigned(ctx.stack.url, u1, part(1));
      expect(r1.status, JSON.stringify(u1) + r1.text).toBe(200);
      // Part 2: wrong bytes are refused by the store; then the right ones, twice.
      const p2 = await partUrl(2);
      const bad = Buffer.from(part(2));
      bad[0] = bad[0]! ^ 1;
      expect((await sendSigned(ctx.stack.url, p2, bad)).status).toBeGreaterThanOrEqual(400);
      const incomplete = await call(ctx, 'POST', `/v1/direct-uploads/${created.json.id}/complete`);
      expect(incomplete.status).toBe(409);
      expect(incomplete.json.missingParts).toEqual([2, 3]);
      expect((await sendSigned(ctx.stack.url, p2, part(2))).status).toBe(200);
      expect((await sendSigned(ctx.stack.url, await partUrl(2), part(2))).status).toBe(200);
      expect((await sendSigned(ctx.stack.url, await partUrl(3), part(3))).status).toBe(200);
      expect((await call(ctx, 'POST', `/v1/direct-uploads/${created.json.id}/parts/4`, { json: { sha256: sha256('x') } })).status).toBe(
        404,
      );
      const [a, b] = await Promise.all([0, 1].map(() => call(ctx, 'POST', `/v1/direct-uploads/${created.json.id}/complete`)));
      expect([a!.status, b!.status]).toEqual([201, 201]);
      expect(a!.json.uploadId).toBe(b!.json.uploadId);
      expect(sha256(await readObject(ctx.stack.runtime.store, a!.json.storageKey))).toBe(sha256(file));
      const again = await call(ctx, 'POST', `/v1/direct-uploads/${created.json.id}/complete`);
      expect(again.json.uploadId).toBe(a!.json.uploadId);
      expect((await call(ctx, 'POST', `/v1/direct-uploads/${created.json.id}/parts/1`, { json: { sha256: sha256('x') } })).status).toBe(
        409,
      );
      expect((await audit(ctx.stack.runtime.pool, ctx.stack.runtime.store)).violations).toEqual([]);
    });
  }
});

describe('direct upload expiry', () => {
  const ctx = {} as Ctx;
  beforeAll(async () => {
    // Sessions expire after ~4 s, so their URLs are valid for less than that.
    ctx.stack = await startTestStack('direct_expiry', {
      // One open session per tenant: an expired session's slot must come back (each test's tenant keeps at most one open).
      env: {
        DIRECT_UPLOAD_EXPIRY_HOURS: String(4 / 3600),
        S3_SINGLE_PUT_MAX_MIB: '8',
        DIRECT_UPLOAD_PART_MIB: '5',
        TENANT_MAX_OPEN_SESSIONS: '1',
      },
    });
    ctx.tenant = await ctx.stack.createTenant('direct-expiry');
  });
  afterAll(async () => {
    await ctx.stack?.stop();
  });

  it('an uncompleted session expires: its URL stops working, its object goes, and the key is free', async () => {
    const file = randomBytes(4096);
    const key = `direct-exp-${randomUUID()}`;
    const created = await plan(ctx, key, file);
    expect(created.status).toBe(201);
    expect(new Date(created.json.upload.expiresAt).getTime()).toBeLessThanOrEqual(Date.now() + 5_000);
    // Bytes sent but never completed.
    expect((await sendSigned(ctx.stack.url, created.json.upload, file)).status).toBe(200);
    const { storage_key: storageKey } = (
      await ctx.stack.runtime.pool.query('SELECT storage_key FROM resumable_sessions WHERE id = $1', [created.json.id])
    ).rows[0];
    expect(await ctx.stack.runtime.store.head(storageKey)).toBeDefined();
    await expect
      .poll(async () => (await call(ctx, 'GET', `/v1/direct-uploads/${created.json.id}`)).status, { timeout: 30_000, interval: 500 })
      .toBe(404);
    expect(await ctx.stack.runtime.store.head(storageKey)).toBeUndefined();
    expect((await sendSigned(ctx.stack.url, created.json.upload, file)).status).toBe(403);
    // The key is free: a new plan under it (another file even) is a new session.
    const other = randomBytes(100);
    const fresh = await plan(ctx, key, other);
    expect(fresh.status).toBe(201);
    expect(fresh.headers.get('idempotent-replayed')).toBeNull();
    expect(fresh.json.id).not.toBe(created.json.id);
    expect((await sendSigned(ctx.stack.url, fresh.json.upload, other)).status).toBe(200);
    expect((await call(ctx, 'POST', `/v1/direct-uploads/${fresh.json.id}/complete`)).status).toBe(201);
    expect((await audit(ctx.stack.runtime.pool, ctx.stack.runtime.store)).violations).toEqual([]);
  });

  it('an expired session frees its slot under TENANT_MAX_OPEN_SESSIONS', async () => {
    const capped: Ctx = { stack: ctx.stack, tenant: await ctx.stack.createTenant('direct-cap') };
    const first = await plan(capped, `direct-cap-${randomUUID()}`, randomBytes(64));
    expect(first.status).toBe(201);
    const secondKey = `direct-cap-${randomUUID()}`;
    const file = randomBytes(80);
    const refused = await plan(capped, secondKey, file);
    expect(refused.json).toMatchObject({ status: 429, error: 'too_many_sessions', limit: 1 });
    await expect
      .poll(async () => (await call(capped, 'GET', `/v1/direct-uploads/${first.json.id}`)).status, { timeout: 30_000, interval: 500 })
      .toBe(404);
    expect((await plan(capped, secondKey, file)).status).toBe(201);
  });

  it('an uncompleted multipart session expires: its parts are aborted in the store and the key is free', async () => {
    const file = randomBytes(12 * MiB + 5);
    const key = `direct-exp-mp-${randomUUID()}`;
    const created = await plan(ctx, key, file);
    expect(created.status).toBe(201);
    expect(created.json.multipart).toEqual({ partBytes: 5 * MiB, partCount: 3 });
    const part1 = file.subarray(0, 5 * MiB);
    const signed = await call(ctx, 'POST', `/v1/direct-uploads/${created.json.id}/parts/1`, { json: { sha256: sha256(part1) } });
    expect(signed.status).toBe(200);
    expect((await sendSigned(ctx.stack.url, signed.json, part1)).status).toBe(200);
    const row = (
      await ctx.stack.runtime.pool.query('SELECT storage_key, multipart_id FROM resumable_sessions WHERE id = $1', [created.json.id])
    ).rows[0];
    const presigner = ctx.stack.runtime.store.presigner!;
    expect((await presigner.listParts(row.storage_key, row.multipart_id)).map((p) => p.partNumber)).toEqual([1]);
    await expect
      .poll(async () => (await call(ctx, 'GET', `/v1/direct-uploads/${created.json.id}`)).status, { timeout: 30_000, interval: 500 })
      .toBe(404);
    // The multipart upload itself is gone, not only the row: its parts hold no storage.
    await expect(presigner.listParts(row.storage_key, row.multipart_id)).rejects.toMatchObject({ name: 'NoSuchUpload' });
    expect(await ctx.stack.runtime.store.head(row.storage_key)).toBeUndefined();
    const fresh = await plan(ctx, key, file);
    expect(fresh.status).toBe(201);
    expect(fresh.headers.get('idempotent-replayed')).toBeNull();
    expect(fresh.json.id).not.toBe(created.json.id);
    expect((await audit(ctx.stack.runtime.pool, ctx.stack.runtime.store)).violations).toEqual([]);
  });
});
