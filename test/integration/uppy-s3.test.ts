// @uppy/aws-s3's companion routes under the key rule: the raw protocol (the calls Uppy
// 6.x makes, in order, with retries and an abort) against versitygw, and the real plugin
// in Chromium on the /direct page (a large file in parts straight to the store, a small
// one as a form post through Oncely). One key → one session, one object, one upload.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PutBucketCorsCommand } from '@aws-sdk/client-s3';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import { sha256 } from '../helpers/http';
import { readObject } from '../helpers/inspect';
import { sharedS3Client, startTestStack, type TestStack } from '../helpers/stack';
import { launchChromium, signInToConsole } from '../helpers/browser';

const MiB = 1024 * 1024;

async function call(base: string, method: string, pathname: string, json?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}${pathname}`, {
    method,
    headers: { ...(json !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body: json !== undefined ? JSON.stringify(json) : undefined,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
}

async function mint(stack: TestStack, apiKey: string): Promise<string> {
  const res = await call(stack.url, 'POST', '/v1/uppy-endpoints', undefined, { authorization: `Bearer ${apiKey}` });
  expect(res.status).toBe(201);
  return res.json.companionEndpoint as string;
}

async function postForm(base: string, params: { url: string; fields: Record<string, string> }, file: Buffer, name: string) {
  const form = new FormData();
  for (const [k, v] of Object.entries(params.fields)) form.append(k, v);
  form.append('file', new Blob([file], { type: 'application/octet-stream' }), name);
  const res = await fetch(new URL(params.url, base), { method: 'POST', body: form });
  return { status: res.status, text: await res.text() };
}

describe('the companion routes on the S3 store', () => {
  let stack: TestStack;
  let tenant: { tenantId: string; apiKey: string };
  let endpoint: string;
  beforeAll(async () => {
    stack = await startTestStack('uppy_s3');
    tenant = await stack.createTenant('uppy');
    endpoint = await mint(stack, tenant.apiKey);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('multipart as Uppy does it: create (twice), sign and PUT parts (one again), list, complete (twice): one upload', async () => {
    const file = randomBytes(6 * MiB + 999);
    const key = `uppy-${randomUUID()}`;
    const create = () =>
      call(stack.url, 'POST', `${endpoint}/s3/multipart`, {
        filename: 'clip.bin',
        type: 'application/octet-stream',
        metadata: { idempotencyKey: key, name: 'clip.bin' },
      });
    const created = await create();
    expect(created.status).toBe(200);
    expect((await create()).json).toEqual(created.json);
    const { uploadId, key: objectKey } = created.json;
    expect(objectKey).toMatch(new RegExp(`^tenants/${tenant.tenantId}/keys/`));
    const q = `?key=${encodeURIComponent(objectKey)}`;
    const parts = [file.subarray(0, 5 * MiB), file.subarray(5 * MiB)];
    const etags: string[] = [];
    for (const [i, body] of parts.entries()) {
      for (let attempt = 0; attempt < (i === 0 ? 2 : 1); attempt++) {
        const signed = await call(stack.url, 'GET', `${endpoint}/s3/multipart/${encodeURIComponent(uploadId)}/${i + 1}${q}`);
        expect(signed.status).toBe(200);
        const put = await fetch(signed.json.url, { method: 'PUT', body });
        expect(put.status).toBe(200);
        etags[i] = put.headers.get('etag')!;
      }
    }
    const listed = await call(stack.url, 'GET', `${endpoint}/s3/multipart/${encodeURIComponent(uploadId)}${q}`);
    expect(listed.json.map((p: { PartNumber: number; Size: number }) => [p.PartNumber, p.Size])).toEqual([
      [1, 5 * MiB],
      [2, file.length - 5 * MiB],
    ]);
    const complete = () =>
      call(stack.url, 'POST', `${endpoint}/s3/multipart/${encodeURIComponent(uploadId)}/complete${q}`, {
        parts: etags.map((ETag, i) => ({ PartNumber: i + 1, ETag })),
      });
    const [a, b] = await Promise.all([complete(), complete()]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.json.upload).toMatchObject({ bytes: file.length, sha256: sha256(file), fileName: 'clip.bin' });
    expect(b.json.upload.uploadId).toBe(a.json.upload.uploadId);
    expect(a.json.location).toBe(`/v1/uploads/${a.json.upload.uploadId}`);
    const again = await complete();
    expect(again.json.upload.uploadId).toBe(a.json.upload.uploadId);
    expect(sha256(await readObject(stack.runtime.store, objectKey))).toBe(sha256(file));
    const rows = await stack.runtime.pool.query('SELECT count(*)::int AS n FROM uploads WHERE idempotency_key = $1', [key]);
    expect(rows.rows[0].n).toBe(1);
    // The committed file is not created again under its key.
    expect((await create()).status).toBe(409);
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  });

  it('abort frees the key; another file under a key is 422; tokens and object keys cannot be forged', async () => {
    const key = `uppy-abort-${randomUUID()}`;
    const created = await call(stack.url, 'POST', `${endpoint}/s3/multipart`, {
      filename: 'a.bin',
      type: 'application/octet-stream',
      metadata: { idempotencyKey: key },
    });
    expect(
      (
        await call(stack.url, 'POST', `${endpoint}/s3/multipart`, {
          filename: 'b.bin',
          type: 'application/octet-stream',
          metadata: { idempotencyKey: key },
        })
      ).status,
    ).toBe(422);
    const q = `?key=${encodeURIComponent(created.json.key)}`;
    // Another object key under a real upload id: 404.
    expect(
      (await call(stack.url, 'GET', `${endpoint}/s3/multipart/${encodeURIComponent(created.json.uploadId)}/1?key=tenants/x/keys/y/z`))
        .status,
    ).toBe(404);
    // A forged or foreign token: 403.
    const forged = endpoint.replace(/\.[^.]+$/, '.AAAA');
    expect((await call(stack.url, 'GET', `${forged}/s3/multipart/${encodeURIComponent(created.json.uploadId)}${q}`)).status).toBe(403);
    const other = await stack.createTenant('uppy-other');
    const otherEndpoint = await mint(stack, other.apiKey);
    expect((await call(stack.url, 'GET', `${otherEndpoint}/s3/multipart/${encodeURIComponent(created.json.uploadId)}${q}`)).status).toBe(
      404,
    );
    expect((await call(stack.url, 'POST', `${endpoint}/s3/multipart`, { filename: 'a.bin', metadata: {} })).status).toBe(400);
    // Abort: the session goes and the key is free for a new one.
    expect((await call(stack.url, 'DELETE', `${endpoint}/s3/multipart/${encodeURIComponent(created.json.uploadId)}${q}`)).status).toBe(204);
    expect((await call(stack.url, 'GET', `${endpoint}/s3/multipart/${encodeURIComponent(created.json.uploadId)}${q}`)).status).toBe(404);
    const fresh = await call(stack.url, 'POST', `${endpoint}/s3/multipart`, {
      filename: 'b.bin',
      type: 'application/octet-stream',
      metadata: { idempotencyKey: key },
    });
    expect(fresh.status).toBe(200);
    expect(fresh.json.uploadId).not.toBe(created.json.uploadId);
  });

  it('one request: /s3/params points at the form endpoint, which commits once; the same form again replays', async () => {
    const file = randomBytes(70_000);
    const key = `uppy-params-${randomUUID()}`;
    const params = await call(
      stack.url,
      'GET',
      `${endpoint}/s3/params?filename=small.bin&type=application/octet-stream&metadata%5BidempotencyKey%5D=${key}`,
    );
    expect(params.status).toBe(200);
    expect(params.json.method).toBe('POST');
    const first = await postForm(stack.url, params.json, file, 'small.bin');
    expect(first.status).toBe(201);
    expect(JSON.parse(first.text)).toMatchObject({ bytes: file.length, sha256: sha256(file), fileName: 'small.bin' });
    expect((await postForm(stack.url, params.json, file, 'small.bin')).text).toBe(first.text);
    expect((await call(stack.url, 'GET', `${endpoint}/s3/params?filename=x`)).status).toBe(400);
  });

  it("metadata.expiresAt sets the upload's expiry on both companion paths; a bad one is 400 and creates nothing", async () => {
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const detail = async (id: string) =>
      (await call(stack.url, 'GET', `/v1/uploads/${id}`, undefined, { authorization: `Bearer ${tenant.apiKey}` })).json;
    // One request: /s3/params carries it into the form's fields.
    const small = randomBytes(1000);
    const formKey = `uppy-exp-form-${randomUUID()}`;
    const params = await call(
      stack.url,
      'GET',
      `${endpoint}/s3/params?filename=e.bin&metadata%5BidempotencyKey%5D=${formKey}&metadata%5BexpiresAt%5D=${encodeURIComponent(expiresAt)}`,
    );
    expect(params.json.fields.expiresAt).toBe(expiresAt);
    const posted = await postForm(stack.url, params.json, small, 'e.bin');
    expect(posted.status).toBe(201);
    expect((await detail(JSON.parse(posted.text).uploadId)).expiresAt).toBe(expiresAt);
    // Multipart: the create's metadata.
    const file = randomBytes(5 * MiB + 1);
    const key = `uppy-exp-mp-${randomUUID()}`;
    const created = await call(stack.url, 'POST', `${endpoint}/s3/multipart`, {
      filename: 'e.bin',
      type: 'application/octet-stream',
      metadata: { idempotencyKey: key, expiresAt },
    });
    expect(created.status).toBe(200);
    const q = `?key=${encodeURIComponent(created.json.key)}`;
    const etags: string[] = [];
    for (const [i, body] of [file.subarray(0, 5 * MiB), file.subarray(5 * MiB)].entries()) {
      const signed = await call(stack.url, 'GET', `${endpoint}/s3/multipart/${encodeURIComponent(created.json.uploadId)}/${i + 1}${q}`);
      etags.push((await fetch(signed.json.url, { method: 'PUT', body })).headers.get('etag')!);
    }
    const done = await call(stack.url, 'POST', `${endpoint}/s3/multipart/${encodeURIComponent(created.json.uploadId)}/complete${q}`, {
      parts: etags.map((ETag, i) => ({ PartNumber: i + 1, ETag })),
    });
    expect(done.status).toBe(200);
    expect((await detail(done.json.upload.uploadId)).expiresAt).toBe(expiresAt);
    // Bad: in the past, or not a time.
    const past = new Date(Date.now() - 1000).toISOString();
    for (const bad of [past, 'tomorrow']) {
      const badKey = `uppy-exp-bad-${randomUUID()}`;
      const p = await call(
        stack.url,
        'GET',
        `${endpoint}/s3/params?filename=b.bin&metadata%5BidempotencyKey%5D=${badKey}&metadata%5BexpiresAt%5D=${encodeURIComponent(bad)}`,
      );
      expect(p.status, bad).toBe(400);
      expect(p.json).toMatchObject({ error: 'query_invalid', detail: expect.stringMatching(/expiresAt/) });
      const m = await call(stack.url, 'POST', `${endpoint}/s3/multipart`, {
        filename: 'b.bin',
        type: 'application/octet-stream',
        metadata: { idempotencyKey: badKey, expiresAt: bad },
      });
      expect(m.status, bad).toBe(400);
      expect(m.json).toMatchObject({ error: 'body_invalid', detail: expect.stringMatching(/expiresAt/) });
      const sessions = await stack.runtime.pool.query('SELECT 1 FROM resumable_sessions WHERE idempotency_key = $1', [badKey]);
      expect(sessions.rowCount).toBe(0);
    }
  });
});

describe('the companion routes on the embedded store', () => {
  let stack: TestStack;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oncely-uppy-'));
    stack = await startTestStack('uppy_local', { env: { S3_ENDPOINT: '', DATA_DIR: dir } });
  });
  afterAll(async () => {
    await stack?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('one-request uploads work; multipart (straight to a store the client cannot reach) is 501', async () => {
    const tenant = await stack.createTenant('uppy-local');
    const endpoint = await mint(stack, tenant.apiKey);
    const key = `uppy-local-${randomUUID()}`;
    const params = await call(stack.url, 'GET', `${endpoint}/s3/params?filename=a.txt&metadata%5BidempotencyKey%5D=${key}`);
    const file = randomBytes(1000);
    expect((await postForm(stack.url, params.json, file, 'a.txt')).status).toBe(201);
    const mp = await call(stack.url, 'POST', `${endpoint}/s3/multipart`, {
      filename: 'big.bin',
      metadata: { idempotencyKey: `uppy-local-mp-${randomUUID()}` },
    });
    expect(mp.status).toBe(501);
    expect(mp.json.error).toBe('direct_upload_unsupported');
  });
});

describe('the /direct page in Chromium (the real @uppy/aws-s3)', () => {
  let stack: TestStack;
  let browser: Browser;
  beforeAll(async () => {
    stack = await startTestStack('uppy_page');
    // The browser PUTs parts to the S3 server (another origin): the bucket allows it, as a deployment's would.
    const s3 = sharedS3Client();
    await s3.send(
      new PutBucketCorsCommand({
        Bucket: stack.config.S3_BUCKET,
        CORSConfiguration: {
          CORSRules: [{ AllowedOrigins: ['*'], AllowedMethods: ['PUT', 'GET'], AllowedHeaders: ['*'], ExposeHeaders: ['ETag'] }],
        },
      }),
    );
    s3.destroy();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  it('a 12 MiB file goes in parts straight to the store and a small one as a form post: each committed once under its key', async () => {
    const tenant = await stack.createTenant('uppy-page');
    const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await context.newPage();
    // The operator signs in to the console; /direct holds only the upload token minted through it.
    await signInToConsole(page, stack.url, tenant.apiKey);
    if (process.env.UPPY_DEBUG) await page.evaluate(() => localStorage.setItem('oncely.debug', '1'));
    if (process.env.UPPY_DEBUG) page.on('console', (m) => console.log('PAGE', m.text().slice(0, 300)));
    const keyRequests: string[] = [];
    page.on('request', (r) => {
      if (r.headers().authorization?.includes(tenant.apiKey)) keyRequests.push(`${r.method()} ${new URL(r.url()).pathname}`);
    });
    // The plugin is installed once the page has its companion endpoint (minted with the token).
    const endpoint = page.waitForResponse((r) => r.url().endsWith('/v1/uppy-endpoints') && r.status() === 201);
    await page.goto(`${stack.url}/direct`);
    await endpoint;
    const big = randomBytes(12 * MiB + 5);
    const small = randomBytes(30_000);
    await page
      .locator('input.uppy-Dashboard-input')
      .first()
      .setInputFiles([
        { name: 'big.bin', mimeType: 'application/octet-stream', buffer: big },
        { name: 'small.bin', mimeType: 'application/octet-stream', buffer: small },
      ]);
    await page.waitForSelector('#done li[data-upload-id] >> nth=1', { timeout: 90_000 });
    const rows = await stack.runtime.pool.query<{
      file_name: string;
      bytes: string;
      sha256: string;
      idempotency_key: string;
      arrival: string;
    }>('SELECT file_name, bytes, sha256, idempotency_key, arrival FROM uploads WHERE tenant_id = $1 ORDER BY bytes DESC', [
      tenant.tenantId,
    ]);
    expect(rows.rows.map((r) => [r.file_name, Number(r.bytes), r.sha256])).toEqual([
      ['big.bin', big.length, createHash('sha256').update(big).digest('hex')],
      ['small.bin', small.length, createHash('sha256').update(small).digest('hex')],
    ]);
    const sessions = await stack.runtime.pool.query(`SELECT mode, state FROM resumable_sessions WHERE tenant_id = $1`, [tenant.tenantId]);
    expect(sessions.rows).toEqual([{ mode: 'uppy', state: 'committed' }]);
    expect(rows.rows[0]!.arrival).toBe('uppy');
    expect(rows.rows.every((r) => r.idempotency_key.startsWith('web-'))).toBe(true);
    // Both uploads are the page token's; the key never went out from the page (the console session minted it).
    const owners = await stack.runtime.pool.query('SELECT DISTINCT token_id FROM uploads WHERE tenant_id = $1', [tenant.tenantId]);
    expect(owners.rows).toHaveLength(1);
    expect(owners.rows[0].token_id).not.toBeNull();
    expect(keyRequests).toEqual([]);
    await page.screenshot({ path: path.join(process.cwd(), 'test-artifacts', 'uppy-direct-page.png'), fullPage: true }).catch(() => {});
    await context.close();
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  }, 120_000);
});
