// The request a one-request upload (POST /v1/uploads with a raw body) makes: what is known
// before the body is read, with the fingerprint every copy of the same request shares.
import { UPLOAD_ROUTE } from '../db/queries/idempotency-keys';
import { fingerprint } from './fingerprint';
import type { DeclaredUpload, UploadRequest } from './types';

export function oneRequestUpload(
  r: Pick<
    DeclaredUpload,
    'tenantId' | 'key' | 'contentType' | 'sha256' | 'fileName' | 'expiresAt' | 'pipeline' | 'labels' | 'storageTarget' | 'grant'
  > & {
    bytes: number;
  },
): UploadRequest {
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
      labels: r.labels,
      storageTarget: r.storageTarget,
    }),
    contentType: r.contentType,
    fileName: r.fileName,
    declaredBytes: r.bytes,
    declaredSha256: r.sha256,
    ...(r.expiresAt ? { expiresAt: r.expiresAt } : {}),
    ...(r.pipeline ? { pipeline: r.pipeline } : {}),
    ...(r.labels ? { labels: r.labels } : {}),
    ...(r.storageTarget ? { storageTarget: r.storageTarget } : {}),
    ...(r.grant ? { grant: r.grant } : {}),
    mode: 'upload',
  };
}
