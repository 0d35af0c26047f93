// Upload tokens on both stores: minted under the key rule, a bearer that only uploads within
// its limits (declared length and type before a byte is read, the bytes' real length and
// type before anything is kept, maxUploads counted at the commit under a lock), sees only
// its own uploads, and names whose upload it is in the row, the list and the webhook body.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStackOnStore, type TestStack } from '../helpers/stack';
import { postUpload } from '../helpers/http';
import { eventually, listKeys } from '../helpers/inspect';
import { png } from '../helpers/media';
import { WebhookReceiver } from '../support/webhook-receiver';
import * as tus from 'tus-js-client';
import { searchAttributes } from '../../src/temporal/names';
import { audit } from '../../src/audit';
import { loadSecretBox } from '../../src/secret-box';
import { subjectTag } from '../../src/tokens/grant';

describe.each(['s3', 'local'] as const)('upload tokens on the %s store', (kind) => {
  let stack: TestStack;
  let tenant: { tenantId: string; apiKey: string };
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    stack = await startStackOnStore(kind, `tokens_${kind}`, { env: { UPLOAD_TOKEN_MAX_SECONDS: '7200' } });
    tenant = await stack.createTenant('tokens');
    receiver = await new WebhookReceiver().start();
    const res = await call('POST', '/v1/webhook-endpoints', tenant.apiKey, { url: receiver.url });
    receiver.secret = res.json.secret;
  });
  afterAll(async () => {
    await stack?.stop();
    await receiver?.stop();
  });

  async function call(method: string, path: string, token: string, json?: unknown, headers: Record<string, string> = {}) {
    const res = await fetch(`${stack.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(json !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: json !== undefined ? JSON.stringify(json) : undefined,
    });
    const text = await res.text();
    return { status: res.status, text, json: text ? JSON.parse(text) : undefined };
  }
  const mint = async (limits: Record<string, unknown>, key?: string) => {
    const res = await call('POST', '/v1/upload-tokens', tenant.apiKey, limits, key ? { 'idempotency-key': key } : {});
    expect(res.status, res.text).toBe(201);
    return res.json as { token: string; id: string; expiresAt: string };
  };
  const uploadRows = async (key: string) =>
    (await stack.runtime.pool.query('SELECT id FROM uploads WHERE tenant_id = $1 AND idempotency_key = $2', [tenant.tenantId, key]))
      .rowCount;
  const keyRows = async (key: string) =>
    (await stack.runtime.pool.query('SELECT 1 FROM idempotency_keys WHERE tenant_id = $1 AND key = $2', [tenant.tenantId, key])).rowCount;
  const stagedUnder = async (key: string) => {
    const { createHash } = await import('node:crypto');
    const hashed = createHash('sha256').update(key).digest('hex').slice(0, 32);
    return listKeys(stack.runtime.store, `tenants/${tenant.tenantId}/keys/${hashed}/`);
  };

  it('mints under the key rule, uploads with attribution, and sees only its own uploads', async () => {
    const mintKey = `mint-${randomUUID()}`;
    const limits = {
      expiresInSeconds: 900,
      maxBytes: 1_000_000,
      allowedTypes: ['image/*'],
      subject: 'user-42',
      metadata: { album: 'trip' },
    };
    const minted = await mint(limits, mintKey);
    expect(minted.token).toMatch(/^oup_/);
    expect(await mint(limits, mintKey)).toEqual(minted);
    expect(
      (await call('POST', '/v1/upload-tokens', tenant.apiKey, { ...limits, maxBytes: 5 }, { 'idempotency-key': mintKey })).status,
    ).toBe(422);
    const key = `tok-${randomUUID()}`;
    const up = await postUpload(stack.url, {
      apiKey: minted.token,
      key,
      body: await png(64, 48),
      contentType: 'image/png',
      fileName: 'me.png',
    });
    expect(up.status, up.text).toBe(201);
    const run = await stack.temporal.workflow.getHandle(`upload/${tenant.tenantId}/${key}`).describe();
    // Searchable by a keyed pseudonym (`oncely subject-tag`), never the subject in clear.
    const box = await loadSecretBox(stack.config.SECRETS_KEY, stack.config.DATA_DIR);
    expect(run.typedSearchAttributes.get(searchAttributes.subject)).toBe(subjectTag(box, tenant.tenantId, 'user-42'));
    expect(subjectTag(box, tenant.tenantId, 'user-42')).toMatch(/^[\w-]{22}$/);
    expect(subjectTag(box, tenant.tenantId, 'user-43')).not.toBe(subjectTag(box, tenant.tenantId, 'user-42'));
    const own = await call('GET', `/v1/uploads/${up.json.uploadId}`, minted.token);
    expect(own.status).toBe(200);
    expect(own.json).toMatchObject({ tokenId: minted.id, subject: 'user-42', metadata: { album: 'trip' } });
    const listed = await call('GET', '/v1/uploads?subject=user-42', tenant.apiKey);
    expect(listed.json.items.map((u: { uploadId: string }) => u.uploadId)).toEqual([up.json.uploadId]);
    expect((await call('GET', '/v1/uploads?subject=nobody', tenant.apiKey)).json.items).toEqual([]);
    expect((await call('GET', `/v1/upload-tokens/${minted.id}`, tenant.apiKey)).json).toMatchObject({ uploadsUsed: 1, subject: 'user-42' });
    // The webhook names whose upload it is.
    await eventually(async () => receiver.received.find((r) => r.json.data.uploadId === up.json.uploadId), 60_000);
    const event = receiver.received.find((r) => r.json.data.uploadId === up.json.uploadId)!;
    expect(event.json.data).toMatchObject({ tokenId: minted.id, subject: 'user-42', metadata: { album: 'trip' } });

    // Another upload of the tenant (made with the API key) is not the token's to see.
    const otherKey = `key-${randomUUID()}`;
    const other = await postUpload(stack.url, { apiKey: tenant.apiKey, key: otherKey, body: Buffer.from('not yours') });
    expect((await call('GET', `/v1/uploads/${other.json.uploadId}`, minted.token)).status).toBe(404);
    // Its own upload's bytes and key state; not another's.
    expect(
      (await fetch(`${stack.url}/v1/uploads/${up.json.uploadId}/content`, { headers: { authorization: `Bearer ${minted.token}` } })).status,
    ).toBe(200);
    expect(
      (await fetch(`${stack.url}/v1/uploads/${other.json.uploadId}/content`, { headers: { authorization: `Bearer ${minted.token}` } }))
        .status,
    ).toBe(404);
    expect((await call('GET', `/v1/idempotency-keys/${key}`, minted.token)).json).toMatchObject({
      state: 'completed',
      uploadId: up.json.uploadId,
    });
    expect((await call('GET', `/v1/idempotency-keys/${otherKey}`, minted.token)).status).toBe(404);
    // Everything but uploading and reading its own uploads is refused.
    for (const [method, path, json] of [
      ['GET', '/v1/uploads', undefined],
      ['DELETE', `/v1/uploads/${up.json.uploadId}`, undefined],
      ['POST', '/v1/api-keys', {}],
      ['POST', '/v1/webhook-endpoints', { url: 'https://example.com/h' }],
      ['GET', '/v1/events', undefined],
      ['POST', '/v1/upload-tokens', {}],
    ] as const) {
      const res = await call(method, path, minted.token, json);
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.json.error).toBe('insufficient_scope');
    }
    expect((await call('GET', `/v1/uploads/${up.json.uploadId}`, tenant.apiKey)).json.status).not.toBe('deleted');
    // Erasure scrubs whose it was too (the token id stays: it names no one).
    expect((await call('DELETE', `/v1/uploads/${up.json.uploadId}`, tenant.apiKey, undefined, { prefer: 'wait=60' })).status).toBe(200);
    expect((await call('GET', `/v1/uploads/${up.json.uploadId}`, tenant.apiKey)).json).toMatchObject({
      status: 'deleted',
      tokenId: minted.id,
      subject: null,
      metadata: null,
    });
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  }, 120_000);

  it('refuses what the limits do not allow, and keeps nothing of it', async () => {
    const { token } = await mint({ maxBytes: 20_000, allowedTypes: ['image/png', 'application/pdf'] });
    // Declared: refused before a byte is read.
    const typeKey = `type-${randomUUID()}`;
    const wrongType = await postUpload(stack.url, {
      apiKey: token,
      key: typeKey,
      body: Buffer.from('<html></html>'),
      contentType: 'text/html',
    });
    expect(wrongType.status).toBe(415);
    expect(wrongType.json.error).toBe('type_not_allowed');
    const sizeKey = `size-${randomUUID()}`;
    const tooBig = await postUpload(stack.url, { apiKey: token, key: sizeKey, body: Buffer.alloc(20_001, 1), contentType: 'image/png' });
    expect(tooBig.status).toBe(413);
    // Arrived: a "PNG" that is HTML is refused once its first bytes are in; the copy is deleted.
    const fakeKey = `fake-${randomUUID()}`;
    const html = Buffer.from('<!doctype html><script>alert(1)</script>');
    const fake = await postUpload(stack.url, { apiKey: token, key: fakeKey, body: html, contentType: 'image/png' });
    expect(fake.status).toBe(415);
    expect(fake.json.error).toBe('type_not_allowed');
    // A form post past maxBytes (its length unknown until it streams).
    const formKey = `form-${randomUUID()}`;
    const form = new FormData();
    form.set('idempotencyKey', formKey);
    form.set('file', new Blob([Buffer.alloc(30_000, 2)], { type: 'image/png' }), 'big.png');
    const formRes = await fetch(`${stack.url}/v1/uploads`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
    expect(formRes.status, await formRes.clone().text()).toBe(413);
    for (const key of [typeKey, sizeKey, fakeKey, formKey]) {
      expect(await uploadRows(key), key).toBe(0);
      expect(await keyRows(key), key).toBe(0);
      await eventually(async () => (await stagedUnder(key)).length === 0, 30_000);
    }
    // Nothing was recorded under the key: the real file under it commits.
    const real = await postUpload(stack.url, { apiKey: token, key: fakeKey, body: await png(16, 16), contentType: 'image/png' });
    expect(real.status, real.text).toBe(201);
  }, 120_000);

  it('maxUploads 7: of 10 concurrent uploads exactly 7 commit; the rest are 403 and keep nothing', async () => {
    const { token, id } = await mint({ maxUploads: 7 });
    const keys = Array.from({ length: 10 }, () => `many-${randomUUID()}`);
    const results = await Promise.all(
      keys.map((key, i) =>
        postUpload(stack.url, { apiKey: token, key, body: Buffer.from(`file number ${i} ${key}`), contentType: 'text/plain' }),
      ),
    );
    expect(results.map((r) => r.status).sort(), results.map((r) => r.text).join('\n')).toEqual([
      201, 201, 201, 201, 201, 201, 201, 403, 403, 403,
    ]);
    for (const r of results.filter((x) => x.status === 403)) expect(r.json.error).toBe('token_exhausted');
    expect((await call('GET', `/v1/upload-tokens/${id}`, tenant.apiKey)).json.uploadsUsed).toBe(7);
    const refused = keys.filter((_, i) => results[i]!.status === 403);
    for (const key of refused) {
      expect(await uploadRows(key)).toBe(0);
      expect(await keyRows(key)).toBe(0);
      await eventually(async () => (await stagedUnder(key)).length === 0, 30_000);
    }
    // A committed one replays; a refused one stays refused (the token is used up).
    const first = keys.find((_, i) => results[i]!.status === 201)!;
    const again = await postUpload(stack.url, {
      apiKey: token,
      key: first,
      body: Buffer.from(`file number ${keys.indexOf(first)} ${first}`),
      contentType: 'text/plain',
    });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  }, 120_000);

  it('an expired token replays its uploads but starts none (401); a new token replays them too; revoked: 401 at once', async () => {
    const short = await mint({ expiresInSeconds: 2 });
    const key = `exp-${randomUUID()}`;
    const body = Buffer.from('made before the token expired');
    const first = await postUpload(stack.url, { apiKey: short.token, key, body, contentType: 'text/plain' });
    expect(first.status).toBe(201);
    await eventually(async () => Date.now() > Date.parse(short.expiresAt) + 200, 10_000);
    // The key rule wins: the retry of the committed request gets its stored answer.
    const late = await postUpload(stack.url, { apiKey: short.token, key, body, contentType: 'text/plain' });
    expect(late.status).toBe(201);
    expect(late.text).toBe(first.text);
    expect(late.headers.get('idempotent-replayed')).toBe('true');
    // Anything new is refused, before a byte is read.
    const newKey = `exp-new-${randomUUID()}`;
    expect((await postUpload(stack.url, { apiKey: short.token, key: newKey, body, contentType: 'text/plain' })).status).toBe(401);
    expect(await uploadRows(newKey)).toBe(0);
    expect((await call('GET', `/v1/uploads/${first.json.uploadId}`, short.token)).status).toBe(401);
    const fresh = await mint({});
    const replay = await postUpload(stack.url, { apiKey: fresh.token, key, body, contentType: 'text/plain' });
    expect(replay.status).toBe(201);
    expect(replay.text).toBe(first.text);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');

    const revoked = await mint({});
    expect((await postUpload(stack.url, { apiKey: revoked.token, key: `rev-${randomUUID()}`, body })).status).toBe(201);
    expect((await call('DELETE', `/v1/upload-tokens/${revoked.id}`, tenant.apiKey)).status).toBe(204);
    const after = await postUpload(stack.url, { apiKey: revoked.token, key: `rev-${randomUUID()}`, body });
    expect(after.status).toBe(401);
    expect((await call('DELETE', `/v1/upload-tokens/${revoked.id}`, tenant.apiKey)).status).toBe(404);
  }, 60_000);

  it('tus with a token (tus-js-client): limits at creation and at the commit, only its own sessions, and it outlives the token', async () => {
    const { token, id } = await mint({ expiresInSeconds: 3, maxBytes: 100_000, allowedTypes: ['image/png'], subject: 'user-7' });
    const tusHeaders = (t: string) => ({ authorization: `Bearer ${t}`, 'tus-resumable': '1.0.0' });
    const b64 = (v: string) => Buffer.from(v).toString('base64');
    const file = await png(120, 80);
    const key = `tus-tok-${randomUUID()}`;
    const uploadUrl = await new Promise<string>((resolve, reject) => {
      const upload: tus.Upload = new tus.Upload(file, {
        endpoint: `${stack.url}/v1/tus`,
        headers: { authorization: `Bearer ${token}`, 'idempotency-key': key },
        metadata: { filename: 'photo.png', filetype: 'image/png' },
        chunkSize: Math.ceil(file.length / 2),
        onChunkComplete: () => {
          // After the first chunk: stop, let the token expire, then finish below.
          upload.abort().then(() => resolve(upload.url!), reject);
        },
        onError: reject,
      });
      upload.start();
    });
    const sessionPath = new URL(uploadUrl).pathname;
    // Another token of the tenant cannot see, write to or end this session.
    const stranger = await mint({});
    for (const method of ['HEAD', 'DELETE'] as const) {
      expect((await fetch(`${stack.url}${sessionPath}`, { method, headers: tusHeaders(stranger.token) })).status, method).toBe(404);
    }
    await eventually(async () => (await call('GET', `/v1/uploads/${randomUUID()}`, token)).status === 401, 10_000);
    // Past the token's expiry its own session still finishes.
    const head = await fetch(`${stack.url}${sessionPath}`, { method: 'HEAD', headers: tusHeaders(token) });
    expect(head.status).toBe(200);
    const offset = Number(head.headers.get('upload-offset'));
    const done = await fetch(`${stack.url}${sessionPath}`, {
      method: 'PATCH',
      headers: {
        ...tusHeaders(token),
        'upload-offset': String(offset),
        'content-type': 'application/offset+octet-stream',
        prefer: 'wait=30',
      },
      body: file.subarray(offset),
    });
    expect(done.status).toBe(204);
    const uploadId = done.headers.get('location')!.split('/').pop()!;
    expect((await call('GET', `/v1/uploads/${uploadId}`, tenant.apiKey)).json).toMatchObject({
      tokenId: id,
      subject: 'user-7',
      bytes: file.length,
    });

    // Creation past the limits: refused before a session exists.
    const fresh = await mint({ maxBytes: 1000, allowedTypes: ['image/png'] });
    for (const [length, type, status] of [
      ['1001', 'image/png', 413],
      ['10', 'text/html', 415],
    ] as const) {
      const k = `tus-bad-${randomUUID()}`;
      const res = await fetch(`${stack.url}/v1/tus`, {
        method: 'POST',
        headers: { ...tusHeaders(fresh.token), 'idempotency-key': k, 'upload-length': length, 'upload-metadata': `filetype ${b64(type)}` },
      });
      expect(res.status, `${length} ${type}`).toBe(status);
      expect((await stack.runtime.pool.query('SELECT 1 FROM resumable_sessions WHERE idempotency_key = $1', [k])).rowCount).toBe(0);
    }
    // A PATCH past the length the token allowed at creation: 413, nothing committed.
    const pastKey = `tus-past-${randomUUID()}`;
    const small = await fetch(`${stack.url}/v1/tus`, {
      method: 'POST',
      headers: {
        ...tusHeaders(fresh.token),
        'idempotency-key': pastKey,
        'upload-length': '1000',
        'upload-metadata': `filetype ${b64('image/png')}`,
      },
    });
    expect(small.status).toBe(201);
    const past = await fetch(`${stack.url}${small.headers.get('location')}`, {
      method: 'PATCH',
      headers: { ...tusHeaders(fresh.token), 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
      body: Buffer.alloc(1500, 3),
    });
    expect(past.status).toBe(413);
    expect(await uploadRows(pastKey)).toBe(0);
    // A "PNG" that is HTML, found at the commit: refused, and nothing kept under its key.
    /** One tus upload of `body` (declared a PNG) in one PATCH under `k`: the PATCH's answer. */
    const tusOnce = async (k: string, body: Buffer) => {
      const created = await fetch(`${stack.url}/v1/tus`, {
        method: 'POST',
        headers: {
          ...tusHeaders(fresh.token),
          'idempotency-key': k,
          'upload-length': String(body.length),
          'upload-metadata': `filetype ${b64('image/png')}`,
        },
      });
      expect(created.status).toBe(201);
      return fetch(`${stack.url}${created.headers.get('location')}`, {
        method: 'PATCH',
        headers: { ...tusHeaders(fresh.token), 'upload-offset': '0', 'content-type': 'application/offset+octet-stream', prefer: 'wait=30' },
        body,
      });
    };
    const fakeKey = `tus-fake-${randomUUID()}`;
    const patched = await tusOnce(fakeKey, Buffer.from('<html><body>not a picture</body></html>'));
    expect(patched.status).toBe(415);
    expect(await uploadRows(fakeKey)).toBe(0);
    expect(await keyRows(fakeKey)).toBe(0);
    expect((await stack.runtime.pool.query('SELECT 1 FROM resumable_sessions WHERE idempotency_key = $1', [fakeKey])).rowCount).toBe(0);
    await eventually(async () => (await stagedUnder(fakeKey)).length === 0, 30_000);
    // The key is free: the real picture under it commits.
    const committed = await tusOnce(fakeKey, await png(20, 20));
    expect(committed.status).toBe(204);
    expect(await uploadRows(fakeKey)).toBe(1);
  }, 120_000);

  it('direct uploads with a token: limits on the plan and at completion, only its own plans', async () => {
    const { token, id } = await mint({ maxBytes: 50_000, allowedTypes: ['image/png'], subject: 'user-9' });
    const { createHash } = await import('node:crypto');
    const hex = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    const plan = async (file: Buffer, contentType: string, key = `direct-tok-${randomUUID()}`) => {
      const res = await call(
        'POST',
        '/v1/direct-uploads',
        token,
        { bytes: file.length, sha256: hex(file), contentType },
        { 'idempotency-key': key },
      );
      return { ...res, key };
    };
    const send = async (planned: { json: { id: string; upload: { url: string; headers: Record<string, string> } } }, file: Buffer) => {
      const { 'content-length': _length, ...headers } = planned.json.upload.headers;
      expect((await fetch(planned.json.upload.url, { method: 'PUT', headers, body: file })).status).toBe(200);
      return call('POST', `/v1/direct-uploads/${planned.json.id}/complete`, token, undefined, { prefer: 'wait=30' });
    };
    const file = await png(90, 60);
    const planned = await plan(file, 'image/png');
    expect(planned.status, planned.text).toBe(201);
    const stranger = await mint({});
    expect((await call('GET', `/v1/direct-uploads/${planned.json.id}`, stranger.token)).status).toBe(404);
    expect((await call('POST', `/v1/direct-uploads/${planned.json.id}/complete`, stranger.token)).status).toBe(404);
    const done = await send(planned, file);
    expect(done.status, done.text).toBe(201);
    expect((await call('GET', `/v1/uploads/${done.json.uploadId}`, token)).json).toMatchObject({ tokenId: id, subject: 'user-9' });
    // The plan's declared size and type.
    expect((await plan(Buffer.alloc(50_001), 'image/png')).status).toBe(413);
    expect((await plan(Buffer.from('x'), 'text/plain')).status).toBe(415);
    // A "PNG" that is HTML: refused at completion, the plan and its bytes gone.
    const html = Buffer.from('<html>not a png</html>');
    const fake = await plan(html, 'image/png');
    expect(fake.status).toBe(201);
    const refused = await send(fake, html);
    expect(refused.status).toBe(415);
    expect(refused.json.error).toBe('type_not_allowed');
    expect(await uploadRows(fake.key)).toBe(0);
    expect((await stack.runtime.pool.query('SELECT 1 FROM resumable_sessions WHERE idempotency_key = $1', [fake.key])).rowCount).toBe(0);
    await eventually(async () => (await stagedUnder(fake.key)).length === 0, 30_000);
  }, 120_000);

  it('the Uppy companion through a token: its endpoint carries the limits and the attribution, and dies with the token', async () => {
    const { token, id } = await mint({ maxBytes: 50_000, allowedTypes: ['image/png'], subject: 'user-uppy' });
    const minted = await call('POST', '/v1/uppy-endpoints', token);
    expect(minted.status).toBe(201);
    const endpoint = minted.json.companionEndpoint as string;
    const form = async (file: Buffer, type: string, key: string) => {
      const params = await fetch(`${stack.url}${endpoint}/s3/params?filename=f.png&type=${type}&metadata%5BidempotencyKey%5D=${key}`);
      expect(params.status).toBe(200);
      const { url, fields } = (await params.json()) as { url: string; fields: Record<string, string> };
      const body = new FormData();
      for (const [k, v] of Object.entries(fields)) body.append(k, v);
      body.append('file', new Blob([file], { type }), 'f.png');
      const res = await fetch(url, { method: 'POST', body });
      return { status: res.status, json: (await res.json()) as any };
    };
    const ok = await form(await png(40, 30), 'image/png', `uppy-tok-${randomUUID()}`);
    expect(ok.status).toBe(201);
    expect((await call('GET', `/v1/uploads/${ok.json.uploadId}`, tenant.apiKey)).json).toMatchObject({ tokenId: id, subject: 'user-uppy' });
    const wrong = await form(Buffer.from('hello'), 'text/plain', `uppy-tok-${randomUUID()}`);
    expect(wrong.status).toBe(415);
    const big = await form(Buffer.alloc(60_000, 7), 'image/png', `uppy-tok-${randomUUID()}`);
    expect(big.status).toBe(413);
    const multipart = await fetch(`${stack.url}${endpoint}/s3/multipart`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ filename: 'x.html', type: 'text/html', metadata: { idempotencyKey: `uppy-tok-${randomUUID()}` } }),
    });
    expect(multipart.status).toBe(415);
    // Another token's endpoint cannot reach this endpoint's multipart session.
    const started = await fetch(`${stack.url}${endpoint}/s3/multipart`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ filename: 'p.png', type: 'image/png', metadata: { idempotencyKey: `uppy-tok-${randomUUID()}` } }),
    });
    // (Multipart needs a store that presigns parts: the embedded one answers 501, as without a token.)
    expect(started.status).toBe(kind === 's3' ? 200 : 501);
    if (kind === 's3') {
      const { uploadId: multipartId, key: objectKey } = (await started.json()) as { uploadId: string; key: string };
      const otherToken = await mint({});
      const otherEndpoint = (await call('POST', '/v1/uppy-endpoints', otherToken.token)).json.companionEndpoint as string;
      const session = `s3/multipart/${encodeURIComponent(multipartId)}?key=${encodeURIComponent(objectKey)}`;
      expect((await fetch(`${stack.url}${otherEndpoint}/${session}`)).status).toBe(404);
      expect((await fetch(`${stack.url}${otherEndpoint}/${session}`, { method: 'DELETE' })).status).toBe(404);
      expect((await fetch(`${stack.url}${endpoint}/${session}`)).status).toBe(200);
    }
    // Revoked: the endpoint stops at once.
    expect((await call('DELETE', `/v1/upload-tokens/${id}`, tenant.apiKey)).status).toBe(204);
    const after = await fetch(`${stack.url}${endpoint}/s3/params?filename=f.png&metadata%5BidempotencyKey%5D=uppy-tok-${randomUUID()}`);
    expect(after.status).toBe(401);
    // A forged endpoint (the token id swapped for another) is not one the server minted.
    const other = await mint({});
    const forged = endpoint.replace(id, other.id);
    expect((await fetch(`${stack.url}${forged}/s3/params?filename=f.png&metadata%5BidempotencyKey%5D=k-${randomUUID()}`)).status).toBe(403);
  }, 60_000);

  it('a token made for a pipeline: its uploads run it, and one naming another is 403 and keeps nothing', async () => {
    for (const name of ['avatars', 'others']) {
      const declared = await call('POST', '/v1/pipelines', tenant.apiKey, {
        name,
        steps: [{ type: 'image.variants', variants: [{ name: `${name}-small`, width: 16, format: 'png' }] }],
      });
      expect(declared.status).toBe(201);
    }
    const t = await mint({ pipeline: 'avatars' });
    expect((await call('GET', `/v1/upload-tokens/${t.id}`, tenant.apiKey)).json.pipeline).toBe('avatars');
    const body = await png(32, 32);
    const named = `tok-pipe-${randomUUID()}`;
    const implicit = `tok-pipe-${randomUUID()}`;
    for (const [key, headers] of [
      [named, { 'x-pipeline': 'avatars' }],
      [implicit, {}],
    ] as const) {
      const res = await postUpload(stack.url, { apiKey: t.token, key, body, contentType: 'image/png', headers });
      expect(res.status, res.text).toBe(201);
      const detail = await eventually(async () => {
        const d = await call('GET', `/v1/uploads/${res.json.uploadId}?wait=20`, t.token);
        return d.json.status === 'processed' ? d.json : undefined;
      }, 60_000);
      expect(detail.pipeline).toMatchObject({ name: 'avatars' });
      expect(detail.renditions.map((r: { name: string }) => r.name)).toEqual(['avatars-small']);
    }
    const other = `tok-pipe-${randomUUID()}`;
    const refused = await postUpload(stack.url, {
      apiKey: t.token,
      key: other,
      body,
      contentType: 'image/png',
      pipeline: 'others',
    });
    expect(refused.status).toBe(403);
    expect(refused.json).toMatchObject({ error: 'pipeline_not_allowed', pipeline: 'avatars' });
    const b64 = (v: string) => Buffer.from(v).toString('base64');
    const session = await call('POST', '/v1/tus', t.token, undefined, {
      'tus-resumable': '1.0.0',
      'idempotency-key': other,
      'upload-length': String(body.length),
      'upload-metadata': `filetype ${b64('image/png')},pipeline ${b64('others')}`,
    });
    expect(session.status).toBe(403);
    expect(await uploadRows(other)).toBe(0);
    expect(await keyRows(other)).toBe(0);
    expect(await stagedUnder(other)).toEqual([]);
  });

  it('refuses bad token requests with 400 and mints nothing', async () => {
    const before = (await stack.runtime.pool.query('SELECT count(*)::int AS n FROM upload_tokens')).rows[0].n;
    for (const bad of [
      { expiresInSeconds: 7201 },
      { expiresInSeconds: 0 },
      { maxBytes: -1 },
      { allowedTypes: [] },
      { allowedTypes: ['images'] },
      { maxUploads: 0 },
      { subject: '' },
      { metadata: { k: 5 } },
      { pipeline: 'Not A Name' },
    ]) {
      const res = await call('POST', '/v1/upload-tokens', tenant.apiKey, bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.json.error).toBe('body_invalid');
    }
    // A pipeline the tenant never declared would refuse every upload: no token for it.
    const unknown = await call('POST', '/v1/upload-tokens', tenant.apiKey, { pipeline: 'nosuch' });
    expect(unknown.status).toBe(422);
    expect(unknown.json.error).toBe('pipeline_unknown');
    expect((await stack.runtime.pool.query('SELECT count(*)::int AS n FROM upload_tokens')).rows[0].n).toBe(before);
    const limited = await call('POST', '/v1/api-keys', tenant.apiKey, { scopes: ['uploads:read'] });
    expect((await call('POST', '/v1/upload-tokens', limited.json.key, {})).json).toMatchObject({
      error: 'insufficient_scope',
      scope: 'tokens:mint',
    });
  });
});
