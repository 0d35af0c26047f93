// Resumable uploads (tus 1.0) under one key, on both stores: tus-js-client uploads, is
// interrupted and resumes; raw HTTP pins the protocol edges (versions, offsets, checksums,
// locks, termination) and the key rule (the same creation is the same session; 50 at once
// make one; another request under the key is 422). Completion is the commit: the key's
// stored answer is the same upload JSON a one-request upload gets.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tus from 'tus-js-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import { getJson, openRequest, postUpload, sha256 } from '../helpers/http';
import { listKeys, readObject } from '../helpers/inspect';
import { startTestStack, type TestStack } from '../helpers/stack';

const MiB = 1024 * 1024;
const b64 = (s: string) => Buffer.from(s).toString('base64');

interface Ctx {
  stack: TestStack;
  tenant: { tenantId: string; apiKey: string };
}

function tusUpload(
  ctx: Ctx,
  file: Buffer,
  key: string,
  opts: Partial<tus.UploadOptions> = {},
): { upload: tus.Upload; done: Promise<tus.Upload> } {
  let upload!: tus.Upload;
  const done = new Promise<tus.Upload>((resolve, reject) => {
    upload = new tus.Upload(file, {
      endpoint: `${ctx.stack.url}/v1/tus`,
      headers: { authorization: `Bearer ${ctx.tenant.apiKey}`, 'idempotency-key': key },
      metadata: { filename: 'big.bin', filetype: 'application/octet-stream' },
      retryDelays: [200, 500, 1000, 2000, 4000],
      ...opts,
      onSuccess: () => resolve(upload),
      onError: reject,
    });
  });
  return { upload, done };
}

/** A sample of this API process's /metrics; `absent` when it has none (NaN: a missing metric fails any comparison). */
async function metric(ctx: Ctx, sample: string, absent = NaN): Promise<number> {
  const text = await (await fetch(`${ctx.stack.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line ? Number(line.slice(sample.length + 1)) : absent;
}

/** Completions of this API process whose SHA-256 was read back from the store. */
const hashReadBacks = (ctx: Ctx) => metric(ctx, 'oncely_resumable_hash_read_back_total');
/** tus uploads this API process had the store assemble (the histogram's count; absent before the first). */
const tusAssemblies = (ctx: Ctx) => metric(ctx, 'oncely_resumable_assemble_seconds_count{mode="tus"}', 0);

async function keyAnswer(ctx: Ctx, key: string) {
  return getJson(`${ctx.stack.url}/v1/idempotency-keys/${key}`, ctx.tenant.apiKey);
}

describe.each(['s3', 'local'] as const)('tus-js-client against the %s store', (kind) => {
  const ctx = {} as Ctx;
  let dataDir: string | undefined;
  beforeAll(async () => {
    dataDir = kind === 'local' ? mkdtempSync(path.join(os.tmpdir(), 'oncely-tus-')) : undefined;
    ctx.stack = await startTestStack(`tus_${kind}`, {
      env: { RESUMABLE_PART_MIB: '5', ...(dataDir ? { S3_ENDPOINT: '', DATA_DIR: dataDir } : {}) },
    });
    ctx.tenant = await ctx.stack.createTenant('tus');
  });
  afterAll(async () => {
    await ctx.stack?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('uploads in chunks below the part size, commits once, and the key answers the same upload JSON', async () => {
    const file = randomBytes(12 * MiB + 12345);
    const key = `tus-${randomUUID()}`;
    const readBacks = await hashReadBacks(ctx);
    const assemblies = await tusAssemblies(ctx);
    const { upload, done } = tusUpload(ctx, file, key, { chunkSize: 3 * MiB + 7 });
    upload.start();
    await done;
    // One process served every PATCH: the hash it held is the digest, nothing is read back.
    expect(await hashReadBacks(ctx)).toBe(readBacks);
    // The store assembled the upload once, and the time it took is on /metrics.
    expect(await tusAssemblies(ctx)).toBe(assemblies + 1);
    const answer = await keyAnswer(ctx, key);
    expect(answer.json).toMatchObject({
      state: 'completed',
      status: 201,
      response: { bytes: file.length, sha256: sha256(file), fileName: 'big.bin', contentType: 'application/octet-stream' },
    });
    const uploadId = answer.json.response.uploadId;
    expect(upload.url).toMatch(/\/v1\/tus\/[0-9a-f-]{36}$/);
    const row = await getJson(`${ctx.stack.url}/v1/uploads/${uploadId}`, ctx.tenant.apiKey);
    expect(row.json).toMatchObject({ uploadId, sha256: sha256(file), bytes: file.length });
    const stored = await readObject(ctx.stack.runtime.store, answer.json.response.storageKey);
    expect(sha256(stored)).toBe(sha256(file));
    // The same creation again: the same session, complete.
    const again = await fetch(`${ctx.stack.url}/v1/tus`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${ctx.tenant.apiKey}`,
        'idempotency-key': key,
        'tus-resumable': '1.0.0',
        'upload-length': String(file.length),
        'upload-metadata': `filename ${b64('big.bin')},filetype ${b64('application/octet-stream')}`,
      },
    });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(new URL(again.headers.get('location')!, ctx.stack.url).pathname).toBe(new URL(upload.url!).pathname);
    expect(again.headers.get('upload-offset')).toBe(String(file.length));
    const report = await audit(ctx.stack.runtime.pool, ctx.stack.runtime.store);
    expect(report.violations).toEqual([]);
  });

  it('the last PATCH sent again after its commit (answer lost, or the API died before marking the session) gets the answer and the object stays', async () => {
    const file = randomBytes(6 * MiB + 3);
    const key = `tus-again-${randomUUID()}`;
    const { upload, done } = tusUpload(ctx, file, key, { chunkSize: 8 * MiB });
    upload.start();
    await done;
    const answer = await keyAnswer(ctx, key);
    const { uploadId, storageKey } = answer.json.response;
    const id = new URL(upload.url!).pathname.split('/').pop();
    const patchAgain = () =>
      fetch(upload.url!, {
        method: 'PATCH',
        headers: {
          authorization: `Bearer ${ctx.tenant.apiKey}`,
          'tus-resumable': '1.0.0',
          'upload-offset': String(file.length),
          'content-type': 'application/offset+octet-stream',
        },
        body: new Uint8Array(0),
      });
    // Lost answer: the session is marked committed.
    const first = await patchAgain();
    expect(first.status).toBe(204);
    expect(first.headers.get('location')).toBe(`/v1/uploads/${uploadId}`);
    // The API died between the commit and marking the session: it still says completing.
    await ctx.stack.runtime.pool.query(`UPDATE resumable_sessions SET state = 'completing' WHERE id = $1`, [id]);
    const second = await patchAgain();
    expect(second.status).toBe(204);
    expect(second.headers.get('location')).toBe(`/v1/uploads/${uploadId}`);
    expect(sha256(await readObject(ctx.stack.runtime.store, storageKey))).toBe(sha256(file));
    expect((await audit(ctx.stack.runtime.pool, ctx.stack.runtime.store)).violations).toEqual([]);
  });

  it('an interrupted upload resumes from the acknowledged offset and sends the rest only', async () => {
    const file = randomBytes(16 * MiB);
    const key = `tus-resume-${randomUUID()}`;
    const readBacks = await hashReadBacks(ctx);
    let sentBeforeAbort = 0;
    const first = tusUpload(ctx, file, key, {
      onProgress: (sent) => {
        sentBeforeAbort = sent;
        if (sent > 7 * MiB) void first.upload.abort();
      },
    });
    first.upload.start();
    await expect.poll(() => sentBeforeAbort > 7 * MiB, { timeout: 30_000 }).toBe(true);
    await expect.poll(() => first.upload.url !== null, { timeout: 10_000 }).toBe(true);
    // What the server acknowledged survives: at least the first whole part.
    let acknowledged = 0;
    await expect
      .poll(
        async () => {
          const head = await fetch(first.upload.url!, {
            method: 'HEAD',
            headers: { authorization: `Bearer ${ctx.tenant.apiKey}`, 'tus-resumable': '1.0.0' },
          });
          acknowledged = Number(head.headers.get('upload-offset'));
          return head.status === 200 && acknowledged >= 5 * MiB;
        },
        { timeout: 30_000 },
      )
      .toBe(true);
    let resentFrom = -1;
    const second = tusUpload(ctx, file, key, {
      uploadUrl: first.upload.url,
      onProgress: (sent) => {
        if (resentFrom < 0) resentFrom = sent;
      },
    });
    second.upload.start();
    await second.done;
    const answer = await keyAnswer(ctx, key);
    expect(answer.json.response).toMatchObject({ bytes: file.length, sha256: sha256(file) });
    const rows = await ctx.stack.runtime.pool.query(
      'SELECT count(*)::int AS n FROM uploads WHERE tenant_id = $1 AND idempotency_key = $2',
      [ctx.tenant.tenantId, key],
    );
    expect(rows.rows[0].n).toBe(1);
    // The resume started at (or past) what the server had acknowledged, not at byte 0.
    expect(resentFrom).toBeGreaterThanOrEqual(5 * MiB);
    // The cut append left the held hash at the acknowledged offset: the resume continued it.
    expect(await hashReadBacks(ctx)).toBe(readBacks);
  });
});

describe('tus protocol and the key rule (raw HTTP)', () => {
  const ctx = {} as Ctx;
  beforeAll(async () => {
    ctx.stack = await startTestStack('tus_raw', { env: { RESUMABLE_PART_MIB: '5' } });
    ctx.tenant = await ctx.stack.createTenant('tus-raw');
  });
  afterAll(() => ctx.stack?.stop());

  const auth = () => ({ authorization: `Bearer ${ctx.tenant.apiKey}`, 'tus-resumable': '1.0.0' });
  const create = (key: string, length: number, extra: Record<string, string> = {}) =>
    fetch(`${ctx.stack.url}/v1/tus`, {
      method: 'POST',
      headers: {
        ...auth(),
        'idempotency-key': key,
        'upload-length': String(length),
        'upload-metadata': `filename ${b64('f.txt')},filetype ${b64('text/plain')}`,
        ...extra,
      },
    });
  const patch = (url: string, offset: number, body: Buffer, extra: Record<string, string> = {}) =>
    fetch(new URL(url, ctx.stack.url), {
      method: 'PATCH',
      headers: { ...auth(), 'content-type': 'application/offset+octet-stream', 'upload-offset': String(offset), ...extra },
      body,
    });
  const head = (url: string) => fetch(new URL(url, ctx.stack.url), { method: 'HEAD', headers: auth() });

  it('OPTIONS answers discovery without credentials', async () => {
    const res = await fetch(`${ctx.stack.url}/v1/tus`, { method: 'OPTIONS' });
    expect(res.status).toBe(204);
    expect(res.headers.get('tus-version')).toBe('1.0.0');
    expect(res.headers.get('tus-extension')).toBe('creation,creation-with-upload,termination,expiration,checksum');
    expect(res.headers.get('tus-checksum-algorithm')).toBe('sha1,sha256');
    expect(res.headers.get('tus-resumable')).toBe('1.0.0');
  });

  it('requires Tus-Resumable 1.0.0 (412 naming the version) and an Idempotency-Key on creation', async () => {
    const res = await fetch(`${ctx.stack.url}/v1/tus`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${ctx.tenant.apiKey}`,
        'tus-resumable': '0.2.2',
        'idempotency-key': `k-${randomUUID()}`,
        'upload-length': '3',
      },
    });
    expect(res.status).toBe(412);
    expect(res.headers.get('tus-version')).toBe('1.0.0');
    expect(res.headers.get('tus-resumable')).toBe('1.0.0');
    const noKey = await fetch(`${ctx.stack.url}/v1/tus`, { method: 'POST', headers: { ...auth(), 'upload-length': '3' } });
    expect(noKey.status).toBe(400);
    expect(((await noKey.json()) as { error: string }).error).toBe('idempotency_key_required');
  });

  it('the key owns the session: same request → same URL (replayed); another length or metadata → 422; 50 at once → one session', async () => {
    const key = `tus-key-${randomUUID()}`;
    const results = await Promise.all(Array.from({ length: 50 }, () => create(key, 100)));
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(201));
    expect(new Set(results.map((r) => r.headers.get('location'))).size).toBe(1);
    expect(results.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(49);
    const sessions = await ctx.stack.runtime.pool.query(
      'SELECT count(*)::int AS n FROM resumable_sessions WHERE tenant_id = $1 AND idempotency_key = $2',
      [ctx.tenant.tenantId, key],
    );
    expect(sessions.rows[0].n).toBe(1);
    expect((await create(key, 101)).status).toBe(422);
    expect((await create(key, 100, { 'upload-metadata': `filename ${b64('other.txt')},filetype ${b64('text/plain')}` })).status).toBe(422);
    // A one-request upload under the key is refused too (the mode is part of the request).
    const one = await postUpload(ctx.stack.url, {
      apiKey: ctx.tenant.apiKey,
      key,
      body: Buffer.alloc(100),
      contentType: 'text/plain',
      fileName: 'f.txt',
    });
    expect(one.status).toBe(422);
  });

  it('a key already used by a one-request upload is 422 for a tus creation', async () => {
    const key = `tus-used-${randomUUID()}`;
    expect(
      (await postUpload(ctx.stack.url, { apiKey: ctx.tenant.apiKey, key, body: Buffer.from('one'), contentType: 'text/plain' })).status,
    ).toBe(201);
    const res = await create(key, 3);
    expect(res.status).toBe(422);
    expect(((await res.json()) as { error: string }).error).toBe('idempotency_key_reuse');
  });

  it('a wrong offset is 409; a checksum mismatch is 460 with the offset unchanged; a matching sha1 or sha256 is accepted', async () => {
    const file = Buffer.from('hello resumable world');
    const created = await create(`tus-ck-${randomUUID()}`, file.length);
    const url = created.headers.get('location')!;
    expect((await patch(url, 5, file.subarray(0, 5))).status).toBe(409);
    const bad = await patch(url, 0, file.subarray(0, 5), {
      'upload-checksum': `sha1 ${createHash('sha1').update('other').digest('base64')}`,
    });
    expect(bad.status).toBe(460);
    expect((await head(url)).headers.get('upload-offset')).toBe('0');
    const unknown = await patch(url, 0, file.subarray(0, 5), { 'upload-checksum': 'md5 AAAA' });
    expect(unknown.status).toBe(400);
    const ok = await patch(url, 0, file.subarray(0, 5), {
      'upload-checksum': `sha1 ${createHash('sha1').update(file.subarray(0, 5)).digest('base64')}`,
    });
    expect(ok.status).toBe(204);
    expect(ok.headers.get('upload-offset')).toBe('5');
    const last = await patch(url, 5, file.subarray(5), {
      'upload-checksum': `sha256 ${createHash('sha256').update(file.subarray(5)).digest('base64')}`,
    });
    expect(last.status).toBe(204);
    expect(last.headers.get('upload-offset')).toBe(String(file.length));
    expect(last.headers.get('location')).toMatch(/^\/v1\/uploads\/[0-9a-f-]{36}$/);
    const upload = await getJson(`${ctx.stack.url}${last.headers.get('location')}`, ctx.tenant.apiKey);
    expect(upload.json).toMatchObject({ sha256: sha256(file), bytes: file.length, contentType: 'text/plain', fileName: 'f.txt' });
  });

  it('a small tail is absorbed by the next append, and an append ending with 5 MiB or more stores a part, not a tail', async () => {
    const file = randomBytes(2 * MiB + 5 * MiB + 6 * MiB + 1234);
    const created = await create(`tus-parts-${randomUUID()}`, file.length);
    const url = created.headers.get('location')!;
    const id = url.split('/').pop()!;
    const row = async () =>
      (
        await ctx.stack.runtime.pool.query<{ tail_bytes: string; parts: { bytes: number }[] }>(
          'SELECT tail_bytes, parts FROM resumable_sessions WHERE id = $1',
          [id],
        )
      ).rows[0]!;
    const tailKeys = async () =>
      (await listKeys(ctx.stack.runtime.store, `tenants/${ctx.tenant.tenantId}/`)).filter((k) => k.includes('.tail.'));
    // 2 MiB: below a part, kept as a tail.
    expect((await patch(url, 0, file.subarray(0, 2 * MiB))).status).toBe(204);
    expect(await row()).toMatchObject({ tail_bytes: String(2 * MiB), parts: [] });
    // 5 MiB more: the first part takes the tail and all of them (7 MiB), nothing is left below a part.
    expect((await patch(url, 2 * MiB, file.subarray(2 * MiB, 7 * MiB))).status).toBe(204);
    expect(await row()).toMatchObject({ tail_bytes: '0', parts: [{ bytes: 7 * MiB }] });
    expect(await tailKeys()).toEqual([]);
    // 6 MiB (its length declared): one part of 6 MiB, not a part of 5 and a tail of 1.
    expect((await patch(url, 7 * MiB, file.subarray(7 * MiB, 13 * MiB))).status).toBe(204);
    expect(await row()).toMatchObject({ tail_bytes: '0', parts: [{ bytes: 7 * MiB }, { bytes: 6 * MiB }] });
    const last = await patch(url, 13 * MiB, file.subarray(13 * MiB));
    expect(last.status).toBe(204);
    const upload = await getJson(`${ctx.stack.url}${last.headers.get('location')}`, ctx.tenant.apiKey);
    expect(upload.json).toMatchObject({ sha256: sha256(file), bytes: file.length });
    expect(sha256(await readObject(ctx.stack.runtime.store, upload.json.storageKey))).toBe(sha256(file));
  });

  it('a second PATCH while one is writing gets 423; the first finishes', async () => {
    const created = await create(`tus-lock-${randomUUID()}`, 10);
    const url = new URL(created.headers.get('location')!, ctx.stack.url);
    const slow = openRequest(
      ctx.stack.url,
      `PATCH ${url.pathname} HTTP/1.1\nHost: x\nAuthorization: Bearer ${ctx.tenant.apiKey}\nTus-Resumable: 1.0.0\nContent-Type: application/offset+octet-stream\nUpload-Offset: 0\nContent-Length: 10\n\n`,
    );
    await slow.send(Buffer.from('01234'));
    // Once the first PATCH holds the session's lease, a second one is refused.
    await expect
      .poll(
        async () =>
          (await ctx.stack.runtime.pool.query('SELECT lease_owner FROM resumable_sessions WHERE id = $1', [url.pathname.split('/').pop()]))
            .rows[0]?.lease_owner,
        { timeout: 10_000 },
      )
      .toBeTruthy();
    const second = await patch(url.href, 0, Buffer.from('x'));
    expect(second.status).toBe(423);
    expect(second.headers.get('retry-after')).toBe('1');
    await slow.send(Buffer.from('56789'));
    expect((await slow.response)?.status).toBe(204);
    expect((await head(url.href)).headers.get('upload-offset')).toBe('10');
  });

  it('a client that stalls mid-part while the part streams to the store is taken over: the new PATCH stores the part, the upload commits whole', async () => {
    // 6 MiB declared: one part, streamed to the store as it arrives (S3).
    const file = randomBytes(6 * MiB);
    const created = await create(`tus-stall-${randomUUID()}`, file.length);
    const url = new URL(created.headers.get('location')!, ctx.stack.url);
    const id = url.pathname.split('/').pop();
    const stalled = openRequest(
      ctx.stack.url,
      `PATCH ${url.pathname} HTTP/1.1\nHost: x\nAuthorization: Bearer ${ctx.tenant.apiKey}\nTus-Resumable: 1.0.0\nContent-Type: application/offset+octet-stream\nUpload-Offset: 0\nContent-Length: ${file.length}\n\n`,
    );
    // 2 MiB, then nothing: the connection stays open but the client sends no more.
    expect(await stalled.send(file.subarray(0, 2 * MiB))).toBe(true);
    await expect
      .poll(
        async () =>
          (await ctx.stack.runtime.pool.query('SELECT lease_owner FROM resumable_sessions WHERE id = $1', [id])).rows[0]?.lease_owner,
        {
          timeout: 10_000,
        },
      )
      .toBeTruthy();
    // The part in flight does not count as progress: after RESUMABLE_STALL_SECONDS without
    // bytes a new PATCH takes the lease over (423 until then).
    const statuses: number[] = [];
    let last: Response | undefined;
    await expect
      .poll(
        async () => {
          last = await patch(url.href, 0, file);
          statuses.push(last.status);
          return last.status;
        },
        { timeout: 30_000, interval: 500 },
      )
      .toBe(204);
    expect(statuses[0]).toBe(423);
    // The stalled PATCH acknowledged nothing and got no success.
    expect((await stalled.response)?.status).not.toBe(204);
    const upload = await getJson(`${ctx.stack.url}${last!.headers.get('location')}`, ctx.tenant.apiKey);
    expect(upload.json).toMatchObject({ sha256: sha256(file), bytes: file.length });
    expect(sha256(await readObject(ctx.stack.runtime.store, upload.json.storageKey))).toBe(sha256(file));
  });

  it('a declared SHA-256 that the whole file does not match fails the session, records nothing and frees the key', async () => {
    const key = `tus-sha-${randomUUID()}`;
    const file = Buffer.from('the real bytes');
    const created = await create(key, file.length, { 'x-file-sha256': sha256('other bytes') });
    const res = await patch(created.headers.get('location')!, 0, file);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('checksum_mismatch');
    expect((await head(created.headers.get('location')!)).status).toBe(404);
    expect(
      (await ctx.stack.runtime.pool.query('SELECT 1 FROM idempotency_keys WHERE tenant_id = $1 AND key = $2', [ctx.tenant.tenantId, key]))
        .rows,
    ).toEqual([]);
    // The key is free: a corrected creation works and commits.
    const fixed = await create(key, file.length, { 'x-file-sha256': sha256(file) });
    expect(fixed.status).toBe(201);
    expect((await patch(fixed.headers.get('location')!, 0, file)).status).toBe(204);
  });

  it('termination drops the session and frees the key; a committed upload is not terminated', async () => {
    const key = `tus-del-${randomUUID()}`;
    const created = await create(key, 10);
    const url = created.headers.get('location')!;
    expect((await patch(url, 0, Buffer.from('01234'))).status).toBe(204);
    const del = await fetch(new URL(url, ctx.stack.url), { method: 'DELETE', headers: auth() });
    expect(del.status).toBe(204);
    expect((await head(url)).status).toBe(404);
    const again = await create(key, 4);
    expect(again.status).toBe(201);
    expect(again.headers.get('location')).not.toBe(url);
    expect((await patch(again.headers.get('location')!, 0, Buffer.from('done'))).status).toBe(204);
    const committed = await fetch(new URL(again.headers.get('location')!, ctx.stack.url), { method: 'DELETE', headers: auth() });
    expect(committed.status).toBe(409);
  });

  it('creation-with-upload: a small file in the creation request itself is committed once', async () => {
    const key = `tus-cwu-${randomUUID()}`;
    const file = Buffer.from('all of it in the POST');
    const res = await fetch(`${ctx.stack.url}/v1/tus`, {
      method: 'POST',
      headers: {
        ...auth(),
        'idempotency-key': key,
        'upload-length': String(file.length),
        'content-type': 'application/offset+octet-stream',
        'upload-metadata': `filename ${b64('cwu.txt')},filetype ${b64('text/plain')}`,
      },
      body: file,
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('upload-offset')).toBe(String(file.length));
    expect(res.headers.get('location')).toMatch(/^\/v1\/tus\/[0-9a-f-]{36}$/);
    const answer = await keyAnswer(ctx, key);
    expect(answer.json).toMatchObject({
      state: 'completed',
      status: 201,
      response: { sha256: sha256(file), fileName: 'cwu.txt', contentType: 'text/plain' },
    });
  });

  it('refuses bad PATCHes and creations with a 4xx problem, changing nothing', async () => {
    const created = await create(`tus-bad-${randomUUID()}`, 10);
    const url = created.headers.get('location')!;
    // More bytes than Upload-Length: refused before a byte is read.
    const over = await patch(url, 0, Buffer.alloc(11));
    expect(over.status).toBe(413);
    expect(((await over.json()) as { error: string }).error).toBe('payload_too_large');
    // The wrong media type.
    const plain = await fetch(new URL(url, ctx.stack.url), {
      method: 'PATCH',
      headers: { ...auth(), 'content-type': 'text/plain', 'upload-offset': '0' },
      body: 'hello',
    });
    expect(plain.status).toBe(415);
    expect(((await plain.json()) as { error: string }).error).toBe('media_type_unsupported');
    // A missing Upload-Offset.
    const noOffset = await fetch(new URL(url, ctx.stack.url), {
      method: 'PATCH',
      headers: { ...auth(), 'content-type': 'application/offset+octet-stream' },
      body: 'hello',
    });
    expect(noOffset.status).toBe(400);
    expect((await head(url)).headers.get('upload-offset')).toBe('0');
    // Creations: malformed metadata, no Upload-Length, a length past the maximum, two hashes that disagree.
    for (const [headers, error] of [
      [{ 'upload-metadata': 'filename not-base64!' }, 'header_invalid'],
      [{ 'upload-metadata': `filename ${b64('a')},filename ${b64('b')}` }, 'header_invalid'],
      [{ 'upload-length': '' }, 'header_invalid'],
      [{ 'upload-length': String(10 * 1024 ** 4) }, 'payload_too_large'],
      [{ 'x-file-sha256': sha256('a'), 'upload-metadata': `sha256 ${b64(sha256('b'))}` }, 'checksum_invalid'],
    ] as const) {
      const key = `tus-badc-${randomUUID()}`;
      const res = await create(key, 10, headers as Record<string, string>);
      expect([400, 413], JSON.stringify(headers)).toContain(res.status);
      expect(((await res.json()) as { error: string }).error).toBe(error);
      const rows = await ctx.stack.runtime.pool.query('SELECT 1 FROM resumable_sessions WHERE tenant_id = $1 AND idempotency_key = $2', [
        ctx.tenant.tenantId,
        key,
      ]);
      expect(rows.rows).toEqual([]);
    }
  });

  it("another tenant's upload URL is 404", async () => {
    const created = await create(`tus-t-${randomUUID()}`, 3);
    const other = await ctx.stack.createTenant('other');
    const res = await fetch(new URL(created.headers.get('location')!, ctx.stack.url), {
      method: 'HEAD',
      headers: { authorization: `Bearer ${other.apiKey}`, 'tus-resumable': '1.0.0' },
    });
    expect(res.status).toBe(404);
  });
});
