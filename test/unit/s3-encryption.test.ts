// S3_SSE: every write the S3 store makes asks for server-side encryption — one streamed PUT,
// lib-storage's multipart (its CreateMultipartUpload; the parts inherit it), the parts of a
// resumable or import, and a direct upload's presigned PUT (signed: its client must send the
// headers) or checked multipart. Checked on the wire against a recording S3 stand-in.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { S3Store } from '../../src/storage/s3-store';
import type { S3Encryption } from '../../src/storage/s3-encryption';
import { randomBytes, randomUUID } from 'node:crypto';
import { SecretBox, storageTargetSecretContext } from '../../src/secret-box';
import { targetStore } from '../../src/placement/directory';
import type { StorageTargetRow } from '../../src/db/queries/storage-targets';

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}
let server: Server;
let endpoint: string;
const seen: Seen[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers });
      const url = new URL(req.url!, 'http://s3');
      const xml = (body: string) => res.writeHead(200, { 'content-type': 'application/xml' }).end(body);
      if (req.method === 'POST' && url.searchParams.has('uploads'))
        return xml(
          '<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>up-1</UploadId></InitiateMultipartUploadResult>',
        );
      if (req.method === 'POST' && url.searchParams.has('uploadId'))
        return xml('<CompleteMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><ETag>"done"</ETag></CompleteMultipartUploadResult>');
      res.writeHead(200, { etag: '"e"' }).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
beforeEach(() => void seen.splice(0));

const storeWith = (encryption?: S3Encryption) =>
  new S3Store({
    endpoint,
    bucket: 'b',
    region: 'us-east-1',
    accessKeyId: 'id',
    secretAccessKey: 'secret',
    forcePathStyle: true,
    partSizeBytes: 5 * 1024 * 1024,
    queueSize: 1,
    singlePutMaxBytes: 1024 * 1024,
    encryption,
  });
const sse = (s: Seen) => [s.headers['x-amz-server-side-encryption'], s.headers['x-amz-server-side-encryption-aws-kms-key-id']];
const isPart = (s: Seen) => new URL(s.url, 'http://s3').searchParams.has('partNumber');
const writes = () => seen.filter((s) => s.method === 'PUT' || (s.method === 'POST' && s.url.includes('uploads')));

it('asks for SSE-KMS with its key on every write that creates an object; parts inherit it', async () => {
  const store = storeWith({ sse: 'aws:kms', kmsKeyId: 'key-1' });
  await store.put('small', Readable.from([Buffer.alloc(1000)]), { contentType: 'text/plain', contentLength: 1000 });
  // Unknown length: lib-storage's multipart upload.
  await store.put('large', Readable.from([Buffer.alloc(6 * 1024 * 1024)]), { contentType: 'text/plain' });
  const uploadId = await store.beginParts('resumable', 'text/plain');
  await store.putPart('resumable', uploadId, 1, Buffer.alloc(10));
  const creating = writes().filter((s) => !isPart(s));
  expect(creating.map((s) => `${s.method} ${s.url.split('?')[0]}`)).toEqual(['PUT /b/small', 'POST /b/large', 'POST /b/resumable']);
  for (const s of creating) expect(sse(s), s.url).toEqual(['aws:kms', 'key-1']);
  const parts = writes().filter(isPart);
  expect(parts.length).toBeGreaterThanOrEqual(3);
  for (const s of parts) expect(sse(s), s.url).toEqual([undefined, undefined]);

  // A direct upload's presigned PUT signs the headers, and the plan tells the client to send them.
  const put = await store.presigner.presignPut('direct', {
    bytes: 5,
    sha256Base64: 'A'.repeat(43) + '=',
    contentType: 'text/plain',
    expiresSeconds: 60,
  });
  expect(put.headers).toMatchObject({ 'x-amz-server-side-encryption': 'aws:kms', 'x-amz-server-side-encryption-aws-kms-key-id': 'key-1' });
  const signedHeaders = new URL(put.url).searchParams.get('X-Amz-SignedHeaders')!.split(';');
  expect(signedHeaders).toEqual(expect.arrayContaining(['x-amz-server-side-encryption', 'x-amz-server-side-encryption-aws-kms-key-id']));
  await store.presigner.beginCheckedParts('direct-large', 'text/plain');
  expect(sse(seen.at(-1)!)).toEqual(['aws:kms', 'key-1']);
});

it('asks for SSE-S3 without a key id, and for nothing when S3_SSE is unset', async () => {
  const aes = storeWith({ sse: 'AES256', kmsKeyId: 'ignored' });
  await aes.put('small', Readable.from([Buffer.alloc(10)]), { contentType: 'text/plain', contentLength: 10 });
  expect(sse(seen.at(-1)!)).toEqual(['AES256', undefined]);
  seen.splice(0);
  const plain = storeWith();
  await plain.put('small', Readable.from([Buffer.alloc(10)]), { contentType: 'text/plain', contentLength: 10 });
  await plain.beginParts('p', 'text/plain');
  for (const s of seen) expect(sse(s)).toEqual([undefined, undefined]);
  const put = await plain.presigner.presignPut('direct', {
    bytes: 5,
    sha256Base64: 'A'.repeat(43) + '=',
    contentType: 'text/plain',
    expiresSeconds: 60,
  });
  expect(Object.keys(put.headers).some((h) => h.startsWith('x-amz-server-side'))).toBe(false);
});

it("a storage target's store asks for its own encryption, else the instance's", async () => {
  const box = new SecretBox(randomBytes(32));
  const row = (encryption: S3Encryption | null): StorageTargetRow => ({
    id: randomUUID(),
    tenant_id: randomUUID(),
    name: 'target',
    endpoint,
    bucket: 'b',
    region: 'us-east-1',
    prefix: '',
    force_path_style: true,
    access_key_id: 'id',
    secret_access_key: '',
    residency: null,
    encryption,
    version: 1,
    created_at: new Date(),
    updated_at: new Date(),
    deleted_at: null,
  });
  const sealed = (r: StorageTargetRow) => ({ ...r, secret_access_key: box.seal('secret', storageTargetSecretContext(r.id)) });
  const settings = { partSizeBytes: 5 * 1024 * 1024, queueSize: 1, singlePutMaxBytes: 1024 * 1024, encryption: { sse: 'AES256' as const } };
  for (const [encryption, expected] of [
    [{ sse: 'aws:kms', kmsKeyId: 'target-key' }, ['aws:kms', 'target-key']],
    [null, ['AES256', undefined]],
  ] as const) {
    seen.splice(0);
    const store = targetStore(sealed(row(encryption)), box, settings);
    await store.put('k', Readable.from([Buffer.alloc(10)]), { contentType: 'text/plain', contentLength: 10 });
    expect(sse(seen.at(-1)!)).toEqual(expected);
    store.destroy();
  }
});
