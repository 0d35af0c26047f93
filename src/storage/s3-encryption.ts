// Server-side encryption the S3 store asks for on every object it writes (S3_SSE,
// S3_SSE_KMS_KEY_ID): the parameters of a PutObject or a CreateMultipartUpload (the parts of
// a multipart upload inherit it), and the headers a presigned PUT must carry, signed.
import type { ServerSideEncryption } from '@aws-sdk/client-s3';

export interface S3Encryption {
  /** `AES256` (SSE-S3) or `aws:kms` (SSE-KMS). */
  sse: 'AES256' | 'aws:kms';
  /** The KMS key of SSE-KMS; unset: the bucket's default (aws/s3). */
  kmsKeyId?: string;
}

/** The write parameters (none without encryption). */
export function sseParams(e: S3Encryption | undefined): { ServerSideEncryption?: ServerSideEncryption; SSEKMSKeyId?: string } {
  if (!e) return {};
  return { ServerSideEncryption: e.sse, ...(e.sse === 'aws:kms' && e.kmsKeyId ? { SSEKMSKeyId: e.kmsKeyId } : {}) };
}

/** The same as request headers: a presigned PUT signs them and its client must send them. */
export function sseHeaders(e: S3Encryption | undefined): Record<string, string> {
  if (!e) return {};
  return {
    'x-amz-server-side-encryption': e.sse,
    ...(e.sse === 'aws:kms' && e.kmsKeyId ? { 'x-amz-server-side-encryption-aws-kms-key-id': e.kmsKeyId } : {}),
  };
}
