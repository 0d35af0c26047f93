// What an import asks for, and the upload request it makes: the fingerprint every copy of
// the same body shares under one key (a body at the door, an item of a batch).
import { createHash } from 'node:crypto';
import { FILE_NAME_PATTERN } from '../upload/file-name';
import { fingerprint } from '../upload/fingerprint';
import type { DeclaredUpload, UploadRequest } from '../upload/types';
import { IMPORT_ROUTE } from '../modes';
import type { S3Access } from './s3-source';

/** An import's body (POST /v1/imports; an item of a batch names fewer of them). */
export interface ImportBody {
  url: string;
  fileName?: string;
  sha256?: string;
  contentType?: string;
  pipeline?: string;
  expiresAt?: string;
  storageTarget?: string;
  headers?: Record<string, string>;
  /** An item of a batch with an S3 source: what signs each read (never part of a request at the door). */
  s3?: S3Access;
}

/** The name an import without one gets: the URL path's last segment, when it makes a file name. */
export function nameFromUrl(url: URL): string | null {
  const last = url.pathname.split('/').at(-1) ?? '';
  let name: string;
  try {
    name = decodeURIComponent(last);
  } catch {
    return null;
  }
  return FILE_NAME_PATTERN.test(name) ? name : null;
}

/** A secret's stand-in in a fingerprint. */
const hashOf = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex');

/** What identifies an import's body: every field, the headers and an S3 source's access by their hash (they are secret). */
export function importRequest(upload: DeclaredUpload, body: ImportBody): UploadRequest {
  const headers = body.headers
    ? hashOf(
        Object.entries(body.headers)
          .map(([k, v]) => [k.toLowerCase(), v])
          .sort(),
      )
    : null;
  const s3 = body.s3 ? hashOf([body.s3.region, body.s3.accessKeyId, body.s3.secretAccessKey, body.s3.sessionToken ?? null]) : undefined;
  return {
    tenantId: upload.tenantId,
    idempotencyKey: upload.key,
    fingerprint: fingerprint({
      method: 'POST',
      route: IMPORT_ROUTE,
      tenantId: upload.tenantId,
      contentLength: 0,
      contentType: body.contentType ?? '',
      sha256: upload.sha256,
      fileName: upload.fileName,
      extra: JSON.stringify({ url: body.url, headers, ...(s3 ? { s3 } : {}) }),
      expiresAt: upload.expiresAt,
      pipeline: upload.pipeline,
      labels: upload.labels,
      storageTarget: upload.storageTarget,
    }),
    contentType: upload.contentType,
    fileName: upload.fileName,
    declaredBytes: 0,
    declaredSha256: upload.sha256,
    ...(upload.expiresAt ? { expiresAt: upload.expiresAt } : {}),
    ...(upload.pipeline ? { pipeline: upload.pipeline } : {}),
    ...(upload.labels ? { labels: upload.labels } : {}),
    ...(upload.storageTarget ? { storageTarget: upload.storageTarget } : {}),
    ...(upload.grant ? { grant: upload.grant } : {}),
    mode: 'import',
  };
}
