// Image variants on request: a stored variant is answered from its row; a cold one is
// rendered by the run whose ID is derived from the upload and the canonical spec, started
// or attached to (USE_EXISTING) by every replica's first request, and awaited. A failed run
// may be started again (its ID is reused only after a failure); a finished one never is.
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { Pool } from '../db/pool';
import { claimRender, countImageVariants, findImageVariant, releaseRender, type ImageVariantRow } from './queries';
import { QuotaReached } from '../db/queries/quotas';
import type { UploadRow } from '../db/queries/uploads';
import { dependency, problem } from '../errors';
import { byteQuotaProblem, type QuotaRefusal } from '../upload/byte-quota';
import { failureTypes, searchAttributes } from '../temporal/names';
import { startOrAttach } from '../temporal/start-or-attach';
import type { ImageVariantSummary } from '../../activities/images/image-activities';
import type { CanonicalSpec } from './spec';
import { imageFailureTypes, imageWorkflowIds, imageWorkflowTypes, type ImageVariantInput } from './contract';

/** What serving a variant needs: its row, or the render's result. */
export type StoredVariant = Pick<ImageVariantRow, 'spec' | 'storage_key' | 'content_type' | 'bytes'>;

export class ImageVariants {
  constructor(
    private readonly deps: {
      pool: Pool;
      temporal: Client;
      taskQueue: string;
      transcodeQueue: string;
      /** IMAGE_MAX_VARIANTS_PER_UPLOAD: distinct variants one upload may have. */
      maxPerUpload: number;
      /** TENANT_MAX_RENDERS_IN_FLIGHT: renders of one tenant's variants running at once. */
      maxRendersInFlight: number;
    },
  ) {}

  /** The stored variant of `upload` for `spec`, rendered first when it is cold. */
  async variant(upload: UploadRow, spec: CanonicalSpec): Promise<StoredVariant> {
    const db = <T>(fn: () => Promise<T>) => dependency('database_unavailable', fn);
    const kept = await db(() => findImageVariant(this.deps.pool, upload.id, spec.text));
    if (kept) return kept;
    if ((await db(() => countImageVariants(this.deps.pool, upload.id))) >= this.deps.maxPerUpload)
      throw variantsFull(this.deps.maxPerUpload);
    await this.admit(upload, spec);
    // The run's result is the stored variant: no second read of its row.
    try {
      const made = await this.render(upload, spec);
      return { spec: made.spec, storage_key: made.storageKey, content_type: made.contentType, bytes: String(made.bytes) };
    } finally {
      // The render is over: recorded (which freed its slot in the same transaction; a request
      // admitted as it finished attached to the finished run) or failed.
      await releaseRender(this.deps.pool, upload.id, spec.text).catch(() => {}); // else it expires
    }
  }

  /**
   * A new render starts while the tenant has fewer than TENANT_MAX_RENDERS_IN_FLIGHT under way,
   * counted in the database under the tenant's lock (a burst of cold specs is admitted one after
   * another); a request for a render already under way joins it whatever the count.
   */
  private async admit(upload: UploadRow, spec: CanonicalSpec): Promise<void> {
    const { pool, maxRendersInFlight } = this.deps;
    const claim = { tenantId: upload.tenant_id, uploadId: upload.id, spec: spec.text, ttlSeconds: RENDER_CLAIM_SECONDS };
    await dependency('database_unavailable', () =>
      claimRender(pool, claim, maxRendersInFlight).catch((err: unknown) => {
        if (err instanceof QuotaReached)
          throw problem(
            'too_many_renders',
            `The tenant has ${err.limit} renders under way (TENANT_MAX_RENDERS_IN_FLIGHT); ask again shortly.`,
          );
        throw err;
      }),
    );
  }

  private async render(upload: UploadRow, spec: CanonicalSpec): Promise<ImageVariantSummary> {
    const { temporal } = this.deps;
    const workflowId = imageWorkflowIds.imageVariant(upload.id, spec.text);
    const input: ImageVariantInput = {
      tenantId: upload.tenant_id,
      uploadId: upload.id,
      spec,
      transcodeQueue: this.deps.transcodeQueue,
      maxVariants: this.deps.maxPerUpload,
    };
    const handle = await startOrAttach(temporal, imageWorkflowTypes.imageVariant, {
      workflowId,
      taskQueue: this.deps.taskQueue,
      args: [input],
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      staticSummary: `Render ${spec.text} of upload ${upload.id}`,
      typedSearchAttributes: [
        { key: searchAttributes.tenant, value: upload.tenant_id },
        { key: searchAttributes.phase, value: 'rendering' },
      ],
    });
    return dependency('temporal_unavailable', () =>
      (handle.result() as Promise<ImageVariantSummary>).catch((err: unknown) => {
        throw err instanceof WorkflowFailedError ? renderProblem(err, upload.id, this.deps.maxPerUpload) : err;
      }),
    );
  }
}

/** How long a render's slot counts when nothing frees it (its API died): past the longest its run may take (5 attempts of 5 minutes). */
const RENDER_CLAIM_SECONDS = 30 * 60;

/** The upload has as many variants as it may: asked before a render, or found by one that raced others. */
const variantsFull = (max: number) => problem('too_many_image_variants', `The upload has ${max} variants (IMAGE_MAX_VARIANTS_PER_UPLOAD).`);

/** What a failed render answers: the variant cannot be made, the upload is gone or full, its bytes pass the tenant's quota, or ask again. */
function renderProblem(err: WorkflowFailedError, uploadId: string, maxPerUpload: number) {
  const cause = failureOf(err);
  if (cause?.type === imageFailureTypes.imageUnrenderable) return problem('image_unrenderable', cause.message);
  if (cause?.type === failureTypes.uploadDeleted) return problem('upload_deleted', 'This upload was deleted.', { extra: { uploadId } });
  if (cause?.type === imageFailureTypes.imageVariantsFull) return variantsFull(maxPerUpload);
  const refusal = cause?.type === failureTypes.byteQuotaExceeded ? (cause.details?.[0] as QuotaRefusal | undefined) : undefined;
  if (refusal) return byteQuotaProblem(refusal);
  return problem('image_render_failed', 'The render did not finish; ask again.');
}

/** The application failure that ended a run (the activity's, beneath the activity failure). */
function failureOf(err: WorkflowFailedError): ApplicationFailure | undefined {
  for (let cause: unknown = err.cause; cause; cause = (cause as { cause?: unknown }).cause)
    if (cause instanceof ApplicationFailure) return cause;
  return undefined;
}
