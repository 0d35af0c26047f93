// Legal holds on a bucket with S3 Object Lock (versitygw): Oncely's hold is mirrored by the
// store's own on the original and every derived object, so a delete that goes around Oncely
// is refused by the store; a release lifts it and the erasure takes everything; an erasure
// finds a store hold a lost release left behind and lifts it itself; a store away when the
// hold is placed is a 503 whose retry sets the store's half. On a bucket without Object Lock
// the hold is Oncely's alone (the store deletes what it is asked to).
import { randomBytes, randomUUID } from 'node:crypto';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectLegalHoldCommand,
  HeadObjectCommand,
  PutObjectLegalHoldCommand,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { audit } from '../../src/audit';
import { parseAddress } from '../../src/storage/address';
import { jsonCaller, postUpload } from '../helpers/http';
import { png } from '../helpers/media';
import { sharedS3Client, startStackOnStore, type TestStack } from '../helpers/stack';
import { TcpProxy } from '../support/tcp-proxy';

const s3 = sharedS3Client();

/** A stack on a bucket of its own, made with Object Lock or without (reaching the store through `s3Endpoint` when given). */
async function stackOnBucket(objectLock: boolean, s3Endpoint?: string): Promise<{ stack: TestStack; bucket: string }> {
  const bucket = `holds-${objectLock ? 'lock' : 'plain'}-${randomBytes(4).toString('hex')}`;
  await s3.send(new CreateBucketCommand({ Bucket: bucket, ...(objectLock ? { ObjectLockEnabledForBucket: true } : {}) }));
  const stack = await startStackOnStore('s3', `holds_${objectLock ? 'lock' : 'plain'}`, {
    env: { S3_BUCKET: bucket, ...(s3Endpoint ? { S3_ENDPOINT: s3Endpoint } : {}) },
  });
  return { stack, bucket };
}

function client(stack: TestStack, apiKey: string) {
  return jsonCaller(() => ({ base: stack.url, apiKey }));
}

/** An image upload with one variant: an original and a derived object, as their keys in the bucket. */
async function imageWithVariant(stack: TestStack, apiKey: string) {
  const call = client(stack, apiKey);
  const up = await postUpload(stack.url, { apiKey, key: `held-${randomUUID()}`, body: await png(24, 24), contentType: 'image/png' });
  expect(up.status).toBe(201);
  const id = up.json.uploadId as string;
  const preset = await call('POST', '/v1/image-presets', { name: `thumb-${id.slice(0, 8)}`, spec: 'w_8,f_png' }, randomUUID());
  expect(preset.status).toBe(201);
  const variant = await fetch(`${stack.url}/v1/uploads/${id}/images/thumb-${id.slice(0, 8)}`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  expect(variant.status).toBe(200);
  await variant.arrayBuffer();
  const original = (await stack.runtime.pool.query('SELECT storage_key FROM uploads WHERE id = $1', [id])).rows[0].storage_key as string;
  const derived = (await stack.runtime.pool.query('SELECT storage_key FROM image_variants WHERE upload_id = $1', [id])).rows.map(
    (r) => r.storage_key as string,
  );
  expect(derived).toHaveLength(1);
  return { id, keys: [original, ...derived].map((k) => parseAddress(k).key) };
}

/** ON or OFF; `never` for an object the store has never held (S3 answers that with an error). */
const storeHold = (bucket: string, key: string) =>
  s3.send(new GetObjectLegalHoldCommand({ Bucket: bucket, Key: key })).then(
    (res) => res.LegalHold?.Status,
    (err: { name?: string }) => {
      if (err.name === 'NoSuchObjectLockConfiguration') return 'never';
      throw err;
    },
  );
const exists = (bucket: string, key: string) =>
  s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).then(
    () => true,
    () => false,
  );
const bypassDelete = (bucket: string, key: string) =>
  s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key })).then(
    () => 'deleted',
    (err: { name?: string }) => err.name ?? 'refused',
  );

afterAll(() => s3.destroy());

describe('on a bucket with S3 Object Lock', () => {
  let stack: TestStack;
  let bucket: string;
  let tenant: { tenantId: string; apiKey: string };
  // The stack reaches the store through a proxy the test can cut.
  let proxy: TcpProxy;
  beforeAll(async () => {
    const endpoint = new URL(inject('stack').s3.endpoint);
    proxy = await new TcpProxy({ host: endpoint.hostname, port: Number(endpoint.port) }).start();
    ({ stack, bucket } = await stackOnBucket(true, `http://127.0.0.1:${proxy.port}`));
    tenant = await stack.createTenant('lock');
  });
  afterAll(async () => {
    proxy?.setMode('forward');
    await stack?.stop();
    await proxy?.stop();
  });

  it("places the store's own hold on every object: a delete around Oncely is refused; the release lifts it and the erasure takes all", async () => {
    const call = client(stack, tenant.apiKey);
    const { id, keys } = await imageWithVariant(stack, tenant.apiKey);
    const placed = await call('PUT', `/v1/uploads/${id}/legal-hold`, { reason: 'Matter 7' });
    expect(placed.status).toBe(200);
    expect(placed.json).toMatchObject({ uploadId: id, legalHold: { reason: 'Matter 7' }, storeHold: 'placed' });
    for (const key of keys) expect(await storeHold(bucket, key)).toBe('ON');
    // A variant made while it is held is held in the store too.
    const later = `later-${id.slice(0, 8)}`;
    expect((await call('POST', '/v1/image-presets', { name: later, spec: 'w_6,f_png' }, randomUUID())).status).toBe(201);
    const made = await fetch(`${stack.url}/v1/uploads/${id}/images/${later}`, { headers: { authorization: `Bearer ${tenant.apiKey}` } });
    expect(made.status).toBe(200);
    await made.arrayBuffer();
    const variantKeys = (await stack.runtime.pool.query('SELECT storage_key FROM image_variants WHERE upload_id = $1', [id])).rows.map(
      (r) => parseAddress(r.storage_key as string).key,
    );
    expect(variantKeys).toHaveLength(2);
    for (const key of variantKeys) expect(await storeHold(bucket, key)).toBe('ON');
    keys.push(...variantKeys.filter((k) => !keys.includes(k)));
    // Someone with the bucket's credentials tries to delete around Oncely: the store refuses.
    for (const key of keys) expect(await bypassDelete(bucket, key)).not.toBe('deleted');
    for (const key of keys) expect(await exists(bucket, key)).toBe(true);
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
    // The store's hold lifted around Oncely: the audit finds it; the same hold again (a retry)
    // answers the same and sets the store's hold again.
    await s3.send(new PutObjectLegalHoldCommand({ Bucket: bucket, Key: keys[1]!, LegalHold: { Status: 'OFF' } }));
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([
      expect.stringMatching(new RegExp(`^hold: upload ${id} object .* is not held by the store$`)),
    ]);
    expect((await call('PUT', `/v1/uploads/${id}/legal-hold`, { reason: 'Matter 7' })).json).toEqual(placed.json);
    expect(await storeHold(bucket, keys[1]!)).toBe('ON');
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);

    const released = await call('DELETE', `/v1/uploads/${id}/legal-hold`);
    expect(released.json).toEqual({ uploadId: id, legalHold: null, storeHold: 'released' });
    for (const key of keys) expect(await storeHold(bucket, key)).toBe('OFF');
    const deleted = await call('DELETE', `/v1/uploads/${id}`);
    expect([deleted.status, deleted.json.status]).toEqual([200, 'deleted']);
    for (const key of keys) expect(await exists(bucket, key)).toBe(false);
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  }, 120_000);

  it("a store away when the hold is placed: 503, Oncely's hold stands, and the same request sets the store's", async () => {
    const call = client(stack, tenant.apiKey);
    const { id, keys } = await imageWithVariant(stack, tenant.apiKey);
    proxy.setMode('refuse');
    const away = await call('PUT', `/v1/uploads/${id}/legal-hold`, { reason: 'Matter 9' });
    proxy.setMode('forward');
    expect([away.status, away.json.error]).toEqual([503, 'storage_unavailable']);
    // Oncely's half committed: the upload is held (its delete refused), the store's half is missing.
    expect((await call('GET', `/v1/uploads/${id}`)).json.legalHold).toMatchObject({ reason: 'Matter 9' });
    expect((await call('DELETE', `/v1/uploads/${id}`)).json.error).toBe('legal_hold');
    for (const key of keys) expect(await storeHold(bucket, key)).toBe('never');
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toContainEqual(
      expect.stringMatching(new RegExp(`^hold: upload ${id} object .* is not held by the store$`)),
    );
    const again = await call('PUT', `/v1/uploads/${id}/legal-hold`, { reason: 'Matter 9' });
    expect([again.status, again.json.storeHold]).toEqual([200, 'placed']);
    for (const key of keys) expect(await storeHold(bucket, key)).toBe('ON');
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
    expect((await call('DELETE', `/v1/uploads/${id}/legal-hold`)).json.storeHold).toBe('released');
  }, 120_000);

  it('an erasure lifts a store hold that a lost release left behind', async () => {
    const call = client(stack, tenant.apiKey);
    const { id, keys } = await imageWithVariant(stack, tenant.apiKey);
    // The store holds the objects, Oncely does not: a release whose store half never ran.
    for (const key of keys) await s3.send(new PutObjectLegalHoldCommand({ Bucket: bucket, Key: key, LegalHold: { Status: 'ON' } }));
    expect((await call('GET', `/v1/uploads/${id}`)).json.legalHold).toBeNull();
    const deleted = await call('DELETE', `/v1/uploads/${id}`);
    expect([deleted.status, deleted.json.status]).toEqual([200, 'deleted']);
    for (const key of keys) expect(await exists(bucket, key)).toBe(false);
  }, 120_000);

  it('a shared original (dedupe) keeps its store hold while another held upload has it', async () => {
    const call = client(stack, tenant.apiKey);
    await stack.runtime.pool.query(`UPDATE tenants SET dedupe = 'sha256' WHERE id = $1`, [tenant.tenantId]);
    const body = await png(20, 20);
    const a = await postUpload(stack.url, { apiKey: tenant.apiKey, key: `dup-a-${randomUUID()}`, body, contentType: 'image/png' });
    const b = await postUpload(stack.url, { apiKey: tenant.apiKey, key: `dup-b-${randomUUID()}`, body, contentType: 'image/png' });
    const rows = await stack.runtime.pool.query('SELECT storage_key FROM uploads WHERE id = ANY($1)', [[a.json.uploadId, b.json.uploadId]]);
    const storageKeys = new Set(rows.rows.map((r) => r.storage_key as string));
    expect(storageKeys.size).toBe(1);
    const key = parseAddress([...storageKeys][0]!).key;
    expect((await call('PUT', `/v1/uploads/${a.json.uploadId}/legal-hold`, { reason: 'a' })).json.storeHold).toBe('placed');
    expect((await call('PUT', `/v1/uploads/${b.json.uploadId}/legal-hold`, { reason: 'b' })).json.storeHold).toBe('placed');
    await call('DELETE', `/v1/uploads/${a.json.uploadId}/legal-hold`);
    expect(await storeHold(bucket, key)).toBe('ON');
    await call('DELETE', `/v1/uploads/${b.json.uploadId}/legal-hold`);
    expect(await storeHold(bucket, key)).toBe('OFF');
  }, 120_000);
});

describe('on a bucket without Object Lock', () => {
  let stack: TestStack;
  let bucket: string;
  let tenant: { tenantId: string; apiKey: string };
  beforeAll(async () => {
    ({ stack, bucket } = await stackOnBucket(false));
    tenant = await stack.createTenant('plain');
  });
  afterAll(() => stack?.stop());

  it("holds in Oncely alone: the answer says so, Oncely's delete is refused, the store deletes what it is asked to", async () => {
    const call = client(stack, tenant.apiKey);
    const { id, keys } = await imageWithVariant(stack, tenant.apiKey);
    const placed = await call('PUT', `/v1/uploads/${id}/legal-hold`, { reason: 'Matter 8' });
    expect(placed.json).toMatchObject({ legalHold: { reason: 'Matter 8' }, storeHold: 'unsupported' });
    expect((await call('DELETE', `/v1/uploads/${id}`)).json.error).toBe('legal_hold');
    expect(await bypassDelete(bucket, keys[1]!)).toBe('deleted');
    expect((await call('DELETE', `/v1/uploads/${id}/legal-hold`)).json).toEqual({
      uploadId: id,
      legalHold: null,
      storeHold: 'unsupported',
    });
  }, 120_000);
});
