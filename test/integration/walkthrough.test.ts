// The README walk-through against real services: replay, reuse, reads, tenancy.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import { startTestStack, type TestStack } from '../helpers/stack';
import { getJson, postUpload, sha256 } from '../helpers/http';
import { eventually, listKeys, readObject, rowsForKey } from '../helpers/inspect';
import { png } from '../helpers/media';

let stack: TestStack;
let tenant: { tenantId: string; apiKey: string };

beforeAll(async () => {
  stack = await startTestStack('walk');
  tenant = await stack.createTenant('acme');
});
afterAll(() => stack?.stop());

const newKey = () => `walk-${randomUUID()}`;

describe('POST /v1/uploads walk-through', () => {
  it('stores once and replays the byte-identical answer; a different file under the key is 422', async () => {
    const key = newKey();
    const file = Buffer.from('hello, exactly once\n');
    const first = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file, contentType: 'text/plain', fileName: 'hello.txt' });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(first.json).toMatchObject({ bytes: file.length, sha256: sha256(file), contentType: 'text/plain', fileName: 'hello.txt' });
    expect(first.headers.get('location')).toBe(`/v1/uploads/${first.json.uploadId}`);

    const second = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body: file,
      contentType: 'text/plain',
      fileName: 'hello.txt',
    });
    expect(second.status).toBe(201);
    expect(second.text).toBe(first.text);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.headers.get('idempotent-replay')).toBe('true');

    const other = Buffer.from('a different file');
    const reuse = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body: other,
      contentType: 'text/plain',
      fileName: 'hello.txt',
    });
    expect(reuse.status).toBe(422);
    expect(reuse.headers.get('content-type')).toBe('application/problem+json');
    expect(reuse.json).toMatchObject({
      status: 422,
      error: 'idempotency_key_reuse',
      type: expect.any(String),
      title: expect.any(String),
      detail: expect.any(String),
      message: expect.any(String),
    });

    const rows = await rowsForKey(stack.runtime.pool, tenant.tenantId, key);
    expect(rows.uploads).toHaveLength(1);
    expect(rows.keys).toHaveLength(1);
    expect(rows.keys[0].response_body).toBe(first.text);
    const objects = await listKeys(stack.s3, `tenants/${tenant.tenantId}/`);
    const forKey = objects.filter((k) => k === first.json.storageKey);
    expect(forKey).toHaveLength(1);
    expect(objects.filter((k) => k.startsWith(first.json.storageKey.split('/').slice(0, -1).join('/')))).toHaveLength(1);
    expect(sha256(await readObject(stack.s3, first.json.storageKey))).toBe(sha256(file));

    // Operators find the run by key or tenant (search attributes; visibility is eventually consistent).
    const found = await eventually(async () => {
      const runs = [];
      for await (const wf of stack.temporal.workflow.list({
        query: `OncelyIdempotencyKey = '${key}' AND OncelyTenant = '${tenant.tenantId}'`,
      }))
        runs.push(wf);
      return runs.length === 1 && runs[0]!.status.name === 'COMPLETED' ? runs : undefined;
    });
    expect(found[0]!.workflowId).toBe(`upload/${tenant.tenantId}/${key}`);
  });

  it('accepts the structured-field form of the key as the same key', async () => {
    const key = newKey();
    const file = Buffer.from('sf-string');
    const a = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file });
    const b = await postUpload(stack.url, { apiKey: tenant.apiKey, key: `"${key}"`, body: file });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.text).toBe(a.text);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
  });

  it('serves the upload and the key for polling, and hides them from other tenants', async () => {
    const key = newKey();
    const file = Buffer.from('pollable');
    const created = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file });
    expect(created.status).toBe(201);

    const upload = await getJson(`${stack.url}/v1/uploads/${created.json.uploadId}?wait=30`, tenant.apiKey);
    expect(upload.status).toBe(200);
    expect(upload.json).toMatchObject({
      uploadId: created.json.uploadId,
      status: 'processed',
      sha256: sha256(file),
      bytes: file.length,
      idempotencyKey: key,
      processing: { status: 'skipped', reason: 'no step applies to application/octet-stream (pipeline default, version 0)' },
      renditions: [],
      deliveries: [],
    });

    // Nothing to transcode and no webhook endpoint: settled in the records transaction, no child run.
    const children = [];
    for await (const wf of stack.temporal.workflow.list({ query: `WorkflowId = 'downstream/${created.json.uploadId}'` })) children.push(wf);
    expect(children).toHaveLength(0);

    const byKey = await getJson(`${stack.url}/v1/idempotency-keys/${encodeURIComponent(key)}`, tenant.apiKey);
    expect(byKey.status).toBe(200);
    expect(byKey.json).toMatchObject({ state: 'completed', status: 201, uploadId: created.json.uploadId, response: created.json });

    const other = await stack.createTenant('other');
    const hidden = await getJson(`${stack.url}/v1/uploads/${created.json.uploadId}`, other.apiKey);
    expect(hidden.status).toBe(404);
    expect(hidden.json.error).toBe('not_found');
    const hiddenKey = await getJson(`${stack.url}/v1/idempotency-keys/${encodeURIComponent(key)}`, other.apiKey);
    expect(hiddenKey.status).toBe(404);
  });

  it('gives two tenants using the same key two independent uploads', async () => {
    const key = newKey();
    const t2 = await stack.createTenant('second');
    const a = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('tenant one file') });
    const b = await postUpload(stack.url, { apiKey: t2.apiKey, key, body: Buffer.from('tenant two, another file') });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(a.json.uploadId).not.toBe(b.json.uploadId);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    expect(a.json.storageKey.startsWith(`tenants/${tenant.tenantId}/`)).toBe(true);
    expect(b.json.storageKey.startsWith(`tenants/${t2.tenantId}/`)).toBe(true);
  });

  it('answers 202 with Location and Retry-After under Prefer: respond-async, then completes', async () => {
    const key = newKey();
    const file = Buffer.from('async please');
    const res = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file, prefer: 'respond-async' });
    expect(res.status).toBe(202);
    expect(res.json).toMatchObject({ status: 'processing', idempotencyKey: key });
    expect(res.headers.get('retry-after')).toBe('2');
    const location = res.headers.get('location')!;
    expect(location).toBe(`/v1/idempotency-keys/${encodeURIComponent(key)}`);
    let polled: any;
    for (let i = 0; i < 100; i++) {
      polled = await getJson(`${stack.url}${location}`, tenant.apiKey);
      if (polled.json.state === 'completed') break;
      expect(polled.json.state).toBe('processing');
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(polled.json).toMatchObject({ state: 'completed', status: 201, response: { sha256: sha256(file) } });
    const again = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file });
    expect(again.status).toBe(201);
    expect(JSON.parse(again.text)).toEqual(polled.json.response);
  });

  it('under respond-async, keeps the committed copy of two and removes the other once the answer is committed', async () => {
    const key = newKey();
    const file = Buffer.from('two async copies');
    const answers = await Promise.all(
      [0, 1].map(() => postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file, prefer: 'respond-async' })),
    );
    // A copy arriving after the commit is replayed (201) without staging anything.
    expect(
      answers.every((a) => a.status === 202 || (a.status === 201 && a.headers.get('idempotent-replayed') === 'true')),
      answers.map((a) => a.text).join('\n'),
    ).toBe(true);
    expect(answers.some((a) => a.status === 202)).toBe(true);
    // A 202's request did not know the outcome when it answered; it settles its copy from the key row.
    const committed = await eventually(async () => {
      const polled = await getJson(`${stack.url}/v1/idempotency-keys/${encodeURIComponent(key)}`, tenant.apiKey);
      return polled.json.state === 'completed' ? (polled.json.response.storageKey as string) : undefined;
    });
    const left = await eventually(async () => {
      const objects = await listKeys(stack.s3, `tenants/${tenant.tenantId}/keys/`);
      const forKey = objects.filter((o) => o.startsWith(committed.slice(0, committed.lastIndexOf('/') + 1)));
      return forKey.length === 1 ? forKey : undefined;
    });
    expect(left).toEqual([committed]);
    expect(sha256(await readObject(stack.s3, committed))).toBe(sha256(file));
  });

  it('records a content rejection once and replays it like a success', async () => {
    const key = newKey();
    const notPng = Buffer.from('this is plain text, not a PNG');
    const first = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: notPng, contentType: 'image/png' });
    expect(first.status).toBe(415);
    expect(first.json.error).toBe('content_type_mismatch');
    const second = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: notPng, contentType: 'image/png' });
    expect(second.status).toBe(415);
    expect(second.text).toBe(first.text);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    const rows = await rowsForKey(stack.runtime.pool, tenant.tenantId, key);
    expect(rows.uploads).toHaveLength(0);
    expect(rows.keys).toHaveLength(1);
  });

  it('refuses a TIFF or AVIF declaration the bytes do not bear out (a PNG) with 415, storing no upload', async () => {
    const picture = await png(32, 24);
    for (const contentType of ['image/tiff', 'image/avif']) {
      const key = newKey();
      const r = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: picture, contentType });
      expect(r.status, r.text).toBe(415);
      expect(r.json.error).toBe('content_type_mismatch');
      expect(r.json.detail).toContain(`Content-Type is ${contentType} but the file content is image/png`);
      expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).uploads).toHaveLength(0);
    }
  });

  it('passes the audit with every upload verified', async () => {
    const report = await audit(stack.runtime.pool, stack.s3);
    expect(report.violations).toEqual([]);
    expect(report.uploads).toBeGreaterThanOrEqual(6);
    expect(report.objectsVerified).toBe(report.uploads);
  });
});

describe('CORS', () => {
  it('answers preflights from other origins and exposes the replay headers', async () => {
    const pre = await fetch(`${stack.url}/v1/uploads`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, idempotency-key, x-file-sha256',
      },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('*');
    for (const h of [
      'Authorization',
      'Content-Type',
      'Idempotency-Key',
      'X-File-Sha256',
      'X-File-Name',
      'Prefer',
      'Upload-Complete',
      'Upload-Draft-Interop-Version',
      'Content-Digest',
      'Repr-Digest',
    ])
      expect(pre.headers.get('access-control-allow-headers')).toContain(h);
    const res = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: newKey(),
      body: Buffer.from('cors'),
      headers: { origin: 'https://app.example' },
    });
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    for (const h of [
      'Location',
      'Retry-After',
      'Idempotent-Replayed',
      'Idempotent-Replay',
      'Upload-Complete',
      'Upload-Offset',
      'Upload-Limit',
    ])
      expect(res.headers.get('access-control-expose-headers')).toContain(h);
    const problem = await fetch(`${stack.url}/v1/uploads/nope`, { headers: { origin: 'https://app.example' } });
    expect(problem.status).toBe(401);
    expect(problem.headers.get('access-control-allow-origin')).toBe('*');
  });
});
