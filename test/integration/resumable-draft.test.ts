// Resumable Uploads for HTTP (the IETF draft) under the key rule, on both stores:
// tus-js-client's draft protocols (interop 5 and 6) upload, are cut off and resume; raw
// HTTP over sockets pins the newest version (8) and iOS 17's (3): the 104 with Location,
// offsets, lengths, digests, limits, replays and cancellation; and the key rule (the same
// creation is the same resource, 50 at once make one, another request under the key or a
// key of another mode is 422, no key is 400 before a byte is stored).
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tus from 'tus-js-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import { getJson, postUpload, sha256 } from '../helpers/http';
import { readObject } from '../helpers/inspect';
import { exchange, send } from '../helpers/rufh';
import { startTestStack, type TestStack } from '../helpers/stack';

const MiB = 1024 * 1024;
const b64 = (s: string) => Buffer.from(s).toString('base64');
const digest = (alg: 'sha256' | 'sha512', data: Buffer) => createHash(alg).update(data).digest('base64');

interface Ctx {
  stack: TestStack;
  tenant: { tenantId: string; apiKey: string };
}

function draftUpload(
  ctx: Ctx,
  file: Buffer,
  key: string,
  protocol: 'ietf-draft-03' | 'ietf-draft-05',
  opts: Partial<tus.UploadOptions> = {},
) {
  let upload!: tus.Upload;
  const done = new Promise<tus.Upload>((resolve, reject) => {
    // `protocol` is in tus-js-client 4 but not in its type declarations.
    upload = new tus.Upload(file, {
      endpoint: `${ctx.stack.url}/v1/uploads`,
      ...({ protocol } as Partial<tus.UploadOptions>),
      headers: { authorization: `Bearer ${ctx.tenant.apiKey}`, 'idempotency-key': key },
      metadata: { filename: 'draft.bin', filetype: 'application/octet-stream' },
      retryDelays: [200, 500, 1000, 2000, 4000],
      ...opts,
      onSuccess: () => resolve(upload),
      onError: reject,
    });
  });
  return { upload, done };
}

async function committedOnce(ctx: Ctx, key: string, file: Buffer) {
  const answer = await getJson(`${ctx.stack.url}/v1/idempotency-keys/${key}`, ctx.tenant.apiKey);
  expect(answer.json).toMatchObject({ state: 'completed', status: 201, response: { bytes: file.length, sha256: sha256(file) } });
  expect(sha256(await readObject(ctx.stack.runtime.store, answer.json.response.storageKey))).toBe(sha256(file));
  const rows = await ctx.stack.runtime.pool.query('SELECT count(*)::int AS n FROM uploads WHERE tenant_id = $1 AND idempotency_key = $2', [
    ctx.tenant.tenantId,
    key,
  ]);
  expect(rows.rows[0].n).toBe(1);
  return answer.json.response;
}

describe.each(['s3', 'local'] as const)('tus-js-client speaking the draft against the %s store', (kind) => {
  const ctx = {} as Ctx;
  let dataDir: string | undefined;
  beforeAll(async () => {
    dataDir = kind === 'local' ? mkdtempSync(path.join(os.tmpdir(), 'oncely-rufh-')) : undefined;
    ctx.stack = await startTestStack(`rufh_${kind}`, {
      env: { RESUMABLE_PART_MIB: '5', ...(dataDir ? { S3_ENDPOINT: '', DATA_DIR: dataDir } : {}) },
    });
    ctx.tenant = await ctx.stack.createTenant('rufh');
  });
  afterAll(async () => {
    await ctx.stack?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  for (const protocol of ['ietf-draft-05', 'ietf-draft-03'] as const) {
    it(`${protocol}: uploads in appends, is cut off, resumes from the stored offset, and commits once`, async () => {
      const file = randomBytes(16 * MiB + 77);
      const key = `rufh-${protocol}-${randomUUID()}`;
      let sentBeforeAbort = 0;
      const first = draftUpload(ctx, file, key, protocol, {
        chunkSize: 6 * MiB,
        onProgress: (sent) => {
          sentBeforeAbort = sent;
          if (sent > 8 * MiB) void first.upload.abort();
        },
      });
      first.upload.start();
      await expect.poll(() => sentBeforeAbort > 8 * MiB && first.upload.url !== null, { timeout: 30_000 }).toBe(true);
      expect(new URL(first.upload.url!).pathname).toMatch(/^\/v1\/resumable-uploads\/[0-9a-f-]{36}$/);
      let stored = 0;
      await expect
        .poll(
          async () => {
            const head = await fetch(first.upload.url!, {
              method: 'HEAD',
              headers: {
                authorization: `Bearer ${ctx.tenant.apiKey}`,
                'upload-draft-interop-version': protocol === 'ietf-draft-05' ? '6' : '5',
              },
            });
            stored = Number(head.headers.get('upload-offset'));
            return head.status === 204 && head.headers.get('upload-complete') === '?0' && stored >= 5 * MiB;
          },
          { timeout: 30_000 },
        )
        .toBe(true);
      let resentFrom = -1;
      const second = draftUpload(ctx, file, key, protocol, {
        uploadUrl: first.upload.url,
        chunkSize: 6 * MiB,
        onProgress: (sent) => {
          if (resentFrom < 0) resentFrom = sent;
        },
      });
      second.upload.start();
      await second.done;
      expect(resentFrom).toBeGreaterThanOrEqual(5 * MiB);
      const response = await committedOnce(ctx, key, file);
      expect(response).toMatchObject({ fileName: 'draft.bin', contentType: 'application/octet-stream' });
      expect((await audit(ctx.stack.runtime.pool, ctx.stack.runtime.store)).violations).toEqual([]);
    });
  }
});

describe('the draft over raw HTTP: versions 8 and 3, the key rule, and every error', () => {
  const ctx = {} as Ctx;
  const MAX = 40 * MiB;
  beforeAll(async () => {
    ctx.stack = await startTestStack('rufh_raw', { env: { RESUMABLE_PART_MIB: '5', MAX_UPLOAD_BYTES: String(MAX) } });
    ctx.tenant = await ctx.stack.createTenant('rufh-raw');
  });
  afterAll(() => ctx.stack?.stop());

  const auth = () => ({ authorization: `Bearer ${ctx.tenant.apiKey}` });
  const v8 = { 'upload-draft-interop-version': '8' };
  const url = (p: string) => new URL(p, ctx.stack.url).toString();
  const sessions = async (key: string) =>
    (
      await ctx.stack.runtime.pool.query('SELECT id FROM resumable_sessions WHERE tenant_id = $1 AND idempotency_key = $2', [
        ctx.tenant.tenantId,
        key,
      ])
    ).rows;
  const create = (key: string, headers: Record<string, string>, body?: Buffer) =>
    send(
      url('/v1/uploads'),
      'POST',
      { ...auth(), ...v8, 'idempotency-key': key, ...(body ? {} : { 'content-length': '0' }), ...headers },
      body,
    );
  const append = (location: string, headers: Record<string, string>, body: Buffer) =>
    send(location, 'PATCH', { ...auth(), ...v8, 'content-type': 'application/partial-upload', ...headers }, body);

  it('an upgraded POST is announced by a 104 with Location and limits before the body, reports progress, and completes with the upload answer', async () => {
    const file = randomBytes(12 * MiB + 5);
    const key = `rufh-104-${randomUUID()}`;
    const x = exchange(url('/v1/uploads'), 'POST', {
      ...auth(),
      ...v8,
      'idempotency-key': key,
      'upload-complete': '?1',
      'content-length': String(file.length),
      'content-type': 'image/x-raw',
      'content-disposition': `attachment; filename="fallback.bin"; filename*=UTF-8''na%C3%AFve%20file.bin`,
      'repr-digest': `sha-256=:${digest('sha256', file)}:`,
    });
    const announced = await x.interim((i) => i.statusCode === 104 && i.headers.location !== undefined);
    expect(announced.headers['upload-draft-interop-version']).toBe('8');
    expect(announced.headers.location).toMatch(/\/v1\/resumable-uploads\/[0-9a-f-]{36}$/);
    expect(announced.headers['upload-limit']).toMatch(new RegExp(`max-size=${MAX}, min-size=0, max-age=\\d+`));
    await x.write(file.subarray(0, 6 * MiB));
    const progress = await x.interim((i) => i.statusCode === 104 && i.headers['upload-offset'] !== undefined);
    expect(Number(progress.headers['upload-offset'])).toBe(5 * MiB);
    expect(progress.headers.location).toBeUndefined();
    x.end(file.subarray(6 * MiB));
    const res = (await x.response)!;
    expect(res.status).toBe(201);
    expect(res.headers['upload-complete']).toBe('?1');
    expect(res.json).toMatchObject({ bytes: file.length, sha256: sha256(file), fileName: 'naïve file.bin', contentType: 'image/x-raw' });
    await committedOnce(ctx, key, file);

    // After completion: HEAD says complete, an append replays the answer, the creation again replays it too.
    const location = announced.headers.location!;
    const head = await send(location, 'HEAD', { ...auth(), ...v8 });
    expect(head.status).toBe(204);
    expect(head.headers).toMatchObject({
      'upload-complete': '?1',
      'upload-offset': String(file.length),
      'upload-length': String(file.length),
      'cache-control': 'no-store',
    });
    const late = await append(location, { 'upload-offset': String(file.length), 'upload-complete': '?1' }, Buffer.alloc(0));
    expect(late.status).toBe(201);
    expect(late.headers['upload-complete']).toBe('?1');
    expect(late.json.uploadId).toBe(res.json.uploadId);
    const again = await create(
      key,
      {
        'upload-complete': '?1',
        'content-type': 'image/x-raw',
        'content-disposition': `attachment; filename="fallback.bin"; filename*=UTF-8''na%C3%AFve%20file.bin`,
        'repr-digest': `sha-256=:${digest('sha256', file)}:`,
      },
      file,
    );
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json.uploadId).toBe(res.json.uploadId);
  });

  it('interop version 3 (iOS 17) speaks Upload-Incomplete; appends at the wrong offset get 409 with the right one', async () => {
    const file = randomBytes(7 * MiB);
    const key = `rufh-v3-${randomUUID()}`;
    const v3 = { 'upload-draft-interop-version': '3' };
    const x = exchange(url('/v1/uploads'), 'POST', {
      ...auth(),
      ...v3,
      'idempotency-key': key,
      'upload-incomplete': '?1',
      'upload-length': String(file.length),
      'content-length': String(3 * MiB),
    });
    const announced = await x.interim((i) => i.statusCode === 104 && i.headers.location !== undefined);
    expect(announced.headers['upload-draft-interop-version']).toBe('3');
    x.end(file.subarray(0, 3 * MiB));
    const created = (await x.response)!;
    expect(created.status).toBe(201);
    expect(created.headers).toMatchObject({
      'upload-incomplete': '?1',
      'upload-offset': String(3 * MiB),
      location: announced.headers.location,
    });
    expect(created.headers['upload-complete']).toBeUndefined();
    const location = created.headers.location!;

    const wrong = await send(
      location,
      'PATCH',
      { ...auth(), ...v3, 'upload-offset': '100', 'upload-incomplete': '?0' },
      file.subarray(100),
    );
    expect(wrong.status).toBe(409);
    expect(wrong.headers).toMatchObject({
      'upload-offset': String(3 * MiB),
      'upload-incomplete': '?1',
      'content-type': 'application/problem+json',
    });
    expect(wrong.json).toMatchObject({
      type: 'https://iana.org/assignments/http-problem-types#mismatching-upload-offset',
      'expected-offset': 3 * MiB,
      'provided-offset': 100,
    });
    const head = await send(location, 'HEAD', { ...auth(), ...v3 });
    expect(head.headers).toMatchObject({ 'upload-offset': String(3 * MiB), 'upload-incomplete': '?1' });
    const done = await send(
      location,
      'PATCH',
      { ...auth(), ...v3, 'upload-offset': String(3 * MiB), 'upload-incomplete': '?0' },
      file.subarray(3 * MiB),
    );
    expect(done.status).toBe(201);
    expect(done.headers['upload-incomplete']).toBe('?0');
    await committedOnce(ctx, key, file);
  });

  it('all bytes in with Upload-Complete: ?0 stay open until an empty append says ?1', async () => {
    const file = randomBytes(1000);
    const key = `rufh-explicit-${randomUUID()}`;
    const created = await create(key, { 'upload-complete': '?0', 'upload-length': String(file.length) }, file);
    expect(created.status).toBe(201);
    expect(created.headers).toMatchObject({ 'upload-complete': '?0', 'upload-offset': '1000' });
    expect((await getJson(url(`/v1/idempotency-keys/${key}`), ctx.tenant.apiKey)).json.state).not.toBe('completed');
    const done = await append(created.headers.location!, { 'upload-offset': '1000', 'upload-complete': '?1' }, Buffer.alloc(0));
    expect(done.status).toBe(201);
    await committedOnce(ctx, key, file);
  });

  it('lengths that disagree are 400 inconsistent-upload-length; digests are checked; nothing is stored for a bad request', async () => {
    const key = `rufh-len-${randomUUID()}`;
    const bad = await create(key, { 'upload-complete': '?1', 'upload-length': '10' }, Buffer.alloc(5));
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ type: 'https://iana.org/assignments/http-problem-types#inconsistent-upload-length' });
    expect(bad.headers['upload-complete']).toBe('?0');
    expect(await sessions(key)).toEqual([]);
    expect((await create(`rufh-nolen-${randomUUID()}`, { 'upload-complete': '?0' })).status).toBe(400);
    expect((await create(`rufh-huge-${randomUUID()}`, { 'upload-complete': '?0', 'upload-length': String(MAX + 1) })).status).toBe(413);
    for (const value of ['yes', '1', '?2'])
      expect((await create(`rufh-flag-${randomUUID()}`, { 'upload-complete': value, 'upload-length': '1' })).status).toBe(400);

    // An append that ends the upload early, or whose Upload-Length differs.
    const file = randomBytes(2000);
    const open = await create(`rufh-open-${randomUUID()}`, { 'upload-complete': '?0', 'upload-length': '2000' });
    const location = open.headers.location!;
    const early = await append(location, { 'upload-offset': '0', 'upload-complete': '?1' }, file.subarray(0, 1000));
    expect(early.status).toBe(400);
    expect(early.json.error).toBe('inconsistent_upload_length');
    expect(
      (await append(location, { 'upload-offset': '0', 'upload-complete': '?0', 'upload-length': '3000' }, file.subarray(0, 10))).status,
    ).toBe(400);
    // Interop 6+ appends must say application/partial-upload.
    expect(
      (
        await send(
          location,
          'PATCH',
          { ...auth(), ...v8, 'upload-offset': '0', 'upload-complete': '?0', 'content-type': 'application/offset+octet-stream' },
          file,
        )
      ).status,
    ).toBe(415);
    // Content-Digest: a wrong one keeps nothing of the body; a right one (sha-512) is taken.
    const wrongDigest = await append(
      location,
      { 'upload-offset': '0', 'upload-complete': '?0', 'content-digest': `sha-256=:${digest('sha256', Buffer.from('other'))}:` },
      file.subarray(0, 1500),
    );
    expect(wrongDigest.status).toBe(400);
    expect(wrongDigest.json.error).toBe('content_digest_mismatch');
    expect((await send(location, 'HEAD', { ...auth(), ...v8 })).headers['upload-offset']).toBe('0');
    const part = await append(
      location,
      { 'upload-offset': '0', 'upload-complete': '?0', 'content-digest': `sha-512=:${digest('sha512', file.subarray(0, 1500))}:` },
      file.subarray(0, 1500),
    );
    expect(part.status).toBe(204);
    expect(part.headers['upload-offset']).toBe('1500');

    // Repr-Digest of another file: the completion is refused and the key is free again.
    const reprKey = `rufh-repr-${randomUUID()}`;
    const refused = await create(
      reprKey,
      { 'upload-complete': '?1', 'repr-digest': `sha-256=:${digest('sha256', Buffer.from('not this'))}:` },
      file,
    );
    expect(refused.status).toBe(400);
    expect(refused.json.error).toBe('checksum_mismatch');
    expect(await sessions(reprKey)).toEqual([]);
  });

  it('the key rule: no key is 400 before any byte; the same creation mid-upload answers its Location and offset; 50 at once make one; others are 422', async () => {
    const noKey = await send(url('/v1/uploads'), 'POST', { ...auth(), ...v8, 'upload-complete': '?1' }, Buffer.from('abc'));
    expect(noKey.status).toBe(400);
    expect(noKey.json.error).toBe('idempotency_key_required');

    const file = randomBytes(6 * MiB);
    const key = `rufh-retry-${randomUUID()}`;
    const headers = {
      'upload-complete': '?0',
      'upload-length': String(file.length),
      'content-disposition': 'attachment; filename="r.bin"',
    };
    const first = await create(key, headers, file.subarray(0, 5 * MiB + 10));
    expect(first.headers['upload-offset']).toBe(String(5 * MiB + 10));
    const retried = await create(key, headers, file.subarray(0, 5 * MiB + 10));
    expect(retried.status).toBe(201);
    expect(retried.headers).toMatchObject({
      location: first.headers.location,
      'upload-offset': String(5 * MiB + 10),
      'idempotent-replayed': 'true',
    });
    expect((await create(key, { ...headers, 'upload-length': String(file.length + 1) })).status).toBe(422);
    const rest = await append(
      first.headers.location!,
      { 'upload-offset': String(5 * MiB + 10), 'upload-complete': '?1' },
      file.subarray(5 * MiB + 10),
    );
    expect(rest.status).toBe(201);
    await committedOnce(ctx, key, file);

    const storm = `rufh-storm-${randomUUID()}`;
    const answers = await Promise.all(Array.from({ length: 50 }, () => create(storm, { 'upload-complete': '?0', 'upload-length': '10' })));
    expect(answers.map((a) => a.status).every((s) => s === 201)).toBe(true);
    expect(new Set(answers.map((a) => a.headers.location)).size).toBe(1);
    expect(await sessions(storm)).toHaveLength(1);

    // A key used by another mode (tus) or a one-request upload is refused.
    const tusKey = `rufh-tus-${randomUUID()}`;
    const tusCreated = await fetch(url('/v1/tus'), {
      method: 'POST',
      headers: {
        ...auth(),
        'tus-resumable': '1.0.0',
        'idempotency-key': tusKey,
        'upload-length': '10',
        'upload-metadata': `filename ${b64('t.bin')}`,
      },
    });
    expect(tusCreated.status).toBe(201);
    expect((await create(tusKey, { 'upload-complete': '?0', 'upload-length': '10' })).status).toBe(422);
    const plainKey = `rufh-plain-${randomUUID()}`;
    expect((await postUpload(ctx.stack.url, { apiKey: ctx.tenant.apiKey, key: plainKey, body: Buffer.from('0123456789') })).status).toBe(
      201,
    );
    expect((await create(plainKey, { 'upload-complete': '?1' }, Buffer.from('0123456789'))).status).toBe(422);
  });

  it('versions: none sent means the newest rules and no 104; an unknown one is refused unless the request is whole (then it is a plain upload)', async () => {
    const key = `rufh-nover-${randomUUID()}`;
    const res = await send(
      url('/v1/uploads'),
      'POST',
      { ...auth(), 'idempotency-key': key, 'upload-complete': '?1' },
      Buffer.from('no version'),
    );
    expect(res.status).toBe(201);
    expect(res.interims).toEqual([]);
    expect(res.headers['upload-complete']).toBe('?1');
    const unknown = await send(url('/v1/uploads'), 'POST', {
      ...auth(),
      'idempotency-key': `rufh-v99-${randomUUID()}`,
      'upload-draft-interop-version': '99',
      'upload-complete': '?0',
      'upload-length': '5',
      'content-length': '0',
    });
    expect(unknown.status).toBe(400);
    expect(unknown.json).toMatchObject({ error: 'interop_version_unsupported', interopVersions: [3, 4, 5, 6, 7, 8] });
    const whole = await send(
      url('/v1/uploads'),
      'POST',
      { ...auth(), 'idempotency-key': `rufh-v99w-${randomUUID()}`, 'upload-draft-interop-version': '99', 'upload-complete': '?1' },
      Buffer.from('whole'),
    );
    expect(whole.status).toBe(201);
    expect(whole.interims).toEqual([]);
    expect(whole.headers['upload-complete']).toBeUndefined();
  });

  it('an upload token creates and appends to its own upload resource only; its limits apply at creation; a stale append after completion replays', async () => {
    const mint = async (maxBytes: number) => {
      const res = await fetch(url('/v1/upload-tokens'), {
        method: 'POST',
        headers: { ...auth(), 'content-type': 'application/json' },
        body: JSON.stringify({ expiresInSeconds: 600, maxBytes }),
      });
      expect(res.status).toBe(201);
      return ((await res.json()) as { token: string }).token;
    };
    const [mine, theirs] = [await mint(10_000), await mint(10_000)];
    const asToken = (t: string) => ({ authorization: `Bearer ${t}`, ...v8 });
    const tooBig = await send(url('/v1/uploads'), 'POST', {
      ...asToken(mine),
      'idempotency-key': `rufh-tok-big-${randomUUID()}`,
      'upload-complete': '?0',
      'upload-length': '20000',
      'content-length': '0',
    });
    expect(tooBig.status).toBe(413);
    const key = `rufh-tok-${randomUUID()}`;
    const file = randomBytes(4000);
    const created = await send(
      url('/v1/uploads'),
      'POST',
      { ...asToken(mine), 'idempotency-key': key, 'upload-complete': '?0', 'upload-length': '4000' },
      file.subarray(0, 1000),
    );
    expect(created.status).toBe(201);
    const location = created.headers.location!;
    const partial = { 'content-type': 'application/partial-upload', 'upload-offset': '1000', 'upload-complete': '?1' };
    expect((await send(location, 'HEAD', asToken(theirs))).status).toBe(404);
    expect((await send(location, 'PATCH', { ...asToken(theirs), ...partial }, file.subarray(1000))).status).toBe(404);
    expect((await send(location, 'DELETE', asToken(theirs))).status).toBe(404);
    expect((await send(location, 'HEAD', asToken(mine))).headers['upload-offset']).toBe('1000');
    const done = await send(location, 'PATCH', { ...asToken(mine), ...partial }, file.subarray(1000));
    expect(done.status).toBe(201);
    await committedOnce(ctx, key, file);
    // An append at an old offset after completion gets the same answer, not a 409.
    const stale = await send(location, 'PATCH', { ...asToken(mine), ...partial }, file.subarray(1000));
    expect(stale.status).toBe(201);
    expect(stale.headers['upload-complete']).toBe('?1');
    expect(stale.json.uploadId).toBe(done.json.uploadId);
  });

  it('OPTIONS advertises the limits and versions without credentials; DELETE cancels and frees the key; other tenants see nothing', async () => {
    for (const p of ['/v1/uploads', '/v1/resumable-uploads']) {
      const res = await fetch(url(p), { method: 'OPTIONS' });
      expect(res.status).toBe(204);
      expect(res.headers.get('upload-limit')).toMatch(new RegExp(`^max-size=${MAX}, min-size=0, max-age=\\d+$`));
      expect(res.headers.get('upload-draft-interop-versions')).toBe('3, 4, 5, 6, 7, 8');
    }
    const v6 = await fetch(url('/v1/uploads'), { method: 'OPTIONS', headers: { 'upload-draft-interop-version': '6' } });
    expect(v6.headers.get('upload-limit')).toMatch(/expires=\d+/);

    const key = `rufh-cancel-${randomUUID()}`;
    const created = await create(key, { 'upload-complete': '?0', 'upload-length': '10' }, Buffer.from('01234'));
    const location = created.headers.location!;
    const other = await ctx.stack.createTenant('rufh-other');
    expect((await send(location, 'HEAD', { authorization: `Bearer ${other.apiKey}`, ...v8 })).status).toBe(404);
    expect((await send(location, 'DELETE', { authorization: `Bearer ${other.apiKey}` })).status).toBe(404);
    expect((await send(location, 'DELETE', auth())).status).toBe(204);
    expect((await send(location, 'HEAD', { ...auth(), ...v8 })).status).toBe(404);
    expect(await sessions(key)).toEqual([]);
    // The key is free: a new creation under it works.
    expect((await create(key, { 'upload-complete': '?1' }, Buffer.from('0123456789'))).status).toBe(201);
    expect((await audit(ctx.stack.runtime.pool, ctx.stack.runtime.store)).violations).toEqual([]);
  });
});
