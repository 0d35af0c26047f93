// What a new upload must pass before a body byte is read (after its key is known to be
// new): its pipeline is declared, and that pipeline's validation hook, when it has one,
// accepts it. The hook's refusal is the client's answer (403 for its 401/403, 422 for any
// other 4xx, with its message) and is not stored under the key, so the client may fix the
// request and retry; a hook that cannot be asked is 503 with Retry-After. Last, its declared
// bytes are reserved under the tenant's byte quotas (413 byte_quota_exceeded when they would
// pass one).
import { createHash } from 'node:crypto';
import type { DeclaredPipelines } from '../pipelines/declared';
import type { TenantCalls } from '../downstream/tenant-calls';
import { DisallowedUrlError } from '../downstream/url-guard';
import { dependency, problem } from '../errors';
import { refusingOverQuota } from './byte-quota';
import type { Caller, UploadRequest } from './types';
import type { ArrivalMode } from '../modes';

/** How the upload arrives: its mode, its caller, its size when declared. */
export interface Arrival {
  mode: ArrivalMode;
  caller: Caller;
  bytes: number | null;
}

/** Reserves a new upload's declared bytes (null: not declared) under its key, or throws ByteQuotaExceeded. */
export type Reserve = (r: { tenantId: string; key: string; bytes: number | null }) => Promise<void>;
/** Ends a key's reservation. */
export type Release = (tenantId: string, key: string) => Promise<void>;
/** Throws ByteQuotaExceeded when `bytes` could not be reserved now (nothing is reserved). */
export type CheckBytes = (r: { tenantId: string; key: string; bytes: number }) => Promise<void>;

export class Admission {
  constructor(
    private readonly deps: { pipelines: DeclaredPipelines; calls: TenantCalls; reserve: Reserve; release: Release; check: CheckBytes },
  ) {}

  release(tenantId: string, key: string): Promise<void> {
    return this.deps.release(tenantId, key);
  }

  /** 413 byte_quota_exceeded, before any byte is read, for an upload of at least `bytes` that cannot fit. */
  async refuseIfCannotFit(tenantId: string, key: string, bytes: number): Promise<void> {
    await dependency('database_unavailable', () => refusingOverQuota(() => this.deps.check({ tenantId, key, bytes })));
  }

  async admit(
    req: Pick<UploadRequest, 'tenantId' | 'idempotencyKey' | 'pipeline' | 'fileName' | 'contentType'>,
    arrival: Arrival,
  ): Promise<void> {
    await this.askPipeline(req, arrival);
    const reservation = { tenantId: req.tenantId, key: req.idempotencyKey, bytes: arrival.bytes };
    await dependency('database_unavailable', () => refusingOverQuota(() => this.deps.reserve(reservation)));
  }

  private async askPipeline(
    req: Pick<UploadRequest, 'tenantId' | 'idempotencyKey' | 'pipeline' | 'fileName' | 'contentType'>,
    arrival: Arrival,
  ): Promise<void> {
    const pipeline = await this.deps.pipelines.admission(req.tenantId, req.pipeline);
    if (!pipeline.validate) return;
    const unavailable = (why: string) =>
      problem('validation_unavailable', `The pipeline's validation hook could not be asked (${why}); retry with the same Idempotency-Key.`);
    let answer;
    try {
      answer = await this.deps.calls.call({
        url: pipeline.validate.url,
        tenantId: req.tenantId,
        pipeline: pipeline.name,
        // One id per key: the hook recognises repeated calls for one upload.
        id: `val_${createHash('sha256').update(`${req.tenantId}\n${req.idempotencyKey}`).digest('hex').slice(0, 32)}`,
        type: 'upload.validate',
        data: {
          idempotencyKey: req.idempotencyKey,
          pipeline: pipeline.name,
          fileName: req.fileName,
          bytes: arrival.bytes,
          contentType: req.contentType,
          mode: arrival.mode,
          caller: arrival.caller,
        },
        timeoutMs: pipeline.validate.timeoutSeconds * 1000,
      });
    } catch (err) {
      throw unavailable(err instanceof DisallowedUrlError ? 'its address is not allowed' : 'no answer');
    }
    if (answer.status >= 200 && answer.status < 300) return;
    const said = answer.message ? `: ${answer.message}` : '';
    if (answer.status === 401 || answer.status === 403)
      throw problem('upload_forbidden', `The validation hook refused the upload${said}.`, { extra: { hookStatus: answer.status } });
    if (answer.status >= 400 && answer.status < 500)
      throw problem('upload_refused', `The validation hook refused the upload${said}.`, { extra: { hookStatus: answer.status } });
    throw unavailable(`it answered ${answer.status}`);
  }
}
