// The request a one-request upload (POST /v1/uploads with a raw body) makes: what is known
// before the body is read, with the fingerprint every copy of the same request shares.
import { UPLOAD_ROUTE } from '../db/queries/idempotency-keys';
import { fingerprint } from './fingerprint';
import type { UploadRequest } from './types';

export function oneRequestUpload(r: {
  tenantId: string;
  key: string;
  bytes: number;
  contentType: string;
  sha256: string | null;
  fileName: string | null;
  expiresAt?: string;
  pipeline?: string;
}): UploadRequest {
  return {
    tenantId: r.tenantId,
    idempotencyKey: r.key,
    fingerprint: fingerprint({
      method: 'POST',
      route: UPLOAD_ROUTE,
      tenantId: r.tenantId,
      contentLength: r.bytes,
      contentType: r.contentType,
      sha256: r.sha256,
      fileName: r.fileName,
      expiresAt: r.expiresAt,
      pipeline: r.pipeline,
    }),
    contentType: r.contentType,
    fileName: r.fileName,
    declaredBytes: r.bytes,
    declaredSha256: r.sha256,
    ...(r.expiresAt ? { expiresAt: r.expiresAt } : {}),
    ...(r.pipeline ? { pipeline: r.pipeline } : {}),
  };
}
