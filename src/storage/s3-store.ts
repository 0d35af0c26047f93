// Object store over S3 or any S3-compatible server (versitygw in tests). With
// s3-presigner.ts and s3-encryption.ts, the only files that import @aws-sdk/*. A body of known length up to `singlePutMaxBytes` streams
// straight into one PUT (no part buffers: memory stays flat whatever the size); longer or
// unknown-length bodies go through lib-storage's multipart upload (partSize x queueSize).
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  GetObjectLegalHoldCommand,
  GetObjectLockConfigurationCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  PutObjectLegalHoldCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { Readable } from 'node:stream';
import { S3Presigner } from './s3-presigner';
import { sseParams, type S3Encryption } from './s3-encryption';
import type { ObjectPresigner, ObjectStore, PutOptions, StoredObject } from './store';
import { traceS3Calls } from '../telemetry/s3';

export interface S3StoreOptions {
  endpoint?: string;
  bucket: string;
  region: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle: boolean;
  partSizeBytes: number;
  queueSize: number;
  /** Bodies of known length up to this go in one streamed PUT (S3 allows up to 5 GiB). */
  singlePutMaxBytes?: number;
  /** The endpoint clients reach for direct uploads (signed URLs name it); default `endpoint`. */
  publicEndpoint?: string;
  /** Server-side encryption asked for on every write (S3_SSE). */
  encryption?: S3Encryption;
}

const S3_SINGLE_PUT_LIMIT = 5 * 1024 ** 3;

function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NotFound' || e?.name === 'NoSuchKey' || e?.$metadata?.httpStatusCode === 404;
}

export class S3Store implements ObjectStore {
  readonly kind = 's3' as const;
  private readonly client: S3Client;
  /** For streamed PUTs: a consumed stream cannot be re-sent, so no SDK retries. */
  private readonly streamingClient: S3Client;
  private readonly publicClient: S3Client;
  readonly presigner: ObjectPresigner;

  constructor(private readonly opts: S3StoreOptions) {
    const config = {
      endpoint: opts.endpoint,
      region: opts.region,
      forcePathStyle: opts.forcePathStyle,
      credentials:
        opts.accessKeyId && opts.secretAccessKey ? { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey } : undefined,
      requestChecksumCalculation: 'WHEN_REQUIRED' as const,
      responseChecksumValidation: 'WHEN_REQUIRED' as const,
    };
    // The upload path has its own retry story (the client retries with the same key);
    // a couple of SDK retries smooth over blips without stalling a 503 for long.
    this.client = traceS3Calls(new S3Client({ ...config, maxAttempts: 3 }));
    this.streamingClient = traceS3Calls(new S3Client({ ...config, maxAttempts: 1 }));
    this.publicClient = opts.publicEndpoint ? new S3Client({ ...config, endpoint: opts.publicEndpoint }) : this.client;
    this.presigner = new S3Presigner(this.publicClient, opts.bucket, opts.encryption);
  }

  async ensureBucket(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.opts.bucket }));
    } catch (err) {
      if (!isNotFound(err)) throw err;
      try {
        await this.client.send(new CreateBucketCommand({ Bucket: this.opts.bucket }));
      } catch (createErr) {
        // Another process (the API and the worker start together) created it in between.
        const name = (createErr as { name?: string }).name;
        if (name === 'BucketAlreadyOwnedByYou') return;
        // "Exists" may mean someone else's bucket: ours only if we can use it.
        if (name === 'BucketAlreadyExists') return void (await this.client.send(new HeadBucketCommand({ Bucket: this.opts.bucket })));
        throw createErr;
      }
    }
  }

  async put(key: string, body: Readable, opts: PutOptions): Promise<void> {
    if (
      opts.contentLength !== undefined &&
      opts.contentLength <= Math.min(this.opts.singlePutMaxBytes ?? S3_SINGLE_PUT_LIMIT, S3_SINGLE_PUT_LIMIT)
    ) {
      return this.putStreamed(key, body, opts.contentLength, opts.contentType);
    }
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.opts.bucket, Key: key, Body: body, ContentType: opts.contentType, ...sseParams(this.opts.encryption) },
      partSize: this.opts.partSizeBytes,
      queueSize: this.opts.queueSize,
      leavePartsOnError: false,
    });
    // A failing source stream must fail the upload (and abort its multipart) promptly.
    const onError = () => void upload.abort().catch(() => {}); // the put fails with the stream's error either way
    body.once('error', onError);
    try {
      await upload.done();
    } finally {
      body.off('error', onError);
    }
  }

  private async putStreamed(key: string, body: Readable, contentLength: number, contentType: string): Promise<void> {
    const command = new PutObjectCommand({
      Bucket: this.opts.bucket,
      Key: key,
      Body: body,
      ContentLength: contentLength,
      ContentType: contentType,
      ...sseParams(this.opts.encryption),
    });
    await this.sendStreamed(body, (abortSignal) => this.streamingClient.send(command, { abortSignal }));
  }

  /**
   * Sends a request whose body is a stream (unsigned, UNSIGNED-PAYLOAD, and on the client the
   * SDK never retries), aborted when the stream fails, so the store sees the request short and keeps
   * nothing of it; the stream's own error is the one thrown.
   */
  private async sendStreamed<T>(body: Readable, send: (abortSignal: AbortSignal) => Promise<T>): Promise<T> {
    const abort = new AbortController();
    let streamError: unknown;
    const onError = (err: unknown) => {
      streamError = err;
      abort.abort(err);
    };
    body.once('error', onError);
    try {
      return await send(abort.signal);
    } catch (err) {
      throw streamError ?? err;
    } finally {
      body.off('error', onError);
    }
  }

  async get(key: string, range?: { start: number; end: number }): Promise<Readable | undefined> {
    try {
      const Range = range && `bytes=${range.start}-${range.end}`;
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.opts.bucket, Key: key, Range }));
      return out.Body as Readable;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async head(key: string): Promise<StoredObject | undefined> {
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.opts.bucket, Key: key }));
      return { key, bytes: Number(out.ContentLength ?? 0), lastModified: out.LastModified ?? new Date(0) };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.opts.bucket, Key: key }));
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  async beginParts(key: string, contentType: string): Promise<string> {
    const res = await this.client.send(
      new CreateMultipartUploadCommand({
        Bucket: this.opts.bucket,
        Key: key,
        ContentType: contentType,
        ...sseParams(this.opts.encryption),
      }),
    );
    return res.UploadId!;
  }

  async putPart(key: string, uploadId: string, partNumber: number, bytes: Buffer): Promise<string> {
    const res = await this.client.send(
      new UploadPartCommand({
        Bucket: this.opts.bucket,
        Key: key,
        UploadId: uploadId,
        PartNumber: partNumber,
        Body: bytes,
        ContentLength: bytes.length,
      }),
    );
    return res.ETag!;
  }

  async putPartStreamed(key: string, uploadId: string, partNumber: number, body: Readable, bytes: number): Promise<string> {
    const command = new UploadPartCommand({
      Bucket: this.opts.bucket,
      Key: key,
      UploadId: uploadId,
      PartNumber: partNumber,
      Body: body,
      ContentLength: bytes,
    });
    return (await this.sendStreamed(body, (abortSignal) => this.streamingClient.send(command, { abortSignal }))).ETag!;
  }

  async completeParts(key: string, uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<void> {
    try {
      await this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.opts.bucket,
          Key: key,
          UploadId: uploadId,
          MultipartUpload: { Parts: parts.map((p) => ({ PartNumber: p.partNumber, ETag: p.etag })) },
        }),
      );
    } catch (err) {
      // Completed by an earlier attempt whose answer was lost: the object is there.
      if ((err as { name?: string }).name === 'NoSuchUpload' && (await this.head(key))) return;
      throw err;
    }
  }

  async abortParts(key: string, uploadId: string): Promise<void> {
    try {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.opts.bucket, Key: key, UploadId: uploadId }));
    } catch (err) {
      if ((err as { name?: string }).name !== 'NoSuchUpload' && !isNotFound(err)) throw err;
    }
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.opts.bucket, Prefix: prefix, ContinuationToken: token }));
      for (const o of page.Contents ?? []) {
        if (o.Key) yield { key: o.Key, bytes: Number(o.Size ?? 0), lastModified: o.LastModified ?? new Date(0) };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async abortStaleMultipartUploads(olderThan: Date, key?: string): Promise<number> {
    let aborted = 0;
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    do {
      const page = await this.client.send(
        new ListMultipartUploadsCommand({ Bucket: this.opts.bucket, Prefix: key, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }),
      );
      for (const u of page.Uploads ?? []) {
        if (u.Key && u.UploadId && u.Initiated && u.Initiated < olderThan && (key === undefined || u.Key === key)) {
          await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.opts.bucket, Key: u.Key, UploadId: u.UploadId }));
          aborted++;
        }
      }
      keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
      uploadIdMarker = page.IsTruncated ? page.NextUploadIdMarker : undefined;
    } while (keyMarker);
    return aborted;
  }

  async probe(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.opts.bucket }));
  }

  /** Whether `other` reaches the same S3 service with the same credentials (so one can copy from the other's bucket). */
  sameServiceAs(other: S3Store): boolean {
    const a = this.opts;
    const b = other.opts;
    return (
      a.endpoint === b.endpoint &&
      a.region === b.region &&
      a.forcePathStyle === b.forcePathStyle &&
      a.accessKeyId === b.accessKeyId &&
      a.secretAccessKey === b.secretAccessKey
    );
  }

  /** Copies an object of `source`'s bucket here, inside the service (CopyObject: at most 5 GiB). */
  async copyFrom(source: S3Store, fromKey: string, toKey: string): Promise<void> {
    await this.client.send(
      new CopyObjectCommand({
        Bucket: this.opts.bucket,
        Key: toKey,
        CopySource: `${source.opts.bucket}/${encodeURIComponent(fromKey).replaceAll('%2F', '/')}`,
        ...sseParams(this.opts.encryption),
      }),
    );
  }

  /** Whether the bucket has Object Lock (asked once; a failed ask is asked again). */
  private objectLock?: Promise<boolean>;

  private hasObjectLock(): Promise<boolean> {
    this.objectLock ??= this.client.send(new GetObjectLockConfigurationCommand({ Bucket: this.opts.bucket })).then(
      (res) => res.ObjectLockConfiguration?.ObjectLockEnabled === 'Enabled',
      (err: unknown) => {
        if ((err as { name?: string }).name === 'ObjectLockConfigurationNotFoundError') return false;
        this.objectLock = undefined;
        throw err;
      },
    );
    return this.objectLock;
  }

  holdsObjects(): Promise<boolean> {
    return this.hasObjectLock();
  }

  async legalHoldOf(key: string): Promise<boolean | undefined> {
    if (!(await this.hasObjectLock())) return undefined;
    try {
      const res = await this.client.send(new GetObjectLegalHoldCommand({ Bucket: this.opts.bucket, Key: key }));
      return res.LegalHold?.Status === 'ON';
    } catch (err) {
      if (isNotFound(err)) return undefined;
      // S3 answers an object never held with NoSuchObjectLockConfiguration.
      if ((err as { name?: string }).name === 'NoSuchObjectLockConfiguration') return false;
      throw err;
    }
  }

  async setLegalHold(key: string, on: boolean): Promise<boolean> {
    if (!(await this.hasObjectLock())) return false;
    try {
      await this.client.send(
        new PutObjectLegalHoldCommand({ Bucket: this.opts.bucket, Key: key, LegalHold: { Status: on ? 'ON' : 'OFF' } }),
      );
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  destroy(): void {
    this.client.destroy();
    this.streamingClient.destroy();
    if (this.publicClient !== this.client) this.publicClient.destroy();
  }
}
