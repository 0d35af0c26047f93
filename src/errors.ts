// The one catalogue of errors Oncely answers with. Each entry has a stable snake_case
// code, an HTTP status and a title; code throws `problem(code, detail)` and the single
// error handler renders RFC 9457 problem+json. Anything not from here is a logged 500. A
// wing declares its own codes in its folder (problems.ts); they join the catalogue here.
import { joined, wingProblems } from './wings-vocabulary';

const houseProblems = {
  unauthorized: { status: 401, title: 'Missing or invalid API key' },
  insufficient_scope: { status: 403, title: 'The credential does not allow this request' },
  type_not_allowed: { status: 415, title: 'The upload token does not allow this type' },
  token_exhausted: { status: 403, title: 'The upload token has no uploads left' },
  pipeline_not_allowed: { status: 403, title: 'The upload token does not allow this pipeline' },
  metadata_not_allowed: { status: 403, title: 'The upload token fixes this metadata key to another value' },
  storage_target_not_allowed: { status: 403, title: 'The upload token pins another storage target' },
  not_found: { status: 404, title: 'Not found' },
  payload_encryption_off: { status: 404, title: 'Payload encryption is off' },
  idempotency_key_required: { status: 400, title: 'Idempotency-Key header is required' },
  idempotency_key_invalid: { status: 400, title: 'Idempotency-Key header is invalid' },
  idempotency_key_reuse: { status: 422, title: 'Idempotency-Key was used with a different request' },
  idempotency_key_expired: { status: 422, title: 'Idempotency-Key has expired' },
  idempotency_in_progress: { status: 409, title: 'A request with this Idempotency-Key is in progress' },
  content_length_required: { status: 411, title: 'Content-Length header is required' },
  payload_too_large: { status: 413, title: 'Request body is larger than the allowed maximum' },
  checksum_invalid: { status: 400, title: 'X-File-Sha256 must be 64 hexadecimal characters' },
  checksum_mismatch: { status: 400, title: 'File content does not match X-File-Sha256' },
  body_incomplete: { status: 400, title: 'Request body ended before Content-Length bytes' },
  header_invalid: { status: 400, title: 'A request header is invalid' },
  malformed_request: { status: 400, title: 'Malformed HTTP request' },
  request_timeout: { status: 408, title: 'Request was not received in time' },
  headers_too_large: { status: 431, title: 'Request headers are too large' },
  body_invalid: { status: 400, title: 'Request body is invalid' },
  webhook_url_invalid: { status: 400, title: 'Webhook URL is not allowed' },
  query_invalid: { status: 400, title: 'A query parameter is invalid' },
  value_out_of_range: { status: 400, title: 'A value in the request is out of the range the service stores' },
  upload_failed: { status: 503, title: 'Upload could not be completed', retryAfter: 2 },
  tus_version_unsupported: { status: 412, title: 'Tus-Resumable version is not supported' },
  upload_offset_mismatch: { status: 409, title: 'Upload-Offset does not match the upload' },
  upload_locked: { status: 423, title: 'Another request is writing to this upload', retryAfter: 1 },
  upload_checksum_mismatch: { status: 460, title: 'Upload-Checksum does not match the bytes sent' },
  checksum_algorithm_unsupported: { status: 400, title: 'Upload-Checksum algorithm is not supported' },
  media_type_unsupported: { status: 415, title: 'Request Content-Type is not supported here' },
  upload_committed: { status: 409, title: 'The upload is committed and cannot be terminated' },
  stored_bytes_lost: {
    status: 409,
    title: 'The bytes stored for this upload are not the ones acknowledged; terminate it and upload again',
  },
  mismatching_upload_offset: {
    status: 409,
    title: 'offset from request does not match offset of resource',
    type: 'https://iana.org/assignments/http-problem-types#mismatching-upload-offset',
  },
  inconsistent_upload_length: {
    status: 400,
    title: 'inconsistent length values for upload',
    type: 'https://iana.org/assignments/http-problem-types#inconsistent-upload-length',
  },
  interop_version_unsupported: { status: 400, title: 'Upload-Draft-Interop-Version is not served' },
  content_digest_mismatch: { status: 400, title: 'The body does not match its Content-Digest' },
  form_invalid: { status: 400, title: 'The multipart/form-data body is not a valid upload form' },
  direct_upload_incomplete: { status: 409, title: 'The direct upload has not been sent to the store in full yet' },
  direct_upload_unsupported: { status: 501, title: 'This store takes no uploads straight from clients in this mode' },
  signature_invalid: { status: 403, title: 'The signed URL is invalid or has expired' },
  upload_deleted: { status: 410, title: 'The upload has been deleted' },
  legal_hold: { status: 409, title: 'The upload is under a legal hold and cannot be deleted' },
  storage_target_in_use: { status: 409, title: 'Uploads or sessions still live on this storage target' },
  storage_target_name_taken: { status: 409, title: 'The tenant already has a storage target with this name' },
  storage_migration_running: { status: 409, title: 'A storage migration from this source is running' },
  storage_migration_ended: { status: 409, title: 'The storage migration has ended' },
  record_version_required: { status: 428, title: "Send If-Match with the record's version (its ETag)" },
  record_version_stale: { status: 412, title: 'The record has changed since the version in If-Match' },
  upload_gated: { status: 423, title: 'The upload is held until its pipeline gates pass', retryAfter: 5 },
  upload_rejected: { status: 409, title: 'The upload was rejected by its pipeline' },
  step_not_waiting: { status: 409, title: 'The step is not waiting for a decision' },
  range_not_satisfiable: { status: 416, title: 'The requested range starts past the end of the file' },
  quota_exceeded: { status: 409, title: 'Tenant quota reached' },
  byte_quota_exceeded: { status: 413, title: "The upload would pass one of the tenant's byte quotas" },
  too_many_uploads: { status: 429, title: 'Too many uploads in flight for this tenant', retryAfter: 1 },
  too_many_sessions: { status: 429, title: 'Too many open upload sessions for this tenant', retryAfter: 10 },
  upgrade_required: { status: 426, title: 'This route is a WebSocket: connect with Upgrade: websocket' },
  pipeline_unknown: { status: 422, title: 'The upload names a pipeline the tenant has not declared' },
  storage_target_unknown: { status: 422, title: 'The upload names a storage target the tenant has not registered' },
  residency_mismatch: { status: 422, title: "The storage target's residency is not the one the tenant requires" },
  storage_target_refused: { status: 422, title: 'The storage target failed its proof' },
  upload_forbidden: { status: 403, title: "The pipeline's validation hook refused the upload" },
  upload_refused: { status: 422, title: "The pipeline's validation hook refused the upload" },
  validation_unavailable: { status: 503, title: "The pipeline's validation hook could not be asked", retryAfter: 5 },
  content_type_mismatch: { status: 415, title: 'File content does not match its Content-Type' },
  image_spec_invalid: { status: 400, title: 'The image spec is not one Oncely can render' },
  transform_not_allowed: { status: 403, title: 'The tenant serves only its presets and signed image URLs' },
  not_an_image: { status: 415, title: 'The upload is not an image Oncely transforms' },
  image_unrenderable: { status: 422, title: 'The image cannot give this variant' },
  image_render_failed: { status: 503, title: 'The variant could not be rendered', retryAfter: 5 },
  tenant_deleted: { status: 410, title: 'The tenant has been deleted' },
  too_many_image_variants: { status: 409, title: 'The upload already has as many variants as allowed' },
  too_many_renders: { status: 429, title: 'Too many image renders under way for this tenant', retryAfter: 2 },
  database_unavailable: { status: 503, title: 'Database is unavailable', retryAfter: 5 },
  storage_unavailable: { status: 503, title: 'Object storage is unavailable', retryAfter: 5 },
  temporal_unavailable: { status: 503, title: 'Workflow service is unavailable', retryAfter: 5 },
  shutting_down: { status: 503, title: 'The instance is stopping', retryAfter: 1 },
  internal_error: { status: 500, title: 'Internal server error' },
} as const;

type CatalogueEntry = { status: number; title: string; retryAfter?: number; type?: string };

/** The house's codes and each wing's (src/wings-vocabulary.ts); a code is declared once. */
export const catalogue = joined(houseProblems, wingProblems) satisfies Record<string, CatalogueEntry>;

export type ErrorCode = keyof typeof catalogue;

export class Problem extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  readonly retryAfter: number | undefined;
  readonly extra: Record<string, unknown>;
  /** Response headers the answer needs beyond Retry-After (e.g. `connection: close`). */
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    detail?: string,
    opts: { cause?: unknown; retryAfter?: number; extra?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    const entry = catalogue[code];
    super(detail ?? entry.title, { cause: opts.cause });
    this.name = 'Problem';
    this.code = code;
    this.status = entry.status;
    this.title = entry.title;
    this.detail = detail ?? entry.title;
    this.retryAfter = opts.retryAfter ?? ('retryAfter' in entry ? entry.retryAfter : undefined);
    this.extra = opts.extra ?? {};
    this.headers = opts.headers ?? {};
  }

  /** The RFC 9457 body, with the `error` and `message` extension members. */
  toJSON(): Record<string, unknown> {
    return {
      type: problemType(this.code),
      title: this.title,
      status: this.status,
      detail: this.detail,
      error: this.code,
      message: this.detail,
      ...this.extra,
    };
  }
}

/** A problem's type URI: the registered one where a standard defines it (IANA's problem types), else Oncely's. */
export function problemType(code: ErrorCode): string {
  const entry = catalogue[code];
  return 'type' in entry ? entry.type : `https://oncely.dev/problems/${code.replaceAll('_', '-')}`;
}

export function problem(code: ErrorCode, detail?: string, opts?: ConstructorParameters<typeof Problem>[2]): Problem {
  return new Problem(code, detail, opts);
}

/**
 * A database error caused by the request's values rather than by the database: a data
 * exception (SQLSTATE class 22: out of range, malformed date, bad encoding) or a CHECK
 * constraint the value breaks. Such a request is bad input (400): retrying it cannot help.
 */
export function inputRefusedByDatabase(err: unknown): Problem | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return undefined;
  if (!code.startsWith('22') && code !== '23514') return undefined;
  return problem(
    'value_out_of_range',
    'A value in the request is outside what the service can store or compare; check dates, numbers and cursors.',
    {
      cause: err,
    },
  );
}

/** SQLSTATE of migration 027's trigger: a row for a tenant whose deletion has begun. */
const TENANT_CLOSED_SQLSTATE = 'ONC01';

/** Whether the database refused a write because the tenant is deleted (or being deleted), here or beneath (a codec's key). */
export function isTenantClosed(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++)
    if ((e as { code?: unknown }).code === TENANT_CLOSED_SQLSTATE) return true;
  return false;
}

/**
 * Runs one call to an infrastructure dependency; any failure that is not already a
 * catalogue error becomes that dependency's 503, so a client retries with the same key
 * (bad input the database refused is a 400 instead: inputRefusedByDatabase).
 */
export async function dependency<T>(
  code: 'database_unavailable' | 'storage_unavailable' | 'temporal_unavailable',
  fn: () => Promise<T>,
): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof Problem) throw err;
    if (isTenantClosed(err)) throw problem('tenant_deleted', 'This tenant has been deleted.', { cause: err });
    if (code === 'database_unavailable') {
      const refused = inputRefusedByDatabase(err);
      if (refused) throw refused;
    }
    throw problem(code, undefined, { cause: err });
  }
}
