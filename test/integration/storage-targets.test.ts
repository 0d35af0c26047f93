// Storage targets over real HTTP on both default stores (the embedded local directory and
// S3), with a second versitygw (its own port, bucket and credentials) as a tenant's target:
// registration proved or refused with the store's words, every door into the target, reads
// and renditions from it, deletion reaching it, the tenant's default, a token's pin,
// residency, rotated credentials, a target that goes away and comes back, and the API's own
// signed PUT refusing a session a store signs for.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import * as tus from 'tus-js-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SelfSignedTarget } from '../../src/arrivals/direct/targets';
import { audit } from '../../src/audit';
import type { SessionRow } from '../../src/db/queries/sessions';
import { loadSecretBox } from '../../src/secret-box';
import { toolPath } from '../../src/devstack/tools';
import { S3Store } from '../../src/storage/s3-store';
import { keyStoragePrefix } from '../../src/temporal/ids';
import { postUpload, sha256 } from '../helpers/http';
import { eventually, listKeys } from '../helpers/inspect';
import { png } from '../helpers/media';
import { startStackOnStore, type TestStack } from '../helpers/stack';
import { startFileOrigin } from '../support/file-origin';
import { serverPort } from '../support/ports';
import { startVersity, versityBucket, type Versity } from '../support/versitygw';

const ADMIN = `admin-${randomUUID()}`;
const exec = promisify(execFile);
const CREDS = { accessKeyId: 'target-owner', secretAccessKey: `target-secret-${randomUUID()}` };

describe.each(['local', 's3'] as const)('storage targets beside the %s store', (kind) => {
  let stack: TestStack;
  let tenant: { tenantId: string; apiKey: string };
  let versity: Versity;
  let versityPort: number;
  const dir = mkdtempSync(path.join(os.tmpdir(), `oncely-targets-${kind}-`));
  const bucket = `target-${kind}`;
  let bucketStore: S3Store;
  let target: { id: string; name: string };

  const startTargetServer = async () => {
    versity = await startVersity({ port: versityPort, dir, ...CREDS });
  };

  beforeAll(async () => {
    versityPort = await serverPort();
    await startTargetServer();
    bucketStore = await versityBucket({ endpoint: versity.endpoint, ...CREDS }, bucket);
    stack = await startStackOnStore(kind, `targets_${kind}`, {
      env: {
        STORAGE_TARGET_ALLOW_PRIVATE_NETWORKS: 'true',
        ADMIN_TOKEN: ADMIN,
        STORAGE_RESIDENCY: 'instance-home',
        // Direct plans above 5 MiB go in parts.
        S3_SINGLE_PUT_MAX_MIB: '5',
        DIRECT_UPLOAD_PART_MIB: '5',
      },
    });
    tenant = await stack.createTenant('targets');
  });
  afterAll(async () => {
    bucketStore?.destroy();
    await stack?.stop();
    await versity?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function call(method: string, pathname: string, json?: unknown, headers: Record<string, string> = {}, bearer = tenant.apiKey) {
    const res = await fetch(`${stack.url}${pathname}`, {
      method,
      headers: { authorization: `Bearer ${bearer}`, ...(json !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: json !== undefined ? JSON.stringify(json) : undefined,
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
  }
  const register = (body: Record<string, unknown>, key = `tgt-${randomUUID()}`) =>
    call('POST', '/v1/storage-targets', body, { 'idempotency-key': key });
  const targetBody = (over: Record<string, unknown> = {}) => ({
    name: 'archive',
    endpoint: versity.endpoint,
    bucket,
    prefix: 'oncely/',
    ...CREDS,
    residency: 'eu',
    ...over,
  });
  /** What the target's bucket holds under a prefix (the raw bucket, outside Oncely). */
  const inBucket = (prefix: string) => listKeys(bucketStore, `oncely/${prefix}`);
  const content = async (id: string) => {
    const res = await fetch(`${stack.url}/v1/uploads/${id}/content`, { headers: { authorization: `Bearer ${tenant.apiKey}` } });
    return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
  };

  it('registers a target only once it is proved; refusals name the step and the store’s words and keep nothing', async () => {
    const wrongSecret = await register(targetBody({ secretAccessKey: 'not-the-secret' }));
    expect([wrongSecret.status, wrongSecret.json.error]).toEqual([422, 'storage_target_refused']);
    expect(wrongSecret.json.detail).toMatch(/^The target failed to answer for its bucket: .*HTTP 403/);
    const noBucket = await register(targetBody({ bucket: 'no-such-bucket' }));
    expect([noBucket.status, noBucket.json.error]).toEqual([422, 'storage_target_refused']);
    expect(noBucket.json.detail).toContain('HTTP 404');
    const badBody = await register(targetBody({ endpoint: 'ftp://x', prefix: '/abs/' }));
    expect([badBody.status, badBody.json.error]).toEqual([400, 'body_invalid']);
    for (const encryption of [{ sse: 'rot13' }, { sse: 'AES256', kmsKeyId: 'k' }, { kms: 'x' }])
      expect((await register(targetBody({ encryption }))).json.error, JSON.stringify(encryption)).toBe('body_invalid');
    expect((await call('GET', '/v1/storage-targets')).json).toEqual({ data: [], nextCursor: null, defaultTarget: null, residency: null });

    const key = `tgt-${randomUUID()}`;
    const created = await register(targetBody(), key);
    expect(created.status, created.text).toBe(201);
    expect(created.text).not.toContain(CREDS.secretAccessKey);
    expect(created.json).toMatchObject({
      name: 'archive',
      bucket,
      prefix: 'oncely/',
      residency: 'eu',
      encryption: null,
      default: false,
      credentialsVersion: 1,
      accessKeyIdHint: `…${CREDS.accessKeyId.slice(-4)}`,
    });
    expect(created.headers.get('location')).toBe(`/v1/storage-targets/${created.json.id}`);
    target = { id: created.json.id, name: 'archive' };
    // The proof left nothing behind in the bucket.
    expect(await listKeys(bucketStore, '')).toEqual([]);
    // The same request again is its replay; the same name under another key is 409.
    const replay = await register(targetBody(), key);
    expect([replay.status, replay.json.id]).toEqual([201, target.id]);
    const taken = await register(targetBody());
    expect([taken.status, taken.json.error]).toEqual([409, 'storage_target_name_taken']);
    expect((await call('GET', `/v1/storage-targets/${target.id}`)).json.id).toBe(target.id);
    expect((await call('GET', `/v1/storage-targets/${randomUUID()}`)).status).toBe(404);
    // The secret is sealed in its row.
    const row = await stack.runtime.pool.query<{ secret_access_key: string }>(
      'SELECT secret_access_key FROM storage_targets WHERE id = $1',
      [target.id],
    );
    expect(row.rows[0]!.secret_access_key).not.toContain(CREDS.secretAccessKey);
    // A key without storage:manage may not.
    const narrow = await call(
      'POST',
      '/v1/api-keys',
      { label: 'uploads only', scopes: ['uploads:write'] },
      { 'idempotency-key': randomUUID() },
    );
    const refused = await call('GET', '/v1/storage-targets', undefined, {}, narrow.json.key);
    expect([refused.status, refused.json.error]).toEqual([403, 'insufficient_scope']);
  });

  it('every door stores into the target it names; reads, ranges and the audit follow the row; nothing lands in the default store', async () => {
    const ids: Record<string, string> = {};
    const bodies: Record<string, Buffer> = {};
    const keys: Record<string, string> = {};
    const one = randomBytes(40_000);
    keys.upload = `t-one-${randomUUID()}`;
    const posted = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: keys.upload,
      body: one,
      headers: { 'x-storage-target': 'archive' },
    });
    expect(posted.status, posted.text).toBe(201);
    [ids.upload, bodies.upload] = [posted.json.uploadId, one];

    keys.form = `t-form-${randomUUID()}`;
    const formBytes = randomBytes(30_000);
    const form = new FormData();
    form.append('idempotencyKey', keys.form);
    form.append('storageTarget', target.id);
    form.append('file', new Blob([formBytes]), 'f.bin');
    const formRes = await fetch(`${stack.url}/v1/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.apiKey}` },
      body: form,
    });
    expect(formRes.status).toBe(201);
    [ids.form, bodies.form] = [((await formRes.json()) as { uploadId: string }).uploadId, formBytes];

    for (const [door, endpoint, extra] of [
      ['tus', '/v1/tus', {}],
      ['rufh', '/v1/uploads', { protocol: 'ietf-draft-05' }],
    ] as const) {
      keys[door] = `t-${door}-${randomUUID()}`;
      bodies[door] = randomBytes(6 * 1024 * 1024 + 123);
      await new Promise<void>((resolve, reject) =>
        new tus.Upload(bodies[door]!, {
          endpoint: `${stack.url}${endpoint}`,
          ...(extra as Partial<tus.UploadOptions>),
          chunkSize: 5 * 1024 * 1024,
          headers: {
            authorization: `Bearer ${tenant.apiKey}`,
            'idempotency-key': keys[door]!,
            ...(door === 'rufh' ? { 'x-storage-target': 'archive' } : {}),
          },
          metadata: { filename: `${door}.bin`, ...(door === 'tus' ? { storageTarget: 'archive' } : {}) },
          onSuccess: () => resolve(),
          onError: reject,
        }).start(),
      );
      ids[door] = (await call('GET', `/v1/idempotency-keys/${keys[door]}`)).json.response.uploadId;
    }

    keys.direct = `t-direct-${randomUUID()}`;
    bodies.direct = randomBytes(50_000);
    const plan = await call(
      'POST',
      '/v1/direct-uploads',
      { bytes: bodies.direct.length, sha256: sha256(bodies.direct), storageTarget: 'archive' },
      { 'idempotency-key': keys.direct },
    );
    expect(plan.status, plan.text).toBe(201);
    // On either default store the client sends the bytes to the target itself, signed for its endpoint.
    expect(plan.json.upload.url.startsWith(versity.endpoint)).toBe(true);
    const put = await fetch(plan.json.upload.url, { method: 'PUT', headers: plan.json.upload.headers, body: bodies.direct });
    expect(put.status).toBe(200);
    const completed = await call('POST', `/v1/direct-uploads/${plan.json.id}/complete`);
    expect(completed.status, completed.text).toBe(201);
    ids.direct = completed.json.uploadId;

    // A plan in parts: each part's URL is the target's, checked by the target against its SHA-256.
    keys.directParts = `t-direct-parts-${randomUUID()}`;
    bodies.directParts = randomBytes(6 * 1024 * 1024 + 7);
    const inParts = await call(
      'POST',
      '/v1/direct-uploads',
      { bytes: bodies.directParts.length, sha256: sha256(bodies.directParts), storageTarget: 'archive' },
      { 'idempotency-key': keys.directParts },
    );
    expect([inParts.status, inParts.json.multipart], inParts.text).toEqual([201, { partBytes: 5 * 1024 * 1024, partCount: 2 }]);
    for (let n = 1; n <= 2; n++) {
      const part = bodies.directParts.subarray((n - 1) * 5 * 1024 * 1024, n * 5 * 1024 * 1024);
      const signed = await call('POST', `/v1/direct-uploads/${inParts.json.id}/parts/${n}`, {
        sha256: createHash('sha256').update(part).digest('base64'),
      });
      expect(signed.status, signed.text).toBe(200);
      expect(signed.json.url.startsWith(versity.endpoint)).toBe(true);
      const sent = await fetch(signed.json.url, { method: 'PUT', headers: signed.json.headers, body: part });
      expect(sent.status, await sent.text()).toBe(200);
    }
    const partsDone = await call('POST', `/v1/direct-uploads/${inParts.json.id}/complete`);
    expect(partsDone.status, partsDone.text).toBe(201);
    ids.directParts = partsDone.json.uploadId;

    keys.uppy = `t-uppy-${randomUUID()}`;
    bodies.uppy = Buffer.from('via uppy into the target');
    const endpoint = (await call('POST', '/v1/uppy-endpoints')).json.companionEndpoint as string;
    const q = new URLSearchParams({ filename: 'uppy.txt', 'metadata[idempotencyKey]': keys.uppy, 'metadata[storageTarget]': 'archive' });
    const params = (await call('GET', `${endpoint}/s3/params?${q}`)).json as { url: string; fields: Record<string, string> };
    expect(params.fields.storageTarget).toBe('archive');
    const uppyForm = new FormData();
    for (const [k, v] of Object.entries(params.fields)) uppyForm.append(k, v);
    uppyForm.append('file', new Blob([bodies.uppy], { type: 'text/plain' }), 'uppy.txt');
    const uppyPosted = await fetch(new URL(params.url, stack.url), { method: 'POST', body: uppyForm });
    expect(uppyPosted.status, await uppyPosted.clone().text()).toBeLessThan(300);
    ids.uppy = (await call('GET', `/v1/idempotency-keys/${encodeURIComponent(keys.uppy)}`)).json.response.uploadId;

    keys.import = `t-import-${randomUUID()}`;
    bodies.import = randomBytes(20_000);
    const origin = await startFileOrigin(bodies.import);
    try {
      const imported = await call(
        'POST',
        '/v1/imports',
        { url: `${origin.base}/f.bin`, storageTarget: target.id },
        { 'idempotency-key': keys.import, prefer: 'wait=60' },
      );
      expect(imported.status, imported.text).toBe(201);
      ids.import = imported.json.uploadId;
    } finally {
      await origin.close();
    }

    for (const door of Object.keys(ids)) {
      const got = await call('GET', `/v1/uploads/${ids[door]}`);
      expect(got.json.storageTarget, door).toBe(target.id);
      expect(got.json.storageKey.startsWith(`targets/${target.id}/tenants/${tenant.tenantId}/keys/`), door).toBe(true);
      const read = await content(ids[door]!);
      expect(read.status, door).toBe(200);
      expect(read.body.equals(bodies[door]!), door).toBe(true);
      // In the target's bucket under its prefix, and nowhere in the instance's store.
      expect(await inBucket(keyStoragePrefix(tenant.tenantId, keys[door]!)), door).toHaveLength(1);
      expect(await listKeys(stack.runtime.store, keyStoragePrefix(tenant.tenantId, keys[door]!)), door).toEqual([]);
    }
    const ranged = await fetch(`${stack.url}/v1/uploads/${ids.upload}/content`, {
      headers: { authorization: `Bearer ${tenant.apiKey}`, range: 'bytes=10-19' },
    });
    expect(ranged.status).toBe(206);
    expect(Buffer.from(await ranged.arrayBuffer()).equals(one.subarray(10, 20))).toBe(true);
    // A signed download URL reads from the target too.
    const link = await call('POST', `/v1/uploads/${ids.upload}/download-urls`, {});
    expect(link.status, link.text).toBe(201);
    const viaLink = await fetch(link.json.url.startsWith('http') ? link.json.url : `${stack.url}${link.json.url}`);
    expect(Buffer.from(await viaLink.arrayBuffer()).equals(one)).toBe(true);
    // The list filters by target and by residency.
    const listed = await call('GET', `/v1/uploads?storageTarget=${target.id}&limit=100`);
    expect(listed.json.items.map((u: { uploadId: string }) => u.uploadId).sort()).toEqual(Object.values(ids).sort());
    expect((await call('GET', '/v1/uploads?residency=eu&limit=100')).json.items).toHaveLength(Object.keys(ids).length);
    expect((await call('GET', '/v1/uploads?storageTarget=default&limit=100')).json.items).toEqual([]);
    const report = await audit(stack.runtime.pool, stack.runtime.store, { keyRetentionSeconds: 3600 });
    expect(report.violations).toEqual([]);
    expect(report.unreferencedObjects).toBe(0);
  });

  it('Uppy multipart goes in parts straight into the target, on either default store (the embedded one signs no parts itself)', async () => {
    const file = randomBytes(5 * 1024 * 1024 + 777);
    const key = `t-uppy-mp-${randomUUID()}`;
    const endpoint = (await call('POST', '/v1/uppy-endpoints')).json.companionEndpoint as string;
    const created = await call('POST', `${endpoint}/s3/multipart`, {
      filename: 'parts.bin',
      type: 'application/octet-stream',
      metadata: { idempotencyKey: key, name: 'parts.bin', storageTarget: 'archive' },
    });
    expect(created.status, created.text).toBe(200);
    const { uploadId, key: objectKey } = created.json as { uploadId: string; key: string };
    const q = `?key=${encodeURIComponent(objectKey)}`;
    const parts = [file.subarray(0, 5 * 1024 * 1024), file.subarray(5 * 1024 * 1024)];
    const etags: string[] = [];
    for (const [i, body] of parts.entries()) {
      const signed = await call('GET', `${endpoint}/s3/multipart/${encodeURIComponent(uploadId)}/${i + 1}${q}`);
      expect(signed.status).toBe(200);
      // Signed for the target's own endpoint: the bytes never pass through the instance's store.
      expect(signed.json.url.startsWith(versity.endpoint)).toBe(true);
      const put = await fetch(signed.json.url, { method: 'PUT', body });
      expect(put.status).toBe(200);
      etags[i] = put.headers.get('etag')!;
    }
    const done = await call('POST', `${endpoint}/s3/multipart/${encodeURIComponent(uploadId)}/complete${q}`, {
      parts: etags.map((ETag, i) => ({ PartNumber: i + 1, ETag })),
    });
    expect(done.status, done.text).toBe(200);
    expect(done.json.upload).toMatchObject({ bytes: file.length, sha256: sha256(file) });
    const id = done.json.upload.uploadId as string;
    expect((await call('GET', `/v1/uploads/${id}`)).json.storageTarget).toBe(target.id);
    expect((await content(id)).body.equals(file)).toBe(true);
    expect(await inBucket(keyStoragePrefix(tenant.tenantId, key))).toHaveLength(1);
    expect(await listKeys(stack.runtime.store, keyStoragePrefix(tenant.tenantId, key))).toEqual([]);
  });

  it("the API's own signed PUT refuses a direct upload a store signs for: 404, nothing stored, the plan's own URL still good", async () => {
    const body = randomBytes(20_000);
    const key = `t-direct-forged-${randomUUID()}`;
    const plan = await call(
      'POST',
      '/v1/direct-uploads',
      { bytes: body.length, sha256: sha256(body), storageTarget: 'archive' },
      { 'idempotency-key': key },
    );
    expect(plan.status, plan.text).toBe(201);
    expect(plan.json.upload.url.startsWith(versity.endpoint)).toBe(true);
    // A URL of the API's own PUT for this session, signed with the instance's own key (as a plan made before targets signed would hold).
    const box = await loadSecretBox(stack.config.SECRETS_KEY, stack.config.DATA_DIR, stack.config.SECRETS_KEY_PREVIOUS);
    const session = { id: plan.json.id, upload_length: String(body.length), content_type: 'application/octet-stream' } as SessionRow;
    const own = await new SelfSignedTarget(stack.runtime.store, box).putRequest(session, 60, `key:${randomUUID()}`);
    const refused = await fetch(`${stack.url}${own.url}`, { method: 'PUT', headers: own.headers, body });
    expect(refused.status).toBe(404);
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect(((await refused.json()) as { error: string }).error).toBe('not_found');
    expect(await inBucket(keyStoragePrefix(tenant.tenantId, key))).toEqual([]);
    expect(await listKeys(stack.runtime.store, keyStoragePrefix(tenant.tenantId, key))).toEqual([]);
    const put = await fetch(plan.json.upload.url, { method: 'PUT', headers: plan.json.upload.headers, body });
    expect(put.status).toBe(200);
    const done = await call('POST', `/v1/direct-uploads/${plan.json.id}/complete`);
    expect(done.status, done.text).toBe(201);
    expect((await content(done.json.uploadId)).body.equals(body)).toBe(true);
  });

  it("a deduping tenant's direct upload is instant only where its bytes are: in the target named, not in the instance store", async () => {
    const own = await stack.createTenant('targets-dedupe');
    await stack.runtime.pool.query(`UPDATE tenants SET dedupe = 'sha256' WHERE id = $1`, [own.tenantId]);
    const as = (method: string, pathname: string, json?: unknown, headers: Record<string, string> = {}) =>
      call(method, pathname, json, headers, own.apiKey);
    const registered = await as('POST', '/v1/storage-targets', targetBody({ name: 'dedupe-archive', prefix: 'dedupe/' }), {
      'idempotency-key': randomUUID(),
    });
    expect(registered.status, registered.text).toBe(201);
    const bytes = randomBytes(30_000);
    const first = await postUpload(stack.url, {
      apiKey: own.apiKey,
      key: `dd-${randomUUID()}`,
      body: bytes,
      headers: { 'x-storage-target': 'dedupe-archive' },
    });
    expect(first.status, first.text).toBe(201);
    const plan = (target?: string) =>
      as(
        'POST',
        '/v1/direct-uploads',
        { bytes: bytes.length, sha256: sha256(bytes), ...(target ? { storageTarget: target } : {}) },
        {
          'idempotency-key': `dd-plan-${randomUUID()}`,
        },
      );
    // The same bytes into the same target: committed at once, sharing the stored object.
    const instant = await plan('dedupe-archive');
    expect(instant.status, instant.text).toBe(201);
    expect(instant.json.committedUpload).toMatchObject({ storageKey: first.json.storageKey, sha256: sha256(bytes) });
    // Into the instance store, where they are not: a plan to send them.
    const elsewhere = await plan();
    expect(elsewhere.status, elsewhere.text).toBe(201);
    expect(elsewhere.json.committedUpload).toBeUndefined();
    expect(elsewhere.json.upload.url).toEqual(expect.any(String));
    const shared = await stack.runtime.pool.query('SELECT refs FROM stored_objects WHERE tenant_id = $1', [own.tenantId]);
    expect(shared.rows.map((r) => r.refs)).toEqual([2]);
    const report = await audit(stack.runtime.pool, stack.runtime.store, { keyRetentionSeconds: 3600 });
    expect(report.violations).toEqual([]);
  });

  it('renditions and image variants are made beside their original in the target', async () => {
    const key = `t-png-${randomUUID()}`;
    const image = await png(320, 200);
    const res = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body: image,
      contentType: 'image/png',
      headers: { 'x-storage-target': 'archive' },
    });
    expect(res.status, res.text).toBe(201);
    const id = res.json.uploadId as string;
    const detail = await eventually(async () => {
      const d = (await call('GET', `/v1/uploads/${id}`)).json;
      // Processed: every rendition of the pipeline recorded (they are recorded one by one).
      return d.status === 'processed' && d.renditions?.length ? d : undefined;
    }, 60_000);
    for (const r of detail.renditions as { name: string; storageKey: string }[]) {
      expect(r.storageKey.startsWith(`targets/${target.id}/tenants/${tenant.tenantId}/renditions/${id}/`)).toBe(true);
      const served = await fetch(`${stack.url}/v1/uploads/${id}/renditions/${r.name}`, {
        headers: { authorization: `Bearer ${tenant.apiKey}` },
      });
      expect(served.status).toBe(200);
    }
    // A variant made on request is stored beside them.
    const preset = await call(
      'POST',
      '/v1/image-presets',
      { name: 'tiny', spec: 'w_16,h_16,fit_cover,f_webp' },
      { 'idempotency-key': randomUUID() },
    );
    expect(preset.status, preset.text).toBe(201);
    const variant = await fetch(`${stack.url}/v1/uploads/${id}/images/tiny`, { headers: { authorization: `Bearer ${tenant.apiKey}` } });
    expect([variant.status, variant.headers.get('content-type')]).toEqual([200, 'image/webp']);
    expect((await inBucket(`tenants/${tenant.tenantId}/renditions/${id}/`)).length).toBe(detail.renditions.length + 1);
    expect(await inBucket(`tenants/${tenant.tenantId}/renditions/${id}/images/`)).toHaveLength(1);
    expect(await listKeys(stack.runtime.store, `tenants/${tenant.tenantId}/renditions/${id}/`)).toEqual([]);
  });

  it('a deletion erases the bytes and renditions from the target', async () => {
    const key = `t-del-${randomUUID()}`;
    const res = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body: randomBytes(1000),
      headers: { 'x-storage-target': 'archive' },
    });
    expect(res.status).toBe(201);
    expect(await inBucket(keyStoragePrefix(tenant.tenantId, key))).toHaveLength(1);
    const deleted = await call('DELETE', `/v1/uploads/${res.json.uploadId}`, undefined, { prefer: 'wait=30' });
    expect(deleted.status, deleted.text).toBe(200);
    await eventually(async () => (await inBucket(keyStoragePrefix(tenant.tenantId, key))).length === 0);
  });

  it('an unknown target, a token pinned elsewhere or another residency is refused before any byte; the same key naming another target is 422', async () => {
    const key = `t-bad-${randomUUID()}`;
    const unknown = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body: Buffer.from('x'),
      headers: { 'x-storage-target': 'nowhere' },
    });
    expect([unknown.status, unknown.json.error]).toEqual([422, 'storage_target_unknown']);
    const malformed = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body: Buffer.from('x'),
      headers: { 'x-storage-target': 'Bad Name!' },
    });
    expect([malformed.status, malformed.json.error]).toEqual([400, 'header_invalid']);
    // A form naming an unknown target, or naming one after its file part: refused, nothing kept.
    for (const [fields, status, error] of [
      [{ storageTarget: 'nowhere' }, 422, 'storage_target_unknown'],
      [{ after: 'archive' }, 400, 'form_invalid'],
    ] as const) {
      const form = new FormData();
      form.append('idempotencyKey', key);
      if ('storageTarget' in fields) form.append('storageTarget', fields.storageTarget);
      form.append('file', new Blob([randomBytes(300_000)]), 'f.bin');
      if ('after' in fields) form.append('storageTarget', fields.after);
      const res = await fetch(`${stack.url}/v1/uploads`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.apiKey}` },
        body: form,
      });
      expect([res.status, ((await res.json()) as { error: string }).error]).toEqual([status, error]);
    }
    expect(await listKeys(stack.runtime.store, keyStoragePrefix(tenant.tenantId, key))).toEqual([]);
    expect(await inBucket(keyStoragePrefix(tenant.tenantId, key))).toEqual([]);
    const stored = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body: Buffer.from('x'),
      headers: { 'x-storage-target': 'archive' },
    });
    expect(stored.status).toBe(201);
    const elsewhere = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('x') });
    expect([elsewhere.status, elsewhere.json.error]).toEqual([422, 'idempotency_key_reuse']);

    // A token pinned to the target stores there without naming it; naming another is 403.
    const minted = await call('POST', '/v1/upload-tokens', { storageTarget: 'archive' }, { 'idempotency-key': randomUUID() });
    expect([minted.status, minted.json.storageTarget]).toEqual([201, target.id]);
    const pinned = await postUpload(stack.url, { apiKey: minted.json.token, key: `t-pin-${randomUUID()}`, body: Buffer.from('pinned') });
    expect(pinned.status).toBe(201);
    expect((await call('GET', `/v1/uploads/${pinned.json.uploadId}`)).json.storageTarget).toBe(target.id);
    const second = await register(targetBody({ name: 'second', prefix: 'second/', residency: 'us' }));
    expect(second.status, second.text).toBe(201);
    const away = await postUpload(stack.url, {
      apiKey: minted.json.token,
      key: `t-pin-${randomUUID()}`,
      body: Buffer.from('x'),
      headers: { 'x-storage-target': 'second' },
    });
    expect([away.status, away.json.error]).toEqual([403, 'storage_target_not_allowed']);
    const badToken = await call('POST', '/v1/upload-tokens', { storageTarget: 'nowhere' }, { 'idempotency-key': randomUUID() });
    expect([badToken.status, badToken.json.error]).toEqual([422, 'storage_target_unknown']);

    // Residency: the operator may require "eu" only once the tenant's default is there.
    const admin = (method: string, p: string, body?: unknown) => call(method, p, body, { 'idempotency-key': randomUUID() }, ADMIN);
    const early = await admin('PATCH', `/admin/tenants/${tenant.tenantId}`, { residency: 'eu' });
    expect([early.status, early.json.error]).toEqual([422, 'residency_mismatch']);
    expect((await call('PATCH', `/v1/storage-targets/${target.id}`, { default: true })).json.default).toBe(true);
    const required = await admin('PATCH', `/admin/tenants/${tenant.tenantId}`, { residency: 'eu' });
    expect([required.status, required.json.residency, required.json.defaultStorageTarget]).toEqual([200, 'eu', target.id]);
    const us = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `t-us-${randomUUID()}`,
      body: Buffer.from('x'),
      headers: { 'x-storage-target': 'second' },
    });
    expect([us.status, us.json.error, us.json.residency]).toEqual([422, 'residency_mismatch', 'eu']);
    const toUs = await call('PATCH', `/v1/storage-targets/${second.json.id}`, { default: true });
    expect([toUs.status, toUs.json.error]).toEqual([422, 'residency_mismatch']);
    // With no target named, an upload goes to the default.
    const byDefault = await postUpload(stack.url, { apiKey: tenant.apiKey, key: `t-def-${randomUUID()}`, body: Buffer.from('default') });
    expect((await call('GET', `/v1/uploads/${byDefault.json.uploadId}`)).json.storageTarget).toBe(target.id);
    // A target in use, or the default, is not removed; an empty one is.
    const inUse = await call('DELETE', `/v1/storage-targets/${target.id}`);
    expect([inUse.status, inUse.json.error, inUse.json.default]).toEqual([409, 'storage_target_in_use', true]);
    expect((await call('DELETE', `/v1/storage-targets/${second.json.id}`)).status).toBe(204);
    expect((await call('GET', '/v1/storage-targets')).json.data.map((t: { name: string }) => t.name)).toEqual(['archive']);
    expect((await admin('PATCH', `/admin/tenants/${tenant.tenantId}`, { residency: null })).json.residency).toBe(null);
    expect((await call('PATCH', `/v1/storage-targets/${target.id}`, { default: false })).json.default).toBe(false);
  });

  it('operators register targets for a tenant; new credentials are proved before they replace the old ones', async () => {
    const other = await stack.createTenant('targets-op');
    const created = await call(
      'POST',
      `/admin/tenants/${other.tenantId}/storage-targets`,
      targetBody({ name: 'op-made', prefix: 'op/', encryption: { sse: 'aws:kms', kmsKeyId: 'tenant-key' } }),
      { 'idempotency-key': randomUUID() },
      ADMIN,
    );
    expect(created.status, created.text).toBe(201);
    // Its own encryption, shown (every write to it asks for it: test/unit/s3-encryption.test.ts).
    expect(created.json.encryption).toEqual({ sse: 'aws:kms', kmsKeyId: 'tenant-key' });
    const listed = await call('GET', '/v1/storage-targets', undefined, {}, other.apiKey);
    expect(listed.json.data.map((t: { id: string }) => t.id)).toEqual([created.json.id]);
    expect((await call('GET', `/admin/tenants/${randomUUID()}/storage-targets`, undefined, {}, ADMIN)).status).toBe(404);
    expect((await call('GET', `/admin/tenants/${other.tenantId}/storage-targets`)).status).toBe(401);
    // Another tenant's target is not this one's to name.
    const foreign = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `t-foreign-${randomUUID()}`,
      body: Buffer.from('x'),
      headers: { 'x-storage-target': created.json.id },
    });
    expect([foreign.status, foreign.json.error]).toEqual([422, 'storage_target_unknown']);
    // The tenant's deletion erases what it stored in its target too.
    const stored = await postUpload(stack.url, {
      apiKey: other.apiKey,
      key: `t-op-${randomUUID()}`,
      body: randomBytes(3000),
      headers: { 'x-storage-target': 'op-made' },
    });
    expect(stored.status, stored.text).toBe(201);
    expect(await listKeys(bucketStore, `op/tenants/${other.tenantId}/`)).toHaveLength(1);
    const erased = await call('DELETE', `/admin/tenants/${other.tenantId}`, undefined, { prefer: 'wait=120' }, ADMIN);
    expect([erased.status, erased.json.status], erased.text).toEqual([200, 'deleted']);
    expect(await listKeys(bucketStore, `op/tenants/${other.tenantId}/`)).toEqual([]);

    const wrong = await call('PATCH', `/v1/storage-targets/${target.id}`, { accessKeyId: CREDS.accessKeyId, secretAccessKey: 'wrong' });
    expect([wrong.status, wrong.json.error]).toEqual([422, 'storage_target_refused']);
    expect((await call('GET', `/v1/storage-targets/${target.id}`)).json.credentialsVersion).toBe(1);
    const half = await call('PATCH', `/v1/storage-targets/${target.id}`, { accessKeyId: 'only-this' });
    expect([half.status, half.json.error]).toEqual([400, 'body_invalid']);
    // A real rotation: the target's users on the S3 server, the old one deleted after the change.
    const admin = (...args: string[]) =>
      exec(toolPath('versitygw'), ['admin', '-a', CREDS.accessKeyId, '-s', CREDS.secretAccessKey, '--er', versity.endpoint, ...args]);
    const oldPair = { accessKeyId: `old-${randomUUID().slice(0, 8)}`, secretAccessKey: randomUUID() };
    const newPair = { accessKeyId: `new-${randomUUID().slice(0, 8)}`, secretAccessKey: randomUUID() };
    for (const p of [oldPair, newPair]) await admin('create-user', '-a', p.accessKeyId, '-s', p.secretAccessKey, '-r', 'admin');
    const rotating = await register(targetBody({ name: 'rotating', prefix: 'rot/', ...oldPair }));
    expect(rotating.status, rotating.text).toBe(201);
    const before = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `t-rot-${randomUUID()}`,
      body: Buffer.from('before rotation'),
      headers: { 'x-storage-target': 'rotating' },
    });
    expect(before.status).toBe(201);
    const rotated = await call('PATCH', `/v1/storage-targets/${rotating.json.id}`, newPair);
    expect([rotated.status, rotated.json.credentialsVersion, rotated.json.accessKeyIdHint]).toEqual([
      200,
      2,
      `…${newPair.accessKeyId.slice(-4)}`,
    ]);
    await admin('delete-user', '-a', oldPair.accessKeyId);
    // Within the directory's refresh every process uses the new pair: the upload made with the old one reads back.
    await eventually(async () => (await content(before.json.uploadId)).status === 200, 20_000);
    expect((await content(before.json.uploadId)).body.toString()).toBe('before rotation');
    const after = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `t-rot-${randomUUID()}`,
      body: Buffer.from('after rotation'),
      headers: { 'x-storage-target': 'rotating' },
    });
    expect(after.status).toBe(201);
    expect((await content(after.json.uploadId)).body.toString()).toBe('after rotation');
    // The old pair is refused by the server now: proving it again fails.
    const stale = await call('PATCH', `/v1/storage-targets/${rotating.json.id}`, oldPair);
    expect([stale.status, stale.json.error]).toEqual([422, 'storage_target_refused']);
  });

  it('a target that goes away answers 503 storage_unavailable, the instance store goes on, and nothing is lost when it is back', async () => {
    const key = `t-away-${randomUUID()}`;
    const kept = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body: Buffer.from('kept'),
      headers: { 'x-storage-target': 'archive' },
    });
    expect(kept.status).toBe(201);
    await versity.stop();
    try {
      const read = await fetch(`${stack.url}/v1/uploads/${kept.json.uploadId}/content`, {
        headers: { authorization: `Bearer ${tenant.apiKey}` },
      });
      expect(read.status).toBe(503);
      expect(((await read.json()) as { error: string }).error).toBe('storage_unavailable');
      const refused = await postUpload(stack.url, {
        apiKey: tenant.apiKey,
        key: `t-away-${randomUUID()}`,
        body: Buffer.from('x'),
        headers: { 'x-storage-target': 'archive' },
      });
      expect([refused.status, refused.json.error]).toEqual([503, 'storage_unavailable']);
      const home = await postUpload(stack.url, { apiKey: tenant.apiKey, key: `t-home-${randomUUID()}`, body: Buffer.from('home') });
      expect(home.status).toBe(201);
    } finally {
      await startTargetServer();
    }
    expect((await content(kept.json.uploadId)).body.toString()).toBe('kept');
    const report = await audit(stack.runtime.pool, stack.runtime.store, { keyRetentionSeconds: 3600 });
    expect(report.violations).toEqual([]);
  });
});
