// What the two upload baselines share: the S3 client from the bench's environment, and the
// body streamed to a staged object with its size and SHA-256 taken on the way.
import { createHash, randomUUID } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import { S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';

export const bucket = process.env.S3_BUCKET!;
export const s3 = new S3Client({
  endpoint: process.env.S3_ENDPOINT,
  region: 'us-east-1',
  forcePathStyle: true,
  credentials: { accessKeyId: process.env.S3_ACCESS_KEY_ID!, secretAccessKey: process.env.S3_SECRET_ACCESS_KEY! },
});

/** Streams `body` to a new object under `prefix`; its key, size and SHA-256. */
export async function stageBody(body: Readable, prefix: string): Promise<{ storageKey: string; bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  let bytes = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _e, cb) {
      hash.update(chunk);
      bytes += chunk.length;
      cb(null, chunk);
    },
  });
  const storageKey = `${prefix}/${randomUUID()}`;
  await new Upload({ client: s3, params: { Bucket: bucket, Key: storageKey, Body: body.pipe(meter) } }).done();
  return { storageKey, bytes, sha256: hash.digest('hex') };
}
