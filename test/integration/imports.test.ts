// Imports from a URL (POST /v1/imports) on both stores, from origins on 127.0.0.1: one upload
// per key whatever is repeated, the file's bytes committed once, a cut mid-file resumed with
// Range (the bytes fetched again counted), the origin's refusal recorded as the key's answer,
// and every bad request refused with nothing stored.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import { keyStoragePrefix, uploadWorkflowId } from '../../src/temporal/ids';
import { getJson, postUpload, sha256 } from '../helpers/http';
import { bytesIn, eventually, listKeys, readObject, rowsForKey } from '../helpers/inspect';
import { startStackOnStore, type TestStack } from '../helpers/stack';
import { partStored, startFileOrigin, type FileOrigin } from '../support/file-origin';
import WebSocket from 'ws';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import { Client } from '@temporalio/client';
import { PayloadKeyring, SealingCodec } from '../../src/codec/payload-codec';
import { loadSecretBox } from '../../src/secret-box';

const MiB = 1024 * 1024;
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** Two whole 5 MiB parts and a tail: a cut after 7 MiB leaves one part stored. */
const file = Buffer.concat([PNG, randomBytes(12 * MiB - PNG.length)]);

describe.each(['local', 's3'] as const)('imports on the %s store', (kind) => {
  let stack: TestStack;
  let tenant: { tenantId: string; apiKey: string };
  let origin: FileOrigin;

  beforeAll(async () => {
    stack = await startStackOnStore(kind, `imports_${kind}`, {
      env: {
        RESUMABLE_PART_MIB: '5',
        IMPORT_HEARTBEAT_SECONDS: '4',
        TENANT_MAX_IMPORTS_IN_FLIGHT: '3',
        IMPORT_IDLE_SECONDS: '4',
        IMPORT_MAX_ATTEMPTS: '3',
      },
    });
    tenant = await stack.createTenant();
    origin = await startFileOrigin(file, { contentType: 'image/png' });
  });
  afterAll(async () => {
    await origin?.close();
    await stack?.stop();
  });

  const importFile = async (key: string | undefined, body: unknown, opts: { prefer?: string; apiKey?: string } = {}) => {
    const res = await fetch(`${stack.url}/v1/imports`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${opts.apiKey ?? tenant.apiKey}`,
        'content-type': 'application/json',
        ...(key !== undefined ? { 'idempotency-key': key } : {}),
        ...(opts.prefer ? { prefer: opts.prefer } : {}),
      },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
  };
  const deleteUpload = async (uploadId: string, key: string, prefer?: string) => {
    const res = await fetch(`${stack.url}/v1/uploads/${uploadId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${tenant.apiKey}`, 'idempotency-key': key, ...(prefer ? { prefer } : {}) },
    });
    return { status: res.status, headers: res.headers, json: (await res.json()) as Record<string, any> };
  };
  const postJson = async (route: string, body: unknown) => {
    const res = await fetch(`${stack.url}${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as Record<string, any> };
  };
  const importRows = async () => (await stack.runtime.pool.query('SELECT * FROM imports WHERE tenant_id = $1', [tenant.tenantId])).rows;

  it('commits the file once under its key, resuming a cut read where its stored parts end', async () => {
    const key = `import-${randomUUID()}`;
    const body = { url: `${origin.base}/photos/cat.png`, sha256: sha256(file) };
    origin.served = 0;
    origin.cutNextAfter(7 * MiB, partStored(stack.runtime.store, 1));
    const created = await importFile(key, body, { prefer: 'wait=60' });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ bytes: file.length, sha256: sha256(file), contentType: 'image/png', fileName: 'cat.png' });
    const uploadId = created.json.uploadId as string;
    expect(created.headers.get('location')).toBe(`/v1/uploads/${uploadId}`);
    // The retry asked for the rest after the one stored part: 2 MiB were read twice.
    expect(origin.served).toBe(7 * MiB + (file.length - 5 * MiB));

    // Repeats answer the same upload; the store holds one object with the file's bytes.
    const again = await importFile(key, body, { prefer: 'wait=5' });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.json).toEqual(created.json);
    const rows = await rowsForKey(stack.runtime.pool, tenant.tenantId, key);
    expect(rows.uploads).toHaveLength(1);
    expect(rows.uploads[0].id).toBe(uploadId);
    const objects = await listKeys(stack.runtime.store, keyStoragePrefix(tenant.tenantId, key));
    expect(objects).toEqual([created.json.storageKey]);
    expect(sha256(await readObject(stack.runtime.store, objects[0]!))).toBe(sha256(file));
    expect(await importRows()).toEqual([]);

    const view = await getJson(`${stack.url}/v1/uploads/${uploadId}`, tenant.apiKey);
    expect(view.json).toMatchObject({ uploadId, bytes: file.length, contentType: 'image/png' });
    // Another body under the key is another request.
    const other = await importFile(key, { ...body, fileName: 'dog.png' });
    expect(other.status).toBe(422);
    expect(other.json.error).toBe('idempotency_key_reuse');
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  });

  it('answers 202 with the progress at once, and the upload is readable at Location throughout', async () => {
    const key = `import-${randomUUID()}`;
    origin.throttle(2 * MiB);
    try {
      const accepted = await importFile(key, { url: `${origin.base}/slow.png` }, { prefer: 'respond-async' });
      expect(accepted.status).toBe(202);
      expect(accepted.json).toMatchObject({ status: 'importing', idempotencyKey: key, origin: origin.base, bytesFetched: 0 });
      const location = accepted.headers.get('location')!;
      expect(location).toBe(`/v1/uploads/${accepted.json.uploadId}`);
      // A part stored shows as progress before the commit.
      const progressed = await eventually(async () => {
        const r = await getJson(`${stack.url}${location}`, tenant.apiKey);
        return r.json.status === 'importing' && r.json.bytesFetched > 0 ? r.json : undefined;
      }, 30_000);
      expect(progressed).toMatchObject({ bytesTotal: file.length });
      // A repeat while it runs answers the same import.
      const repeat = await importFile(key, { url: `${origin.base}/slow.png` }, { prefer: 'respond-async' });
      expect(repeat.status).toBe(202);
      expect(repeat.json.uploadId).toBe(accepted.json.uploadId);
      origin.throttle(undefined);
      const done = await getJson(`${stack.url}${location}?wait=60`, tenant.apiKey);
      expect(done.json).toMatchObject({
        uploadId: accepted.json.uploadId,
        status: 'processed',
        sha256: sha256(file),
        fileName: 'slow.png',
      });
    } finally {
      origin.throttle(undefined);
    }
  });

  it('a delete while the file is read stops the read: nothing kept, and the key answers 410 import_canceled', async () => {
    const keys = [`import-${randomUUID()}`, `import-${randomUUID()}`];
    const body = { url: `${origin.base}/canceled.png` };
    origin.throttle(MiB);
    try {
      const ids: string[] = [];
      for (const key of keys) {
        const accepted = await importFile(key, body, { prefer: 'respond-async' });
        expect(accepted.status).toBe(202);
        ids.push(accepted.json.uploadId as string);
      }
      origin.served = 0;
      await eventually(async () => origin.served > 0 || undefined, 30_000);
      // One deleted on its own, the other in a batch.
      const deleted = await deleteUpload(ids[0]!, `delete-${randomUUID()}`);
      expect(deleted.status).toBe(202);
      expect(deleted.json).toEqual({ uploadId: ids[0], status: 'deleting', deletedAt: null, erasedAt: null, restorableUntil: null });
      expect(deleted.headers.get('location')).toBe(`/v1/uploads/${ids[0]}`);
      const batch = await postJson('/v1/uploads/delete', { ids: [ids[1]] });
      expect(batch.json.items).toEqual([{ uploadId: ids[1], status: 'deleting' }]);
      // Each read stops (the heartbeat brings the cancel) and its key records the refusal.
      for (const [i, uploadId] of ids.entries()) {
        const ended = await eventually(async () => {
          const r = await getJson(`${stack.url}/v1/uploads/${uploadId}`, tenant.apiKey);
          return r.json.status === 'failed' ? r.json : undefined;
        }, 60_000);
        expect(ended.error).toMatchObject({ error: 'import_canceled', status: 410 });
        const replayed = await importFile(keys[i], body);
        expect(replayed.status).toBe(410);
        expect(replayed.headers.get('idempotent-replayed')).toBe('true');
        expect(replayed.json.error).toBe('import_canceled');
        // Nothing kept: no upload, no object, and (it stored nothing) nothing left to delete.
        expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, keys[i]!)).uploads).toEqual([]);
        expect(await listKeys(stack.runtime.store, keyStoragePrefix(tenant.tenantId, keys[i]!))).toEqual([]);
        expect((await deleteUpload(uploadId, `delete-${randomUUID()}`)).status).toBe(404);
        // The run's history (the URL, the file name) is sealed for good once it has ended: its data key is destroyed.
        const run = uploadWorkflowId(tenant.tenantId, keys[i]!);
        await eventually(async () => {
          const key = await stack.runtime.pool.query(`SELECT wrapped FROM payload_keys WHERE scope = $1`, [`run:${run}`]);
          return key.rows.length === 1 && key.rows[0].wrapped === null ? true : undefined;
        }, 30_000);
        expect(await (await freshClient()).workflow.getHandle(run).result()).toBe('erased');
      }
      expect(origin.served).toBeLessThan(2 * file.length);
      expect(await openMultipartUploads(keyStoragePrefix(tenant.tenantId, keys[0]!))).toEqual([]);
      expect((await importRows()).filter((r) => r.state === 'importing')).toEqual([]);
      expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
    } finally {
      origin.throttle(undefined);
    }
  });

  /** A client reading runs through the codec with keys of its own (not the stack's cached ones). */
  async function freshClient(): Promise<Client> {
    const box = await loadSecretBox(stack.config.SECRETS_KEY, stack.config.DATA_DIR);
    const codec = new SealingCodec(new PayloadKeyring(stack.runtime.pool, box));
    return new Client({ connection: stack.temporal.connection, dataConverter: { payloadCodecs: [codec] } });
  }

  /** The store's multipart uploads not completed nor aborted under `prefix` (the local store: its parts directories). */
  async function openMultipartUploads(prefix: string): Promise<string[]> {
    if (kind === 'local') return readdirSync(path.join(stack.config.DATA_DIR, 'objects', '.parts'));
    const s3 = new S3Client({
      endpoint: stack.config.S3_ENDPOINT,
      region: stack.config.S3_REGION,
      forcePathStyle: true,
      credentials: { accessKeyId: stack.config.S3_ACCESS_KEY_ID!, secretAccessKey: stack.config.S3_SECRET_ACCESS_KEY! },
    });
    try {
      const open = await s3.send(new ListMultipartUploadsCommand({ Bucket: stack.config.S3_BUCKET, Prefix: prefix }));
      return (open.Uploads ?? []).map((u) => u.Key!);
    } finally {
      s3.destroy();
    }
  }

  it('gives up on an origin that stops sending: each attempt times out, then import_timeout is the answer', async () => {
    const key = `import-${randomUUID()}`;
    const requests = origin.requests;
    const accepted = await importFile(key, { url: `${origin.base}/stall` }, { prefer: 'respond-async' });
    expect(accepted.status).toBe(202);
    const failed = await eventually(async () => {
      const v = await getJson(`${stack.url}/v1/uploads/${accepted.json.uploadId}`, tenant.apiKey);
      return v.json.status === 'failed' ? v.json : undefined;
    }, 90_000);
    expect(failed.error).toMatchObject({ error: 'import_timeout' });
    // Every attempt (IMPORT_MAX_ATTEMPTS) asked the origin once.
    expect(origin.requests - requests).toBe(3);
    const replayed = await importFile(key, { url: `${origin.base}/stall` });
    expect(replayed.status).toBe(422);
    expect(replayed.json).toMatchObject({ error: 'import_timeout' });
    expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).uploads).toEqual([]);
    expect(await listKeys(stack.runtime.store, keyStoragePrefix(tenant.tenantId, key))).toEqual([]);
    // The three attempts shared one multipart upload, and the last one aborted it.
    expect(await openMultipartUploads(keyStoragePrefix(tenant.tenantId, key))).toEqual([]);
  });

  it('sends the sealed headers to the origin only: never echoed, never in the run in clear', async () => {
    const key = `import-${randomUUID()}`;
    const secret = `Bearer origin-${randomUUID()}`;
    const created = await importFile(key, { url: `${origin.base}/private.png`, headers: { Authorization: secret } }, { prefer: 'wait=60' });
    expect(created.status).toBe(201);
    expect(origin.lastAuthorization).toBe(secret);
    expect(JSON.stringify(created.json)).not.toContain(secret);
    const history = await stack.history(uploadWorkflowId(tenant.tenantId, key));
    // The run's input is in the history (its URL in clear), the headers only sealed.
    expect(bytesIn(history).some((b) => b.includes(`${origin.base}/private.png`))).toBe(true);
    expect(bytesIn(history).some((b) => b.includes(secret))).toBe(false);
  });

  it('refuses bad requests with a problem and stores nothing', async () => {
    const before = await importRows();
    const key = () => `bad-${randomUUID()}`;
    const cases: [string | undefined, unknown, number, string][] = [
      [undefined, { url: `${origin.base}/a.png` }, 400, 'idempotency_key_required'],
      [key(), 'not json', 400, 'body_invalid'],
      [key(), {}, 400, 'body_invalid'],
      [key(), { url: `${origin.base}/a.png`, colour: 'red' }, 400, 'body_invalid'],
      [key(), { url: `${origin.base}/a.png`, headers: { Range: 'bytes=0-' } }, 400, 'body_invalid'],
      [key(), { url: `${origin.base}/a.png`, headers: { 'bad name': 'x' } }, 400, 'body_invalid'],
      [key(), { url: `${origin.base}/a.png`, sha256: 'xyz' }, 400, 'body_invalid'],
      [key(), { url: 'not a url' }, 400, 'import_url_invalid'],
      [key(), { url: 'ftp://127.0.0.1/a.png' }, 400, 'import_url_invalid'],
      [key(), { url: `http://user:pw@127.0.0.1:${new URL(origin.base).port}/a.png` }, 400, 'import_url_invalid'],
      [key(), { url: `${origin.base}/a.png`, pipeline: 'no-such-pipeline' }, 422, 'pipeline_unknown'],
    ];
    for (const [k, body, status, error] of cases) {
      const res = await importFile(k, body);
      expect({ body, status: res.status, error: res.json?.error }).toEqual({ body, status, error });
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
    expect(await importRows()).toEqual(before);

    // A key without imports:create may not import.
    const limited = await fetch(`${stack.url}/v1/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ label: 'uploads only', scopes: ['uploads:write'] }),
    });
    const refused = await importFile(key(), { url: `${origin.base}/a.png` }, { apiKey: ((await limited.json()) as { key: string }).key });
    expect(refused.status).toBe(403);
    expect(refused.json).toMatchObject({ error: 'insufficient_scope', scope: 'imports:create' });
    expect(await importRows()).toEqual(before);
  });

  it('refuses a key first used at another door, and the other door refuses an import key', async () => {
    const key = `import-${randomUUID()}`;
    const uploaded = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('one request') });
    expect(uploaded.status).toBe(201);
    const imported = await importFile(key, { url: `${origin.base}/a.png` });
    expect(imported.status).toBe(422);
    expect(imported.json.error).toBe('idempotency_key_reuse');

    const importKey = `import-${randomUUID()}`;
    origin.throttle(1 * MiB);
    try {
      expect((await importFile(importKey, { url: `${origin.base}/b.png` }, { prefer: 'respond-async' })).status).toBe(202);
      const offered = await postUpload(stack.url, { apiKey: tenant.apiKey, key: importKey, body: Buffer.from('another door') });
      expect(offered.status).toBe(422);
      expect(offered.json.error).toBe('idempotency_key_reuse');
    } finally {
      origin.throttle(undefined);
    }
    const done = await importFile(importKey, { url: `${origin.base}/b.png` }, { prefer: 'wait=60' });
    expect(done.status).toBe(201);
  });

  it("lets an upload token import only from its hosts, every hop, within its types, as the token's own upload", async () => {
    const mint = async (limits: Record<string, unknown>) => {
      const res = await fetch(`${stack.url}/v1/upload-tokens`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
        body: JSON.stringify(limits),
      });
      return {
        status: res.status,
        json: (await res.json()) as { id: string; token: string; importHosts: string[] | null; error?: string },
      };
    };
    const none = await mint({});
    expect(none.json.importHosts).toBeNull();
    const refused = await importFile(`t-${randomUUID()}`, { url: `${origin.base}/a.png` }, { apiKey: none.json.token });
    expect(refused).toMatchObject({ status: 403, json: { error: 'import_host_not_allowed' } });
    const elsewhere = await mint({ importHosts: ['files.example.com'] });
    const notListed = await importFile(`t-${randomUUID()}`, { url: `${origin.base}/a.png` }, { apiKey: elsewhere.json.token });
    expect(notListed).toMatchObject({ status: 403, json: { error: 'import_host_not_allowed' } });
    expect((await mint({ importHosts: ['not a host'] })).status).toBe(400);
    expect(await importRows()).toEqual(expect.not.arrayContaining([expect.objectContaining({ token_id: elsewhere.json.id })]));

    const token = await mint({ importHosts: ['127.0.0.1'], allowedTypes: ['image/*'] });
    expect(token.json.importHosts).toEqual(['127.0.0.1']);
    // The type is not declared: the token's types are checked on the file read (a PNG).
    const created = await importFile(`t-${randomUUID()}`, { url: `${origin.base}/t.png` }, { apiKey: token.json.token, prefer: 'wait=60' });
    expect(created.status).toBe(201);
    const own = await getJson(`${stack.url}/v1/uploads/${created.json.uploadId}`, token.json.token);
    expect(own.json).toMatchObject({ tokenId: token.json.id, contentType: 'image/png' });
    expect((await getJson(`${stack.url}/v1/uploads/${created.json.uploadId}`, none.json.token)).status).toBe(404);

    // Uppy's url/meta through an endpoint the token minted: its hosts only.
    const meta = async (t: string, url: string) => {
      const minted = await fetch(`${stack.url}/v1/uppy-endpoints`, { method: 'POST', headers: { authorization: `Bearer ${t}` } });
      const { companionEndpoint } = (await minted.json()) as { companionEndpoint: string };
      const res = await fetch(`${stack.url}${companionEndpoint}/url/meta`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ url }),
      });
      return { status: res.status, json: (await res.json()) as Record<string, unknown> };
    };
    expect(await meta(token.json.token, `${origin.base}/m.png`)).toMatchObject({ status: 200, json: { size: file.length } });
    expect(await meta(elsewhere.json.token, `${origin.base}/m.png`)).toMatchObject({
      status: 403,
      json: { error: 'import_host_not_allowed' },
    });
    // A redirect off the token's hosts is refused at that hop, and recorded as the import's answer.
    const away = `http://localhost:${new URL(origin.base).port}/a.png`;
    const redirected = await importFile(
      `t-${randomUUID()}`,
      { url: `${origin.base}/redirect?to=${encodeURIComponent(away)}` },
      { apiKey: token.json.token, prefer: 'wait=30' },
    );
    expect(redirected).toMatchObject({ status: 422, json: { error: 'import_forbidden_address' } });

    // A file the token's types do not allow is refused once read, and not kept.
    const text = await startFileOrigin(Buffer.from('plain text, not an image'), { contentType: 'text/plain' });
    try {
      const key = `t-${randomUUID()}`;
      const wrongType = await importFile(key, { url: `${text.base}/notes.txt` }, { apiKey: token.json.token, prefer: 'wait=30' });
      expect(wrongType).toMatchObject({ status: 415, json: { error: 'type_not_allowed' } });
      expect(await listKeys(stack.runtime.store, keyStoragePrefix(tenant.tenantId, key))).toEqual([]);
    } finally {
      await text.close();
    }
  });

  it("serves Uppy's URL plugin: url/meta, url/get under the file's key, and Companion's progress socket to success", async () => {
    const minted = await fetch(`${stack.url}/v1/uppy-endpoints`, { method: 'POST', headers: { authorization: `Bearer ${tenant.apiKey}` } });
    const { companionEndpoint } = (await minted.json()) as { companionEndpoint: string };
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${stack.url}${companionEndpoint}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: (await res.json()) as Record<string, any> };
    };
    const url = `${origin.base}/pictures/cat.png`;
    const meta = await post('/url/meta', { url });
    expect(meta).toEqual({ status: 200, json: { name: 'cat.png', type: 'image/png', size: file.length, statusCode: 200 } });
    expect((await post('/url/meta', { url: `${origin.base}/missing` })).json).toMatchObject({ error: 'import_failed', originStatus: 404 });

    const key = `uppy-url-${randomUUID()}`;
    // As @uppy/tus sends it: its own endpoint and headers (the page's credential) ride along, and are ignored.
    const get = {
      url,
      fileId: url,
      protocol: 'tus',
      endpoint: '/v1/tus',
      headers: { authorization: 'Bearer page-secret' },
      metadata: { idempotencyKey: key, name: 'cat.png' },
    };
    const started = await post('/url/get', get);
    expect(started.status).toBe(200);
    const follow = () =>
      new Promise<{ action: string; payload: any }[]>((resolve, reject) => {
        const seen: { action: string; payload: any }[] = [];
        const ws = new WebSocket(`${stack.url.replace('http', 'ws')}${companionEndpoint}/api/${started.json.token}`);
        ws.on('message', (data) => seen.push(JSON.parse(String(data))));
        ws.on('close', () => resolve(seen));
        ws.on('error', reject);
      });
    const messages = await follow();
    const success = messages.at(-1)!;
    expect(success.action).toBe('success');
    const upload = JSON.parse(success.payload.response.responseText);
    expect(upload).toMatchObject({ bytes: file.length, sha256: sha256(file), fileName: 'cat.png', contentType: 'image/png' });
    expect(success.payload.url).toBe(`/v1/uploads/${upload.uploadId}`);
    expect(origin.lastAuthorization).toBeUndefined();
    // Again (a retry, a reload): the same import's answer.
    const again = await post('/url/get', get);
    expect(again.json.token).toBe(started.json.token);
    expect(JSON.parse((await follow()).at(-1)!.payload.response.responseText).uploadId).toBe(upload.uploadId);
    expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).uploads).toHaveLength(1);

    // The file removed in Uppy while it is read: its `cancel` on the socket cancels the import.
    const removedKey = `uppy-url-${randomUUID()}`;
    origin.throttle(MiB);
    try {
      const removed = await post('/url/get', { url, metadata: { idempotencyKey: removedKey, name: 'cat.png' } });
      expect(removed.status).toBe(200);
      const seen = await new Promise<{ action: string; payload: any }[]>((resolve, reject) => {
        const got: { action: string; payload: any }[] = [];
        const ws = new WebSocket(`${stack.url.replace('http', 'ws')}${companionEndpoint}/api/${removed.json.token}`);
        ws.on('message', (data) => {
          got.push(JSON.parse(String(data)));
          if (got.length === 1) ws.send(JSON.stringify({ action: 'cancel', payload: {} }));
        });
        ws.on('close', () => resolve(got));
        ws.on('error', reject);
      });
      expect(seen[0]!.action).toBe('progress');
      expect(seen.at(-1)).toMatchObject({ action: 'error', payload: { error: { message: expect.stringContaining('canceled') } } });
      const rows = await rowsForKey(stack.runtime.pool, tenant.tenantId, removedKey);
      expect(rows.uploads).toEqual([]);
      expect(rows.keys.map((k: { response_status: number }) => k.response_status)).toEqual([410]);
      expect(await listKeys(stack.runtime.store, keyStoragePrefix(tenant.tenantId, removedKey))).toEqual([]);
    } finally {
      origin.throttle(undefined);
    }

    expect((await post('/url/get', { url, metadata: {} })).status).toBe(400);
    // The socket's URL without an upgrade: 426 naming the protocol.
    const plain = await fetch(`${stack.url}${companionEndpoint}/api/${started.json.token}`);
    expect(plain.status).toBe(426);
    expect(plain.headers.get('upgrade')).toBe('websocket');
    expect(((await plain.json()) as { error: string }).error).toBe('upgrade_required');
    const forged = new WebSocket(`${stack.url.replace('http', 'ws')}/uppy/forged.1.x/api/${started.json.token}`);
    expect(await new Promise((r) => forged.on('unexpected-response', (_req, res) => r(res.statusCode)).on('error', () => r('error')))).toBe(
      403,
    );
  });

  it("tells an upload token's progress socket nothing of another principal's import, failed or not", async () => {
    // The API key's import under K fails (the origin answers 404) and its answer is stored.
    const key = `others-${randomUUID()}`;
    const failed = await importFile(key, { url: `${origin.base}/missing` }, { prefer: 'wait=30' });
    expect(failed.json).toMatchObject({ error: 'import_failed', originStatus: 404 });
    // An upload token's companion endpoint follows K's socket: as for a key it never used.
    const minted = await fetch(`${stack.url}/v1/upload-tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ expiresInSeconds: 600 }),
    });
    const token = ((await minted.json()) as { token: string }).token;
    const endpoint = await fetch(`${stack.url}/v1/uppy-endpoints`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    const { companionEndpoint } = (await endpoint.json()) as { companionEndpoint: string };
    const heard: string[] = [];
    const ws = new WebSocket(`${stack.url.replace('http', 'ws')}${companionEndpoint}/api/${Buffer.from(key).toString('base64url')}`);
    ws.on('message', (data) => heard.push(String(data)));
    await new Promise((resolve, reject) => ws.on('open', resolve).on('error', reject));
    await new Promise((r) => setTimeout(r, 3_000)); // the socket reads its key once a second
    ws.terminate();
    expect(heard).toEqual([]);
    // The key's poll says the same to the token.
    const poll = await fetch(`${stack.url}/v1/idempotency-keys/${key}`, { headers: { authorization: `Bearer ${token}` } });
    expect(poll.status).toBe(404);
  });

  it('counts imports in flight per tenant: past the limit 429, nothing stored', async () => {
    origin.throttle(256 * 1024);
    const keys = [0, 1, 2].map(() => `quota-${randomUUID()}`);
    try {
      for (const k of keys) expect((await importFile(k, { url: `${origin.base}/q.png` }, { prefer: 'respond-async' })).status).toBe(202);
      const before = await importRows();
      const refused = await importFile(`quota-${randomUUID()}`, { url: `${origin.base}/q.png` }, { prefer: 'respond-async' });
      expect(refused.status).toBe(429);
      expect(refused.json).toMatchObject({ error: 'too_many_imports', limit: 3 });
      expect(refused.headers.get('retry-after')).toBeTruthy();
      expect(await importRows()).toEqual(before);
    } finally {
      origin.throttle(undefined);
    }
    for (const k of keys) expect((await importFile(k, { url: `${origin.base}/q.png` }, { prefer: 'wait=60' })).status).toBe(201);
  });
});
