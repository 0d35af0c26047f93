// Signed requests a client sends to S3 itself (direct uploads, download URLs). The signature covers the
// object key, the length and the SHA-256 header, so the client cannot pick another key or
// tenant prefix, and the store refuses any other bytes (BadDigest). Completion is ours:
// the parts are listed and completed server-side, only if no object exists yet.
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { ObjectPresigner, SignedRequest } from './store';
import { sseHeaders, sseParams, type S3Encryption } from './s3-encryption';

// x-amz-* headers are moved into the query string unless named here; these must travel as
// signed headers, so the store checks the bytes against them.
const SIGNED_HEADERS = new Set([
  'x-amz-checksum-sha256',
  'content-length',
  'content-type',
  'x-amz-server-side-encryption',
  'x-amz-server-side-encryption-aws-kms-key-id',
]);

export class S3Presigner implements ObjectPresigner {
  /** `client` is configured with the endpoint clients reach (S3_PUBLIC_ENDPOINT). */
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly encryption?: S3Encryption,
  ) {}

  async presignPut(
    key: string,
    o: { bytes: number; sha256Base64: string; contentType: string; expiresSeconds: number },
  ): Promise<SignedRequest> {
    const command = new PutObjectCommand({
      Bucket: this.bucket,
      Key: key,
      ContentLength: o.bytes,
      ContentType: o.contentType,
      ChecksumSHA256: o.sha256Base64,
      ...sseParams(this.encryption),
    });
    const url = await getSignedUrl(this.client, command, checkedSigning(o.expiresSeconds));
    return signed(url, { ...checkedHeaders(o.bytes, o.contentType, o.sha256Base64), ...sseHeaders(this.encryption) }, o.expiresSeconds);
  }

  async presignGet(key: string, o: { contentDisposition: string; contentType: string; expiresSeconds: number }): Promise<SignedRequest> {
    const command = new GetObjectCommand({
      Bucket: this.bucket,
      Key: key,
      ResponseContentDisposition: o.contentDisposition,
      ResponseContentType: o.contentType,
    });
    const url = await getSignedUrl(this.client, command, { expiresIn: o.expiresSeconds });
    return signed(url, {}, o.expiresSeconds, 'GET');
  }

  async beginCheckedParts(key: string, contentType: string): Promise<string> {
    const res = await this.client.send(
      new CreateMultipartUploadCommand({
        Bucket: this.bucket,
        Key: key,
        ContentType: contentType,
        ChecksumAlgorithm: 'SHA256',
        ...sseParams(this.encryption),
      }),
    );
    return res.UploadId!;
  }

  async presignPart(
    key: string,
    uploadId: string,
    partNumber: number,
    o: { bytes?: number; sha256Base64?: string; expiresSeconds: number },
  ): Promise<SignedRequest> {
    const checked = o.bytes !== undefined && o.sha256Base64 !== undefined;
    const command = new UploadPartCommand({
      Bucket: this.bucket,
      Key: key,
      UploadId: uploadId,
      PartNumber: partNumber,
      ...(checked ? { ContentLength: o.bytes, ChecksumSHA256: o.sha256Base64 } : {}),
    });
    if (!checked) {
      // An unchecked part (Uppy's companion protocol sends none): only the key, upload and part are signed.
      const url = await getSignedUrl(this.client, command, { expiresIn: o.expiresSeconds, unsignableHeaders: new Set(['content-type']) });
      return signed(url, {}, o.expiresSeconds);
    }
    // The SDK gives a part request the binary media type, and it is signed with the rest.
    const url = await getSignedUrl(this.client, command, checkedSigning(o.expiresSeconds));
    return signed(url, checkedHeaders(o.bytes!, 'application/octet-stream', o.sha256Base64!), o.expiresSeconds);
  }

  async listParts(key: string, uploadId: string) {
    const parts: { partNumber: number; etag: string; bytes: number; sha256Base64?: string }[] = [];
    let marker: string | undefined;
    do {
      const page = await this.client.send(
        new ListPartsCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, PartNumberMarker: marker }),
      );
      for (const p of page.Parts ?? [])
        parts.push({ partNumber: p.PartNumber!, etag: p.ETag!, bytes: Number(p.Size ?? 0), sha256Base64: p.ChecksumSHA256 });
      marker = page.IsTruncated ? page.NextPartNumberMarker : undefined;
    } while (marker);
    return parts.sort((a, b) => a.partNumber - b.partNumber);
  }

  async partsUnlessCompleted(key: string, uploadId: string) {
    try {
      return await this.listParts(key, uploadId);
    } catch (err) {
      // Completed by an earlier attempt whose answer was lost: the object is there.
      if ((err as { name?: string }).name === 'NoSuchUpload' && (await this.checksum(key))) return null;
      throw err;
    }
  }

  async completeCheckedParts(
    key: string,
    uploadId: string,
    parts: { partNumber: number; etag: string; sha256Base64?: string }[],
  ): Promise<void> {
    try {
      await this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.bucket,
          Key: key,
          UploadId: uploadId,
          IfNoneMatch: '*',
          MultipartUpload: { Parts: parts.map((p) => ({ PartNumber: p.partNumber, ETag: p.etag, ChecksumSHA256: p.sha256Base64 })) },
        }),
      );
    } catch (err) {
      // Completed by an earlier attempt whose answer was lost: the object is there.
      const name = (err as { name?: string; $metadata?: { httpStatusCode?: number } }).name;
      const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if ((name === 'NoSuchUpload' || status === 412) && (await this.checksum(key))) return;
      throw err;
    }
  }

  async checksum(key: string) {
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key, ChecksumMode: 'ENABLED' }));
      const composite = out.ChecksumType === 'COMPOSITE' || /-\d+$/.test(out.ChecksumSHA256 ?? '');
      return { bytes: Number(out.ContentLength ?? 0), sha256Base64: out.ChecksumSHA256?.replace(/-\d+$/, ''), composite };
    } catch (err) {
      const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404) return undefined;
      throw err;
    }
  }
}

function signed(
  url: string,
  headers: Record<string, string>,
  expiresSeconds: number,
  method: SignedRequest['method'] = 'PUT',
): SignedRequest {
  return { method, url, headers, expiresAt: new Date(Date.now() + expiresSeconds * 1000) };
}

/** Signing that keeps the length, type and SHA-256 as signed headers, so the store checks the bytes against them. */
function checkedSigning(expiresSeconds: number) {
  return { expiresIn: expiresSeconds, unhoistableHeaders: SIGNED_HEADERS, signableHeaders: SIGNED_HEADERS };
}

/** The headers a checked PUT must carry, exactly. */
function checkedHeaders(bytes: number, contentType: string, sha256Base64: string): Record<string, string> {
  return { 'content-length': String(bytes), 'content-type': contentType, 'x-amz-checksum-sha256': sha256Base64 };
}
