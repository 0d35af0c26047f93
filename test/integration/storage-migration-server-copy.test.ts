// A storage migration between two buckets of one S3 service reached with the same
// credentials: the store copies each object itself (CopyObject), the copy is read back and
// checked against the recorded SHA-256, and nothing streams through the worker; there and back.
// A copy that is not the recorded bytes is deleted and its upload fails.
import { randomBytes, randomUUID } from 'node:crypto';
import { CreateBucketCommand, HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { audit } from '../../src/audit';
import { metrics } from '../../src/metrics';
import { parseAddress } from '../../src/storage/address';
import { jsonCaller, postUpload, sha256 } from '../helpers/http';
import { eventually } from '../helpers/inspect';
import { png } from '../helpers/media';
import { sharedS3Client, startStackOnStore, type TestStack } from '../helpers/stack';

const s3 = sharedS3Client();
let stack: TestStack;
let tenant: { tenantId: string; apiKey: string };
const bucket = `server-copy-${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  stack = await startStackOnStore('s3', 'server_copy', {
    env: { STORAGE_TARGET_ALLOW_PRIVATE_NETWORKS: 'true', STORAGE_MIGRATION_SOURCE_GRACE_SECONDS: '0' },
  });
  tenant = await stack.createTenant('server-copy');
});
afterAll(async () => {
  await stack?.stop();
  s3.destroy();
});

const copies = async (mode: 'server' | 'streamed') =>
  (await metrics.storageCopies.get()).values.find((v) => v.labels.mode === mode)?.value ?? 0;

it('moves by CopyObject between two buckets of one service, each copy checked, there and back', async () => {
  const call = jsonCaller(() => ({ base: stack.url, apiKey: tenant.apiKey }));
  const { s3: shared } = inject('stack');
  const target = await call(
    'POST',
    '/v1/storage-targets',
    { name: 'same-service', endpoint: shared.endpoint, bucket, accessKeyId: shared.accessKeyId, secretAccessKey: shared.secretAccessKey },
    randomUUID(),
  );
  expect(target.status, target.text).toBe(201);
  const uploads = [];
  for (let i = 0; i < 4; i++) {
    const body = randomBytes(3000 + i);
    const up = await postUpload(stack.url, { apiKey: tenant.apiKey, key: `sc-${i}-${randomUUID()}`, body });
    expect(up.status).toBe(201);
    uploads.push({ id: up.json.uploadId as string, body });
  }
  // An image with a variant: its derived object goes the same way.
  const picture = await png(40, 30);
  const image = await postUpload(stack.url, {
    apiKey: tenant.apiKey,
    key: `sc-png-${randomUUID()}`,
    body: picture,
    contentType: 'image/png',
  });
  expect((await call('POST', '/v1/image-presets', { name: 'sc-small', spec: 'w_10,f_png' }, randomUUID())).status).toBe(201);
  const variant = async () =>
    (
      await fetch(`${stack.url}/v1/uploads/${image.json.uploadId}/images/sc-small`, {
        headers: { authorization: `Bearer ${tenant.apiKey}` },
      })
    ).status;
  expect(await variant()).toBe(200);
  uploads.push({ id: image.json.uploadId as string, body: picture });

  const move = async (from: string, to: string) => {
    const started = await call('POST', '/v1/storage-migrations', { from, to }, randomUUID());
    expect(started.status, started.text).toBe(201);
    return eventually(async () => {
      const m = (await call('GET', `/v1/storage-migrations/${started.json.id}`)).json;
      return m.state === 'completed' ? m : undefined;
    }, 120_000);
  };
  // Every object: the originals, and the picture's renditions (its pipeline's, once processed) and variant.
  await eventually(async () => (await call('GET', `/v1/uploads/${image.json.uploadId}`)).json.status === 'processed', 60_000);
  const derived = (
    await stack.runtime.pool.query(
      'SELECT (SELECT count(*) FROM renditions WHERE upload_id = $1) + (SELECT count(*) FROM image_variants WHERE upload_id = $1) AS n',
      [image.json.uploadId],
    )
  ).rows[0].n;
  const objects = uploads.length + Number(derived);
  expect(Number(derived)).toBeGreaterThanOrEqual(1);
  const [server, streamed] = [await copies('server'), await copies('streamed')];
  expect(await move('default', 'same-service')).toMatchObject({ moved: uploads.length, failed: 0, skipped: 0 });
  // Every object copied by the store; none streamed.
  expect((await copies('server')) - server).toBe(objects);
  expect(await copies('streamed')).toBe(streamed);
  for (const u of uploads) {
    expect((await call('GET', `/v1/uploads/${u.id}`)).json.storageTarget).toBe(target.json.id);
    const read = await fetch(`${stack.url}/v1/uploads/${u.id}/content`, { headers: { authorization: `Bearer ${tenant.apiKey}` } });
    expect(sha256(Buffer.from(await read.arrayBuffer()))).toBe(sha256(u.body));
  }
  expect(await variant()).toBe(200);

  expect(await move(target.json.id, 'default')).toMatchObject({ moved: uploads.length, failed: 0 });
  expect((await copies('server')) - server).toBe(2 * objects);
  for (const u of uploads) expect((await call('GET', `/v1/uploads/${u.id}`)).json.storageTarget).toBeNull();
  const report = await audit(stack.runtime.pool, stack.runtime.store, { keyRetentionSeconds: 3600 });
  expect(report.violations).toEqual([]);
});

it('a copy whose bytes are not the recorded ones (the source changed behind Oncely) is deleted and its upload fails; the rest move', async () => {
  // A tenant of its own: only its two uploads are on its default store.
  const own = await stack.createTenant('server-copy-checked');
  const call = jsonCaller(() => ({ base: stack.url, apiKey: own.apiKey }));
  const { s3: shared } = inject('stack');
  const target = await call(
    'POST',
    '/v1/storage-targets',
    {
      name: 'same-service-checked',
      endpoint: shared.endpoint,
      bucket,
      prefix: 'checked/',
      accessKeyId: shared.accessKeyId,
      secretAccessKey: shared.secretAccessKey,
    },
    randomUUID(),
  );
  expect(target.status, target.text).toBe(201);
  const [good, bad] = [randomBytes(2048), randomBytes(2048)];
  const ids: string[] = [];
  for (const body of [good, bad]) {
    const up = await postUpload(stack.url, { apiKey: own.apiKey, key: `sc-check-${randomUUID()}`, body });
    expect(up.status).toBe(201);
    ids.push(up.json.uploadId as string);
  }
  const [goodId, badId] = ids as [string, string];
  const badKey = parseAddress(
    (await stack.runtime.pool.query('SELECT storage_key FROM uploads WHERE id = $1', [badId])).rows[0].storage_key as string,
  ).key;
  // The same length, other bytes: only the hash of the copy read back can tell.
  await s3.send(new PutObjectCommand({ Bucket: stack.config.S3_BUCKET, Key: badKey, Body: randomBytes(2048) }));
  const [server] = [await copies('server')];
  const started = await call('POST', '/v1/storage-migrations', { from: 'default', to: 'same-service-checked' }, randomUUID());
  expect(started.status, started.text).toBe(201);
  const done = await eventually(async () => {
    const m = (await call('GET', `/v1/storage-migrations/${started.json.id}`)).json;
    return m.state === 'completed' ? m : undefined;
  }, 120_000);
  expect(done).toMatchObject({ moved: 1, failed: 1 });
  expect(done.failures).toEqual([{ uploadId: badId, reason: expect.stringMatching(/SHA-256 .* are not the ones recorded/) }]);
  expect((await copies('server')) - server).toBe(2);
  // The bad copy is gone from the target, its row still names the source; the good one moved.
  const inTarget = async (key: string) =>
    s3.send(new HeadObjectCommand({ Bucket: bucket, Key: `checked/${key}` })).then(
      () => true,
      () => false,
    );
  expect(await inTarget(badKey)).toBe(false);
  expect((await call('GET', `/v1/uploads/${badId}`)).json.storageTarget).toBeNull();
  expect((await call('GET', `/v1/uploads/${goodId}`)).json.storageTarget).toBe(target.json.id);
  const read = await fetch(`${stack.url}/v1/uploads/${goodId}/content`, { headers: { authorization: `Bearer ${own.apiKey}` } });
  expect(sha256(Buffer.from(await read.arrayBuffer()))).toBe(sha256(good));
  // The source put back as recorded: the audit finds nothing left over.
  await s3.send(new PutObjectCommand({ Bucket: stack.config.S3_BUCKET, Key: badKey, Body: bad }));
  const report = await audit(stack.runtime.pool, stack.runtime.store, { keyRetentionSeconds: 3600 });
  expect(report.violations).toEqual([]);
});
