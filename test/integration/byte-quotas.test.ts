// Byte quotas and usage over real HTTP on both default stores: an operator sets a tenant's
// quotas (bad bodies refused, nothing changed); every door is refused 413 before storing once
// a quota would be passed, up to the limit exactly; replays never count or get refused;
// concurrent uploads never overshoot and leave no reservation; erasure gives bytes back;
// usage counts commits, not requests, as JSON and CSV, for the tenant and the operator; a
// rendition or variant past the stored quota fails its step, not the upload.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import { ByteQuotaExceeded, checkBytes, reserveBytes, sweepReservations } from '../../src/db/queries/byte-quotas';
import { keyStoragePrefix } from '../../src/temporal/ids';
import { postUpload, sha256 } from '../helpers/http';
import { eventually, listKeys } from '../helpers/inspect';
import { startStackOnStore, type TestStack } from '../helpers/stack';
import { startFileOrigin } from '../support/file-origin';
import { png } from '../helpers/media';
import { exchange } from '../helpers/rufh';

const ADMIN = `admin-${randomUUID()}`;

describe.each(['local', 's3'] as const)('byte quotas on the %s store', (kind) => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startStackOnStore(kind, `quotas_${kind}`, { env: { ADMIN_TOKEN: ADMIN } });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  async function call(method: string, pathname: string, bearer: string, json?: unknown, headers: Record<string, string> = {}) {
    const res = await fetch(`${stack.url}${pathname}`, {
      method,
      headers: { authorization: `Bearer ${bearer}`, ...(json !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: json === undefined ? undefined : typeof json === 'string' ? json : JSON.stringify(json),
    });
    const text = await res.text();
    let parsed: any;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, headers: res.headers, text, json: parsed };
  }
  const setQuotas = (tenantId: string, body: unknown) => call('PATCH', `/admin/tenants/${tenantId}/quotas`, ADMIN, body);
  const quotas = async (apiKey: string) => (await call('GET', '/v1/quotas', apiKey)).json;
  const upload = (apiKey: string, body: Buffer, key = `q-${randomUUID()}`) => postUpload(stack.url, { apiKey, key, body });
  /** A tus upload's whole body in one PATCH from offset 0, answered once committed. */
  const tusWhole = (apiKey: string, location: string, body: Buffer) =>
    fetch(new URL(location, stack.url), {
      method: 'PATCH',
      headers: {
        authorization: `Bearer ${apiKey}`,
        'tus-resumable': '1.0.0',
        'upload-offset': '0',
        'content-type': 'application/offset+octet-stream',
        prefer: 'wait=30',
      },
      body,
    });
  const stored = (tenantId: string, key: string) => listKeys(stack.runtime.store, keyStoragePrefix(tenantId, key));
  const reservations = async (tenantId: string) =>
    (await stack.runtime.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM quota_reservations WHERE tenant_id = $1', [tenantId]))
      .rows[0]!.n;
  const uploadRows = async (tenantId: string) =>
    (await stack.runtime.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM uploads WHERE tenant_id = $1', [tenantId])).rows[0]!.n;

  it('an operator sets, changes and clears quotas; bad bodies, other credentials and unknown tenants change nothing', async () => {
    const t = await stack.createTenant('quota-settings');
    expect((await quotas(t.apiKey)).quotas).toEqual({ maxStoredBytes: null, maxIngressBytesPerMonth: null, maxUploadsPerMonth: null });
    const set = await setQuotas(t.tenantId, { maxStoredBytes: 5000, maxUploadsPerMonth: 7 });
    expect(set.status, set.text).toBe(200);
    expect(set.json.quotas).toEqual({ maxStoredBytes: 5000, maxIngressBytesPerMonth: null, maxUploadsPerMonth: 7 });
    expect(set.json.remaining).toEqual({ storedBytes: 5000, ingressBytesThisMonth: null, uploadsThisMonth: 7 });

    for (const bad of [{}, { maxStoredBytes: -1 }, { maxStoredBytes: 1.5 }, { maxStoredBytes: '10' }, { maxBytes: 10 }, 'not json', []]) {
      const refused = await setQuotas(t.tenantId, bad);
      expect(refused.status, JSON.stringify(bad)).toBe(400);
      expect(refused.headers.get('content-type')).toContain('application/problem+json');
      expect(refused.json.error).toBe('body_invalid');
    }
    expect((await call('PATCH', `/admin/tenants/${t.tenantId}/quotas`, t.apiKey, { maxStoredBytes: 1 })).status).toBe(401);
    expect((await setQuotas(randomUUID(), { maxStoredBytes: 1 })).status).toBe(404);
    expect((await call('GET', `/admin/tenants/${randomUUID()}/quotas`, ADMIN)).status).toBe(404);
    expect((await call('GET', `/admin/tenants/not-a-uuid/quotas`, ADMIN)).status).toBe(404);
    const after = await call('GET', `/admin/tenants/${t.tenantId}/quotas`, ADMIN);
    expect(after.json.quotas).toEqual({ maxStoredBytes: 5000, maxIngressBytesPerMonth: null, maxUploadsPerMonth: 7 });

    // null clears one quota; the others are kept.
    const cleared = await setQuotas(t.tenantId, { maxUploadsPerMonth: null });
    expect(cleared.json.quotas).toEqual({ maxStoredBytes: 5000, maxIngressBytesPerMonth: null, maxUploadsPerMonth: null });
  });

  it('every door is refused 413 before storing once maxStoredBytes would be passed; uploads fill it exactly; replays count once', async () => {
    const t = await stack.createTenant('quota-doors');
    await setQuotas(t.tenantId, { maxStoredBytes: 100_000 });
    const first = randomBytes(60_000);
    const firstKey = `q-first-${randomUUID()}`;
    const ok = await upload(t.apiKey, first, firstKey);
    expect(ok.status, ok.text).toBe(201);
    const replay = await upload(t.apiKey, first, firstKey);
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');

    const expectRefused = (res: { status: number; json: any; text: string }, door: string) => {
      expect(res.status, `${door}: ${res.text}`).toBe(413);
      expect(res.json.error, door).toBe('byte_quota_exceeded');
      expect(res.json, door).toMatchObject({ quota: 'maxStoredBytes', limit: 100_000, remaining: 40_000 });
    };
    const big = randomBytes(50_000);
    const keys: Record<string, string> = {};
    keys.upload = `q-one-${randomUUID()}`;
    expectRefused(await upload(t.apiKey, big, keys.upload), 'upload');

    keys.form = `q-form-${randomUUID()}`;
    const form = new FormData();
    form.append('idempotencyKey', keys.form);
    form.append('file', new Blob([big]), 'f.bin');
    const formRes = await fetch(`${stack.url}/v1/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}` },
      body: form,
    });
    expectRefused({ status: formRes.status, text: '', json: await formRes.json() }, 'form');

    keys.tus = `q-tus-${randomUUID()}`;
    const tus = await call('POST', '/v1/tus', t.apiKey, undefined, {
      'tus-resumable': '1.0.0',
      'upload-length': String(big.length),
      'idempotency-key': keys.tus,
    });
    expectRefused(tus, 'tus');

    keys.rufh = `q-rufh-${randomUUID()}`;
    const rufh = await call('POST', '/v1/uploads', t.apiKey, undefined, {
      'idempotency-key': keys.rufh,
      'upload-complete': '?0',
      'upload-draft-interop-version': '8',
      'upload-length': String(big.length),
      'content-length': '0',
    });
    expectRefused(rufh, 'rufh');

    keys.direct = `q-direct-${randomUUID()}`;
    const direct = await call(
      'POST',
      '/v1/direct-uploads',
      t.apiKey,
      { bytes: big.length, sha256: sha256(big) },
      { 'idempotency-key': keys.direct },
    );
    expectRefused(direct, 'direct');

    for (const [door, key] of Object.entries(keys)) {
      expect(await eventually(async () => (await stored(t.tenantId, key)).length === 0), door).toBe(true);
      const answer = await call('GET', `/v1/idempotency-keys/${encodeURIComponent(key)}`, t.apiKey);
      expect(answer.status, door).toBe(404);
    }
    expect(await uploadRows(t.tenantId)).toBe(1);

    // Up to the limit exactly (the last 10,000 bytes through tus), then not one byte more.
    expect((await upload(t.apiKey, randomBytes(30_000))).status).toBe(201);
    const tusKey = `q-tus-fits-${randomUUID()}`;
    const creation = { 'tus-resumable': '1.0.0', 'upload-length': '10000', 'idempotency-key': tusKey };
    const created = await call('POST', '/v1/tus', t.apiKey, undefined, creation);
    expect(created.status, created.text).toBe(201);
    const location = created.headers.get('location')!;
    const patched = await tusWhole(t.apiKey, location, randomBytes(10_000));
    expect(patched.status).toBe(204);
    const one = await upload(t.apiKey, randomBytes(1));
    expect(one.status).toBe(413);
    expect(one.json).toMatchObject({ remaining: 0, requested: 1 });
    // A replay is answered at the limit, through either door: the tus creation sent again gets its upload URL back.
    expect((await upload(t.apiKey, first, firstKey)).status).toBe(201);
    const again = await call('POST', '/v1/tus', t.apiKey, undefined, creation);
    expect([again.status, again.headers.get('location'), again.headers.get('idempotent-replayed')]).toEqual([201, location, 'true']);
    // Whichever door admits it, a key that made its upload is not refused and reserves nothing; a new key is refused.
    const pool = stack.runtime.pool;
    for (const key of [firstKey, tusKey]) {
      await reserveBytes(pool, { tenantId: t.tenantId, key, bytes: 50_000, ttlSeconds: 60 });
      await checkBytes(pool, { tenantId: t.tenantId, key, bytes: 50_000 });
    }
    expect(await reservations(t.tenantId)).toBe(0);
    await expect(
      reserveBytes(pool, { tenantId: t.tenantId, key: `q-new-${randomUUID()}`, bytes: 1, ttlSeconds: 60 }),
    ).rejects.toBeInstanceOf(ByteQuotaExceeded);

    const standing = await quotas(t.apiKey);
    expect(standing.usage).toMatchObject({ storedBytes: 100_000, uploadsThisMonth: 3, ingressBytesThisMonth: 100_000, reservedBytes: 0 });
    expect(standing.remaining.storedBytes).toBe(0);
    expect(await reservations(t.tenantId)).toBe(0);
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  });

  it('a form whose file cannot fit is refused before its file is read; its retry at the limit is replayed, not refused', async () => {
    const t = await stack.createTenant('quota-form');
    const file = randomBytes(2 * 1024 * 1024);
    await setQuotas(t.tenantId, { maxStoredBytes: file.length });
    const formOf = async (key: string, body: Buffer) => {
      const form = new FormData();
      form.append('idempotencyKey', key);
      form.append('file', new Blob([body]), 'f.bin');
      const r = new Request('http://form', { method: 'POST', body: form });
      return { bytes: Buffer.from(await r.arrayBuffer()), type: r.headers.get('content-type')! };
    };
    const postForm = async (key: string, body: Buffer) => {
      const form = await formOf(key, body);
      const res = await fetch(`${stack.url}/v1/uploads`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': form.type },
        body: form.bytes,
      });
      return { status: res.status, headers: res.headers, json: (await res.json()) as any };
    };
    const firstKey = `q-form-first-${randomUUID()}`;
    const first = await postForm(firstKey, file);
    expect(first.status).toBe(201);

    // The next form's head and its first 64 KiB are enough for the answer: the rest is never sent.
    const key = `q-form-over-${randomUUID()}`;
    const over = await formOf(key, randomBytes(1024 * 1024));
    const x = exchange(`${stack.url}/v1/uploads`, 'POST', {
      authorization: `Bearer ${t.apiKey}`,
      'content-type': over.type,
      'content-length': String(over.bytes.length),
    });
    await x.write(over.bytes.subarray(0, 64 * 1024));
    const refused = await x.response;
    x.cut();
    expect(refused?.status, refused?.text).toBe(413);
    expect(refused?.json).toMatchObject({ error: 'byte_quota_exceeded', quota: 'maxStoredBytes', remaining: 0 });
    expect(await stored(t.tenantId, key)).toEqual([]);

    // The first form sent again at the limit: its key names it, so it is answered as before.
    const again = await postForm(firstKey, file);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.json.uploadId).toBe(first.json.uploadId);
    expect((await quotas(t.apiKey)).usage).toMatchObject({ storedBytes: file.length, uploadsThisMonth: 1, reservedBytes: 0 });
    expect(await reservations(t.tenantId)).toBe(0);
  });

  it('a file of undeclared length is checked once known: an import at the length its origin declares, unread; Uppy at its commit; nothing kept', async () => {
    const t = await stack.createTenant('quota-undeclared');
    await setQuotas(t.tenantId, { maxStoredBytes: 30_000 });
    const file = randomBytes(40_000);
    const origin = await startFileOrigin(file);
    const key = `q-import-${randomUUID()}`;
    try {
      const imported = await call(
        'POST',
        '/v1/imports',
        t.apiKey,
        { url: `${origin.base}/f.bin` },
        { 'idempotency-key': key, prefer: 'wait=60' },
      );
      expect(imported.status, imported.text).toBe(413);
      expect(imported.json).toMatchObject({ error: 'byte_quota_exceeded', quota: 'maxStoredBytes', remaining: 30_000, requested: 40_000 });
    } finally {
      await origin.close();
    }
    expect(await eventually(async () => (await stored(t.tenantId, key)).length === 0)).toBe(true);
    // The length its origin declares is enough: a file past the quota is refused before it is read.
    const big = randomBytes(4 * 1024 * 1024);
    const slow = await startFileOrigin(big);
    slow.throttle(256 * 1024);
    try {
      const bigKey = `q-import-big-${randomUUID()}`;
      const refused = await call(
        'POST',
        '/v1/imports',
        t.apiKey,
        { url: `${slow.base}/f.bin` },
        { 'idempotency-key': bigKey, prefer: 'wait=60' },
      );
      expect(refused.status, refused.text).toBe(413);
      expect(refused.json).toMatchObject({ error: 'byte_quota_exceeded', remaining: 30_000, requested: big.length });
      expect(slow.served).toBeLessThan(big.length / 4);
      expect(await stored(t.tenantId, bigKey)).toEqual([]);
    } finally {
      await slow.close();
    }

    const endpoint = (await call('POST', '/v1/uppy-endpoints', t.apiKey)).json.companionEndpoint as string;
    const uppyKey = `q-uppy-${randomUUID()}`;
    const q = new URLSearchParams({ filename: 'u.bin', 'metadata[idempotencyKey]': uppyKey });
    const params = (await call('GET', `${endpoint}/s3/params?${q}`, t.apiKey)).json as { url: string; fields: Record<string, string> };
    const uppyForm = new FormData();
    for (const [k, v] of Object.entries(params.fields)) uppyForm.append(k, v);
    uppyForm.append('file', new Blob([file]), 'u.bin');
    const uppyPosted = await fetch(new URL(params.url, stack.url), { method: 'POST', body: uppyForm });
    const uppyText = await uppyPosted.text();
    expect(uppyPosted.status, uppyText).toBe(413);
    expect(JSON.parse(uppyText)).toMatchObject({ error: 'byte_quota_exceeded', remaining: 30_000, requested: 40_000 });
    expect(await eventually(async () => (await stored(t.tenantId, uppyKey)).length === 0)).toBe(true);
    expect(await uploadRows(t.tenantId)).toBe(0);
    expect((await quotas(t.apiKey)).usage).toMatchObject({ storedBytes: 0, uploadsThisMonth: 0, reservedBytes: 0 });
  });

  it('concurrent uploads through three doors never pass the quota; every refusal stores nothing; no reservation is left', async () => {
    const t = await stack.createTenant('quota-race');
    const size = 100_000;
    await setQuotas(t.tenantId, { maxStoredBytes: 10 * size });
    const attempts = Array.from({ length: 24 }, (_, i) => ({ i, key: `race-${i}-${randomUUID()}`, body: randomBytes(size) }));
    const results = await Promise.all(
      attempts.map(async ({ i, key, body }) => {
        if (i % 3 === 0) return (await upload(t.apiKey, body, key)).status;
        if (i % 3 === 1) {
          const plan = await call(
            'POST',
            '/v1/direct-uploads',
            t.apiKey,
            { bytes: size, sha256: sha256(body) },
            { 'idempotency-key': key },
          );
          if (plan.status !== 201) return plan.status;
          const put = await fetch(new URL(plan.json.upload.url, stack.url), { method: 'PUT', headers: plan.json.upload.headers, body });
          expect(put.status).toBe(200);
          return (await call('POST', `/v1/direct-uploads/${plan.json.id}/complete`, t.apiKey)).status;
        }
        const created = await call('POST', '/v1/tus', t.apiKey, undefined, {
          'tus-resumable': '1.0.0',
          'upload-length': String(size),
          'idempotency-key': key,
        });
        if (created.status !== 201) return created.status;
        const patched = await tusWhole(t.apiKey, created.headers.get('location')!, body);
        return patched.status === 204 ? 201 : patched.status;
      }),
    );
    const committed = results.filter((s) => s === 201).length;
    expect(
      results.every((s) => s === 201 || s === 413),
      JSON.stringify(results),
    ).toBe(true);
    expect(committed).toBe(10);
    const standing = await eventually(async () => {
      const s = await quotas(t.apiKey);
      return s.usage.reservedUploads === 0 && s;
    });
    expect(standing.usage).toMatchObject({ storedBytes: 10 * size, uploadsThisMonth: 10, reservedBytes: 0 });
    expect(await uploadRows(t.tenantId)).toBe(10);
    for (const [n, a] of attempts.entries()) {
      const keys = await stored(t.tenantId, a.key);
      if (results[n] === 413) expect(keys, a.key).toEqual([]);
    }
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  });

  it('maxUploadsPerMonth and maxIngressBytesPerMonth refuse the next upload; erasure gives stored bytes back', async () => {
    const t = await stack.createTenant('quota-monthly');
    await setQuotas(t.tenantId, { maxUploadsPerMonth: 2 });
    const a = await upload(t.apiKey, randomBytes(1000));
    expect(a.status).toBe(201);
    expect((await upload(t.apiKey, randomBytes(1000))).status).toBe(201);
    const third = await upload(t.apiKey, randomBytes(1000));
    expect(third.status).toBe(413);
    expect(third.json).toMatchObject({ quota: 'maxUploadsPerMonth', limit: 2, remaining: 0 });

    await setQuotas(t.tenantId, { maxUploadsPerMonth: null, maxIngressBytesPerMonth: 2500 });
    expect((await upload(t.apiKey, randomBytes(500))).status).toBe(201);
    const over = await upload(t.apiKey, randomBytes(501));
    expect(over.json).toMatchObject({ quota: 'maxIngressBytesPerMonth', remaining: 0 });

    // Stored bytes come back once erased; ingress this month does not.
    await setQuotas(t.tenantId, { maxIngressBytesPerMonth: null, maxStoredBytes: 2500 });
    expect((await upload(t.apiKey, randomBytes(100))).json).toMatchObject({ quota: 'maxStoredBytes', remaining: 0 });
    const deleted = await call('DELETE', `/v1/uploads/${a.json.uploadId}`, t.apiKey, undefined, { prefer: 'wait=30' });
    expect(deleted.status, deleted.text).toBe(200);
    const standing = await eventually(async () => {
      const s = await quotas(t.apiKey);
      return s.usage.storedBytes === 1500 && s;
    });
    expect(standing.usage.ingressBytesThisMonth).toBe(2500);
    expect((await upload(t.apiKey, randomBytes(1000))).status).toBe(201);
    expect((await upload(t.apiKey, randomBytes(1))).status).toBe(413);
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  });

  it('usage counts commits, never requests: replays, duplicates and refusals add nothing; JSON, CSV and the operator agree', async () => {
    const t = await stack.createTenant('usage');
    const sizes = [1000, 2000, 3000];
    for (const n of sizes) {
      const body = randomBytes(n);
      const key = `u-${randomUUID()}`;
      // The same request three times at once, then twice more: one commit.
      const answers = await Promise.all([upload(t.apiKey, body, key), upload(t.apiKey, body, key), upload(t.apiKey, body, key)]);
      expect(
        answers.map((r) => r.status).every((s) => s === 201 || s === 409),
        JSON.stringify(answers.map((r) => r.status)),
      ).toBe(true);
      await upload(t.apiKey, body, key);
      expect((await upload(t.apiKey, body, key)).status).toBe(201);
    }
    // A refused request (bad checksum) counts nothing either.
    expect(
      (await postUpload(stack.url, { apiKey: t.apiKey, key: `u-bad-${randomUUID()}`, body: randomBytes(10), sha: 'a'.repeat(64) })).status,
    ).toBe(400);

    const usage = await call('GET', '/v1/usage?granularity=hour', t.apiKey);
    expect(usage.status, usage.text).toBe(200);
    expect(usage.json.buckets).toHaveLength(48);
    const totals = (buckets: any[]) =>
      buckets.reduce((s, b) => ({ uploads: s.uploads + b.uploads, ingress: s.ingress + b.ingressBytes, added: s.added + b.storedAdded }), {
        uploads: 0,
        ingress: 0,
        added: 0,
      });
    expect(totals(usage.json.buckets)).toEqual({ uploads: 3, ingress: 6000, added: 6000 });
    expect(usage.json.buckets.at(-1).storedBytes).toBe(6000);
    expect(usage.json.buckets[0].storedBytes).toBe(0);

    const daily = await call('GET', '/v1/usage', t.apiKey);
    expect(daily.json.granularity).toBe('day');
    expect(daily.json.buckets).toHaveLength(30);
    expect(totals(daily.json.buckets)).toEqual({ uploads: 3, ingress: 6000, added: 6000 });

    for (const ask of [
      { headers: { accept: 'text/csv' }, query: '' },
      { headers: {}, query: '&format=csv' },
    ]) {
      const csv = await fetch(`${stack.url}/v1/usage?granularity=day${ask.query}`, {
        headers: { authorization: `Bearer ${t.apiKey}`, ...ask.headers },
      });
      expect(csv.status).toBe(200);
      expect(csv.headers.get('content-type')).toContain('text/csv');
      const lines = (await csv.text()).trim().split('\r\n');
      expect(lines[0]).toBe('at,uploads,ingress_bytes,import_bytes,egress_bytes,renders,stored_added,stored_released,stored_bytes');
      expect(lines).toHaveLength(31);
      expect(lines.at(-1)!.split(',').slice(1, 3)).toEqual(['3', '6000']);
    }

    const operator = await call('GET', `/admin/usage?granularity=hour&tenantId=${t.tenantId}`, ADMIN);
    expect(operator.status, operator.text).toBe(200);
    expect(operator.json.buckets).toEqual(usage.json.buckets);
    const everyone = await call('GET', '/admin/usage?granularity=hour', ADMIN);
    expect(everyone.json.tenantId).toBeNull();
    expect(totals(everyone.json.buckets).uploads).toBeGreaterThanOrEqual(3);
    expect((await call('GET', `/admin/usage?tenantId=${randomUUID()}`, ADMIN)).status).toBe(404);
    expect((await call('GET', '/admin/usage', t.apiKey)).status).toBe(401);

    for (const bad of [
      'granularity=week',
      'from=yesterday',
      'from=2026-12-02T00:00:00Z&to=2026-12-01T00:00:00Z',
      'granularity=hour&from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z',
      'tenantId=' + t.tenantId,
      'format=xml',
    ]) {
      const refused = await call('GET', `/v1/usage?${bad}`, t.apiKey);
      expect(refused.status, bad).toBe(400);
      expect(refused.json.error, bad).toBe('query_invalid');
    }
    expect((await call('GET', '/v1/usage', 'not-a-key')).status).toBe(401);
  });

  it('egress counts the bytes Oncely sent (whole, ranged, signed, variants) and renders count once per variant stored', async () => {
    const t = await stack.createTenant('egress');
    const body = randomBytes(5000);
    const posted = await upload(t.apiKey, body);
    expect(posted.status).toBe(201);
    const id = posted.json.uploadId as string;
    const get = (path: string, headers: Record<string, string> = {}, bearer: string | null = t.apiKey) =>
      fetch(new URL(path, stack.url), { headers: { ...(bearer ? { authorization: `Bearer ${bearer}` } : {}), ...headers } });
    expect((await (await get(`/v1/uploads/${id}/content`)).arrayBuffer()).byteLength).toBe(5000);
    expect((await (await get(`/v1/uploads/${id}/content`, { range: 'bytes=0-99' })).arrayBuffer()).byteLength).toBe(100);
    const etag = (
      await fetch(`${stack.url}/v1/uploads/${id}/content`, { method: 'HEAD', headers: { authorization: `Bearer ${t.apiKey}` } })
    ).headers.get('etag')!;
    expect((await get(`/v1/uploads/${id}/content`, { 'if-none-match': etag })).status).toBe(304);
    const link = await call('POST', `/v1/uploads/${id}/download-urls`, t.apiKey, {});
    expect(link.status, link.text).toBe(201);
    // A URL the store signed is served by the store, not counted here; the embedded store's is Oncely's.
    const signed = await get(link.json.url, {}, null);
    expect((await signed.arrayBuffer()).byteLength).toBe(5000);
    const servedByOncely = new URL(link.json.url, stack.url).origin === new URL(stack.url).origin;

    const image = await postUpload(stack.url, {
      apiKey: t.apiKey,
      key: `png-${randomUUID()}`,
      body: await png(32, 32),
      contentType: 'image/png',
    });
    expect(image.status, image.text).toBe(201);
    expect((await call('POST', '/v1/image-presets', t.apiKey, { name: 'tiny', spec: 'w_8,f_png' })).status).toBe(201);
    const variant = await get(`/v1/uploads/${image.json.uploadId}/images/tiny`);
    expect(variant.status).toBe(200);
    const variantBytes = (await variant.arrayBuffer()).byteLength;
    expect((await get(`/v1/uploads/${image.json.uploadId}/images/tiny`)).status).toBe(200);

    const want = 5000 + 100 + (servedByOncely ? 5000 : 0) + 2 * variantBytes;
    const usage = await eventually(async () => {
      const u = await call('GET', '/v1/usage?granularity=hour', t.apiKey);
      const last = u.json.buckets.at(-1);
      return last.egressBytes === want && last;
    });
    expect(usage).toMatchObject({ renders: 1, uploads: 2 });
    // Stored: both originals, the PNG's renditions and its variant, each row counted once.
    await eventually(async () => (await call('GET', `/v1/uploads/${image.json.uploadId}`, t.apiKey)).json.processing.status === 'ready');
    const derived = await stack.runtime.pool.query<{ n: number }>(
      `SELECT coalesce(sum(bytes), 0)::int AS n FROM (SELECT upload_id, bytes FROM renditions UNION ALL SELECT upload_id, bytes FROM image_variants) d
        WHERE upload_id = $1`,
      [image.json.uploadId],
    );
    expect(derived.rows[0]!.n).toBeGreaterThan(variantBytes - 1);
    const originals = 5000 + (image.json.bytes as number);
    expect((await quotas(t.apiKey)).usage.storedBytes).toBe(originals + derived.rows[0]!.n);
    // Erasing the PNG gives back its original, renditions and variant.
    expect((await call('DELETE', `/v1/uploads/${image.json.uploadId}`, t.apiKey, undefined, { prefer: 'wait=30' })).status).toBe(200);
    expect(await eventually(async () => (await quotas(t.apiKey)).usage.storedBytes === 5000)).toBe(true);
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  });

  it('a rendition or variant past maxStoredBytes fails its step with the quota as the reason, not the upload; nothing of it is kept', async () => {
    const t = await stack.createTenant('quota-derived');
    const image = await png(64, 64);
    await setQuotas(t.tenantId, { maxStoredBytes: image.length });
    const posted = await postUpload(stack.url, { apiKey: t.apiKey, key: `derived-${randomUUID()}`, body: image, contentType: 'image/png' });
    expect(posted.status, posted.text).toBe(201);
    const id = posted.json.uploadId as string;
    const detail = await eventually(async () => {
      const u = await call('GET', `/v1/uploads/${id}?wait=20`, t.apiKey);
      return u.json.status === 'processed' && u.json;
    });
    expect(detail.processing.status).toBe('failed');
    expect(detail.processing.reason).toContain('maxStoredBytes');
    expect(detail.renditions).toEqual([]);
    expect(await listKeys(stack.runtime.store, `tenants/${t.tenantId}/renditions/${id}/`)).toEqual([]);
    const content = await fetch(`${stack.url}/v1/uploads/${id}/content`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(Buffer.from(await content.arrayBuffer())).toEqual(image);

    expect((await call('POST', '/v1/image-presets', t.apiKey, { name: 'small', spec: 'w_16,f_png' })).status).toBe(201);
    const refused = await call('GET', `/v1/uploads/${id}/images/small`, t.apiKey);
    expect(refused.status, refused.text).toBe(413);
    expect(refused.json).toMatchObject({ error: 'byte_quota_exceeded', quota: 'maxStoredBytes', limit: image.length, remaining: 0 });
    expect(await listKeys(stack.runtime.store, `tenants/${t.tenantId}/renditions/${id}/`)).toEqual([]);
    const rows = await stack.runtime.pool.query('SELECT 1 FROM image_variants WHERE upload_id = $1', [id]);
    expect(rows.rowCount).toBe(0);
    expect((await quotas(t.apiKey)).usage.storedBytes).toBe(image.length);

    // With room, the same variant is made and counted.
    await setQuotas(t.tenantId, { maxStoredBytes: null });
    const made = await fetch(`${stack.url}/v1/uploads/${id}/images/small`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(made.status).toBe(200);
    const variantBytes = (await made.arrayBuffer()).byteLength;
    expect((await quotas(t.apiKey)).usage.storedBytes).toBe(image.length + variantBytes);
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  });

  it('a retry admitted while its key commits leaves no reservation behind, though its insert waited on the commit', async () => {
    const t = await stack.createTenant('quota-race');
    const pool = stack.runtime.pool;
    const key = `q-race-${randomUUID()}`;
    await reserveBytes(pool, { tenantId: t.tenantId, key, bytes: 10, ttlSeconds: 60 });
    expect(await reservations(t.tenantId)).toBe(1);
    // The key's commit, held open: its reservation deleted and its upload row made.
    const commit = await pool.connect();
    try {
      await commit.query('BEGIN');
      await commit.query('DELETE FROM quota_reservations WHERE tenant_id = $1 AND idempotency_key = $2', [t.tenantId, key]);
      await commit.query(
        `INSERT INTO uploads (id, tenant_id, idempotency_key, workflow_id, storage_key, bytes, sha256, content_type)
         VALUES (gen_random_uuid(), $1, $2, 'race', 'race/' || $2, 10, repeat('a', 64), 'text/plain')`,
        [t.tenantId, key],
      );
      // The retry's reservation checks for the upload (none yet), then waits on the deleted row.
      const retry = reserveBytes(pool, { tenantId: t.tenantId, key, bytes: 10, ttlSeconds: 60 });
      await eventually(async () => {
        const waiting = await pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO quota_reservations%'`,
        );
        return waiting.rows[0]!.n === 1;
      }, 30_000);
      await commit.query('COMMIT');
      await retry;
      expect(await reservations(t.tenantId)).toBe(0);
    } finally {
      await commit.query('ROLLBACK').catch(() => {});
      // The row stood for a commit: it goes, as no real upload was made.
      await commit.query('DELETE FROM uploads WHERE tenant_id = $1 AND idempotency_key = $2', [t.tenantId, key]);
      commit.release();
    }
  });

  it('a reservation nothing ends lapses at its expiry; one an open session holds stays until the session ends', async () => {
    const t = await stack.createTenant('quota-sweep');
    const { pool } = stack.runtime;
    const session = await call('POST', '/v1/tus', t.apiKey, undefined, {
      'tus-resumable': '1.0.0',
      'upload-length': '5000',
      'idempotency-key': 'held-by-an-open-session',
    });
    expect(session.status, session.text).toBe(201);
    // The audit holds an open session to its reservation of the declared length.
    const held = "tenant_id = $1 AND idempotency_key = 'held-by-an-open-session'";
    await pool.query(`UPDATE quota_reservations SET bytes = 1 WHERE ${held}`, [t.tenantId]);
    expect((await audit(pool, stack.runtime.store)).violations).toContain(
      `usage: tenant ${t.tenantId}: open session of key held-by-an-open-session declares 5000 bytes and reserves 1`,
    );
    await pool.query(`UPDATE quota_reservations SET bytes = 5000 WHERE ${held}`, [t.tenantId]);
    await pool.query(
      `INSERT INTO quota_reservations (tenant_id, idempotency_key, bytes, expires_at) VALUES ($1, 'abandoned', 7000, now() - interval '1 second')`,
      [t.tenantId],
    );
    await pool.query(`UPDATE quota_reservations SET expires_at = now() - interval '1 second' WHERE tenant_id = $1`, [t.tenantId]);
    expect((await quotas(t.apiKey)).usage).toMatchObject({ reservedBytes: 12_000, reservedUploads: 2 });
    await sweepReservations(pool);
    expect((await quotas(t.apiKey)).usage).toMatchObject({ reservedBytes: 5000, reservedUploads: 1 });
    // Ending the session ends its reservation.
    const ended = await fetch(new URL(session.headers.get('location')!, stack.url), {
      method: 'DELETE',
      headers: { authorization: `Bearer ${t.apiKey}`, 'tus-resumable': '1.0.0' },
    });
    expect(ended.status).toBe(204);
    expect((await quotas(t.apiKey)).usage).toMatchObject({ reservedBytes: 0, reservedUploads: 0 });
  });
});
