// The one intake every door passes a new upload through. A door parses its own protocol into
// `Declared` (what the request says before any byte); the intake applies the key rule's
// checks in one order. Before the key is looked up (they shape the request's fingerprint):
// the server's maximum size, and the pipeline the caller may name. Once the key is known to
// be new: the caller's token is live, the token's declared limits, the pipeline's admission
// (declared, and its validation hook), and a slot among the tenant's uploads in flight on
// this server. A replay passes none of the second half: the key's answer is the caller's.
import type { Context } from 'hono';
import { problem, type ErrorCode, type Problem } from '../errors';
import type { AppEnv } from '../http/env';
import { callerOf, callingToken } from '../http/scopes';
import type { ArrivalMode } from '../modes';
import { assertGrantLive, checkDeclared, grantedLabels, grantedPipeline } from '../tokens/grant';
import type { InFlightUploads } from '../upload/in-flight';
import type { UploadReceiver } from '../upload/receive';
import type { DeclaredUpload } from '../upload/types';

/** What the intake's `admit` can answer about the pipeline and the byte quotas (every door's creation documents them). */
export const ADMISSION_PROBLEMS: ErrorCode[] = [
  'pipeline_unknown',
  'pipeline_not_allowed',
  'metadata_not_allowed',
  'storage_target_unknown',
  'storage_target_not_allowed',
  'residency_mismatch',
  'upload_forbidden',
  'upload_refused',
  'validation_unavailable',
  'byte_quota_exceeded',
];

/** What a door parsed from its request: the upload's own fields, before who sends it. */
export type Declared = Omit<DeclaredUpload, 'tenantId' | 'mode' | 'grant' | 'caller'>;

export interface IntakeDeps {
  receiver: Pick<UploadReceiver, 'admit' | 'release'>;
  inFlight: InFlightUploads;
  /** MAX_UPLOAD_BYTES. */
  maxBytes: number;
}

export class Intake {
  constructor(private readonly deps: IntakeDeps) {}

  get maxBytes(): number {
    return this.deps.maxBytes;
  }

  /**
   * The declared upload under its caller: 413 past the server's maximum (`refusalHeaders`
   * join the refusal: a protocol's own limit fields), then the pipeline the token lets it
   * name (403 pipeline_not_allowed) and the metadata it fixes (403 metadata_not_allowed).
   */
  declare<D extends Declared>(
    c: Context<AppEnv>,
    mode: ArrivalMode,
    declared: D,
    refusalHeaders?: Record<string, string>,
  ): DeclaredUpload & Pick<D, 'bytes' | 'sha256'> {
    if (declared.bytes !== undefined && declared.bytes > this.deps.maxBytes)
      throw fileTooLarge(this.deps.maxBytes, declared.bytes, refusalHeaders);
    const grant = callingToken(c)?.grant;
    const pipeline = grantedPipeline(grant, declared.pipeline);
    const labels = grantedLabels(grant, declared.labels);
    const { pipeline: _named, labels: _sent, ...rest } = declared;
    return {
      ...rest,
      ...(pipeline ? { pipeline } : {}),
      ...(labels ? { labels } : {}),
      tenantId: c.get('tenantId'),
      mode,
      ...(grant ? { grant } : {}),
      caller: callerOf(c),
    };
  }

  /** Once the key is new: the token is live (401), its declared limits (413 / 415), the pipeline admits it (404 / 403 / 422 / 503). */
  async admit(upload: DeclaredUpload): Promise<void> {
    assertGrantLive(upload.grant);
    checkDeclared(upload.grant, { bytes: upload.bytes, ...(upload.typeUnknown ? {} : { contentType: upload.contentType }) });
    await this.deps.receiver.admit(
      {
        tenantId: upload.tenantId,
        idempotencyKey: upload.key,
        pipeline: upload.pipeline,
        fileName: upload.fileName,
        contentType: upload.contentType,
      },
      { mode: upload.mode, caller: upload.caller, bytes: upload.bytes ?? null },
    );
  }

  /** Ends an admitted upload's reservation under the byte quotas (refused before its bytes were read). */
  release(upload: Pick<DeclaredUpload, 'tenantId' | 'key'>): Promise<void> {
    return this.deps.receiver.release({ tenantId: upload.tenantId, idempotencyKey: upload.key });
  }

  /** A slot among the tenant's uploads in flight on this server (429 when none is free); call the release when done. */
  slot(tenantId: string): () => void {
    const release = this.deps.inFlight.tryAcquire(tenantId);
    if (release) return release;
    throw problem(
      'too_many_uploads',
      `This tenant already has ${this.deps.inFlight.limit} uploads in flight on this server; retry shortly with the same Idempotency-Key.`,
    );
  }
}

/** 413 for a file past `max` bytes (`bytes`: its size, when known). */
export function fileTooLarge(max: number, bytes?: number, headers?: Record<string, string>): Problem {
  return problem(
    'payload_too_large',
    bytes === undefined
      ? `The file is larger than the maximum of ${max} bytes.`
      : `The file is ${bytes} bytes; the maximum is ${max} bytes.`,
    { extra: { maxBytes: max }, ...(headers ? { headers } : {}) },
  );
}
