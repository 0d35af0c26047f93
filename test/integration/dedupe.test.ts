// Content dedupe (opt-in per tenant), on both stores: the same bytes under different keys
// through every arrival mode — one request (twice), a form post, tus, and a direct plan (answered
// at once: an instant upload) — make one stored object with a count of its uploads, one
// upload row per key; copies are deleted; a tenant without dedupe keeps its own objects;
// the audit checks the counts (and catches a wrong one).
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tus from 'tus-js-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import { postUpload, sha256 } from '../helpers/http';
import { startTestStack, type TestStack } from '../helpers/stack';

const ADMIN = 'admin-token-for-the-dedupe-test-0123456789';

describe.each(['s3', 'local'] as const)('content dedupe on the %s store', (kind) => {
  let stack: TestStack;
  let dir: string;
  let tenant: { tenantId: string; apiKey: string };
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oncely-dedupe-'));
    stack = await startTestStack(`dedupe_${kind}`, {
      env: { ADMIN_TOKEN: ADMIN, ...(kind === 'local' ? { S3_ENDPOINT: '', DATA_DIR: dir } : {}) },
    });
    const res = await fetch(`${stack.url}/admin/tenants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'dedupe', dedupe: 'sha256' }),
    });
    expect(res.status).toBe(201);
    const body = (await res.json()) as { tenantId: string; dedupe: string; apiKey: { key: string } };
    expect(body.dedupe).toBe('sha256');
    tenant = { tenantId: body.tenantId, apiKey: body.apiKey.key };
  });
  afterAll(async () => {
    await stack?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const objectsOf = async (tenantId: string) => {
    const keys: string[] = [];
    for await (const o of stack.runtime.store.list(`tenants/${tenantId}/keys/`)) keys.push(o.key);
    return keys;
  };
  const refs = async (storageKey: string) =>
    (await stack.runtime.pool.query('SELECT refs FROM stored_objects WHERE storage_key = $1', [storageKey])).rows[0]?.refs as
      number | undefined;

  it('identical bytes through every arrival mode: one object counted five times, five upload rows, no copies left', async () => {
    const bytes = randomBytes(200_000);
    const first = await postUpload(stack.url, { apiKey: tenant.apiKey, key: `d1-${randomUUID()}`, body: bytes });
    expect(first.status).toBe(201);
    const shared = first.json.storageKey as string;
    expect(await refs(shared)).toBe(1);

    const second = await postUpload(stack.url, { apiKey: tenant.apiKey, key: `d2-${randomUUID()}`, body: bytes, fileName: 'again.bin' });
    expect(second.status).toBe(201);
    expect(second.json.uploadId).not.toBe(first.json.uploadId);
    expect(second.json.storageKey).toBe(shared);

    const form = new FormData();
    form.append('idempotencyKey', `d3-${randomUUID()}`);
    form.append('file', new Blob([bytes]), 'form.bin');
    const third = await fetch(`${stack.url}/v1/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.apiKey}` },
      body: form,
    });
    expect(third.status).toBe(201);
    expect(((await third.json()) as { storageKey: string }).storageKey).toBe(shared);

    const tusKey = `d4-${randomUUID()}`;
    await new Promise<void>((resolve, reject) => {
      new tus.Upload(bytes, {
        endpoint: `${stack.url}/v1/tus`,
        headers: { authorization: `Bearer ${tenant.apiKey}`, 'idempotency-key': tusKey },
        metadata: { filename: 'tus.bin', filetype: 'application/octet-stream' },
        onSuccess: () => resolve(),
        onError: reject,
      }).start();
    });
    const tusRow = await stack.runtime.pool.query('SELECT storage_key FROM uploads WHERE idempotency_key = $1', [tusKey]);
    expect(tusRow.rows[0].storage_key).toBe(shared);

    // A direct plan for bytes the tenant has: an instant upload, nothing to send.
    const planKey = `d5-${randomUUID()}`;
    const plan = await fetch(`${stack.url}/v1/direct-uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.apiKey}`, 'idempotency-key': planKey, 'content-type': 'application/json' },
      body: JSON.stringify({ bytes: bytes.length, sha256: sha256(bytes), fileName: 'instant.bin' }),
    });
    expect(plan.status).toBe(201);
    const planned = (await plan.json()) as { state: string; upload?: unknown; committedUpload?: { storageKey: string; fileName: string } };
    expect(planned.state).toBe('committed');
    expect(planned.upload).toBeUndefined();
    expect(planned.committedUpload).toMatchObject({ storageKey: shared, fileName: 'instant.bin' });

    expect(await refs(shared)).toBe(5);
    const rows = await stack.runtime.pool.query('SELECT count(*)::int AS n FROM uploads WHERE tenant_id = $1 AND storage_key = $2', [
      tenant.tenantId,
      shared,
    ]);
    expect(rows.rows[0].n).toBe(5);
    // The copies of the later four are gone (deleted once their commits named the shared object).
    await expect.poll(() => objectsOf(tenant.tenantId), { timeout: 15_000 }).toEqual([shared]);
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  });

  it('a tenant without dedupe keeps an object per upload; the audit catches a wrong count', async () => {
    const plain = await stack.createTenant('no-dedupe');
    const bytes = randomBytes(5_000);
    const a = await postUpload(stack.url, { apiKey: plain.apiKey, key: `p1-${randomUUID()}`, body: bytes });
    const b = await postUpload(stack.url, { apiKey: plain.apiKey, key: `p2-${randomUUID()}`, body: bytes });
    expect(a.json.storageKey).not.toBe(b.json.storageKey);
    expect(await refs(a.json.storageKey)).toBeUndefined();

    const c = await postUpload(stack.url, { apiKey: tenant.apiKey, key: `p3-${randomUUID()}`, body: bytes });
    await stack.runtime.pool.query('UPDATE stored_objects SET refs = refs + 1 WHERE storage_key = $1', [c.json.storageKey]);
    const report = await audit(stack.runtime.pool, stack.runtime.store);
    expect(report.violations).toEqual([`dedupe: object ${c.json.storageKey}: counted 2 references, 1 upload rows name it`]);
    await stack.runtime.pool.query('UPDATE stored_objects SET refs = refs - 1 WHERE storage_key = $1', [c.json.storageKey]);
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  });

  it('concurrent uploads of the same new bytes under eight keys share one object', async () => {
    const bytes = randomBytes(64_000);
    const results = await Promise.all(
      Array.from({ length: 8 }, () => postUpload(stack.url, { apiKey: tenant.apiKey, key: `c-${randomUUID()}`, body: bytes })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(201));
    expect(new Set(results.map((r) => r.json.storageKey)).size).toBe(1);
    expect(await refs(results[0]!.json.storageKey)).toBe(8);
    await expect.poll(async () => (await audit(stack.runtime.pool, stack.runtime.store)).violations, { timeout: 15_000 }).toEqual([]);
  });

  it('refuses a bad dedupe setting', async () => {
    const res = await fetch(`${stack.url}/admin/tenants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x', dedupe: 'md5' }),
    });
    expect(res.status).toBe(400);
  });
});
