// Rendering one image variant (on the transcode queue, beside the other media work): the
// upload's bytes read into memory (through a scratch file above 32 MiB), sharp, the variant
// to a key derived from the upload and the canonical spec, its row recorded once (within
// the upload's variant cap). A retry finds the row and answers it; a variant
// finished after its upload was deleted is removed again.
import { renditionPrefix } from '../../src/storage/layout';
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Pool } from '../../src/db/pool';
import { ByteQuotaExceeded } from '../../src/db/queries/byte-quotas';
import { quotaRefusal } from '../../src/upload/byte-quota';
import { findImageVariant, insertImageVariant, type ImageVariantRow } from '../../src/images/queries';
import { holdNewObjects } from '../../src/upload/hold-new-objects';
import { findUploadById } from '../../src/db/queries/uploads';
import { renderImage, UnrenderableImage } from '../../src/images/render';
import { newScratchDir } from '../../src/media/scratch';
import type { CanonicalSpec } from '../../src/images/spec';
import type { Presets } from '../../src/media/transcode';
import type { ObjectStore } from '../../src/storage/store';
import { failureTypes } from '../../src/temporal/names';
import { imageFailureTypes } from '../../src/images/contract';

/** Sources up to this size are rendered from memory. */
const IN_MEMORY_SOURCE_BYTES = 32 * 1024 * 1024;

export interface ImageActivityDeps {
  pool: Pool;
  store: ObjectStore;
  /** `maxPixels` (IMAGE_MAX_PIXELS) bounds the input and the output. */
  presets: Pick<Presets, 'maxPixels'>;
  /** IMAGE_MAX_RENDER_COST: a variant costing more (src/images/spec.ts, renderCost) is refused before any work. */
  maxRenderCost: number;
}

/** What a render answers: the variant as stored. */
export interface ImageVariantSummary {
  spec: string;
  storageKey: string;
  contentType: string;
  bytes: number;
  width: number;
  height: number;
}

export function imageVariantSummary(r: ImageVariantRow): ImageVariantSummary {
  return { spec: r.spec, storageKey: r.storage_key, contentType: r.content_type, bytes: Number(r.bytes), width: r.width, height: r.height };
}

/**
 * Where a variant is stored: under the upload's renditions, so its deletion erases it with
 * them; named by its canonical spec's hash (a spec's commas are no safe key character).
 */
export function imageVariantKey(upload: { tenant_id: string; id: string; storage_key: string }, spec: CanonicalSpec): string {
  const name = createHash('sha256').update(spec.text).digest('hex').slice(0, 32);
  return `${renditionPrefix(upload.tenant_id, upload.id, upload.storage_key)}images/${name}.${spec.format === 'jpeg' ? 'jpg' : spec.format}`;
}

export function createImageActivities({ pool, store, presets, maxRenderCost }: ImageActivityDeps) {
  const gone = () => ApplicationFailure.nonRetryable('the upload was deleted', failureTypes.uploadDeleted);
  return {
    /** `maxVariants`: IMAGE_MAX_VARIANTS_PER_UPLOAD when the run was started (absent in runs from before the cap moved here). */
    async renderImageVariant(a: {
      tenantId: string;
      uploadId: string;
      spec: CanonicalSpec;
      maxVariants?: number;
    }): Promise<ImageVariantSummary> {
      // Both rows asked at once: a retry's answer is the first, a first attempt needs the second.
      const [kept, upload] = await Promise.all([findImageVariant(pool, a.uploadId, a.spec.text), findUploadById(pool, a.uploadId)]);
      if (kept) return imageVariantSummary(kept);
      if (!upload || upload.deleted_at) throw gone();
      const source = await store.get(upload.storage_key);
      if (!source) throw ApplicationFailure.nonRetryable(`object ${upload.storage_key} is missing`, failureTypes.objectMissing);
      // A phone's photo is read into memory (no disk round trip); a big source goes through a scratch file.
      const dir = Number(upload.bytes) > IN_MEMORY_SOURCE_BYTES ? await newScratchDir() : undefined;
      let image;
      // A big render takes seconds: the heartbeat lets a dead worker's attempt be retried long before its timeout.
      const ctx = Context.current();
      const beat = setInterval(() => ctx.heartbeat('rendering'), 1_000);
      try {
        const file = dir && path.join(dir, 'source');
        if (file) await pipeline(source, createWriteStream(file));
        image = await renderImage(file || Buffer.concat(await source.toArray()), upload.content_type, a.spec, {
          maxPixels: presets.maxPixels,
          maxCost: maxRenderCost,
        });
      } catch (err) {
        if (err instanceof UnrenderableImage) throw ApplicationFailure.nonRetryable(err.message, imageFailureTypes.imageUnrenderable);
        throw err;
      } finally {
        clearInterval(beat);
        if (dir) await rm(dir, { recursive: true, force: true });
      }
      const storageKey = imageVariantKey(upload, a.spec);
      await store.put(storageKey, Readable.from([image.data]), { contentType: image.contentType, contentLength: image.data.length });
      const recorded = await insertImageVariant(
        pool,
        {
          upload_id: a.uploadId,
          spec: a.spec.text,
          storage_key: storageKey,
          content_type: image.contentType,
          bytes: image.data.length,
          width: image.width,
          height: image.height,
        },
        a.maxVariants,
      ).catch(async (err: unknown) => {
        if (!(err instanceof ByteQuotaExceeded)) throw err;
        await store.delete(storageKey);
        throw ApplicationFailure.nonRetryable(
          `variant ${a.spec.text} not stored: ${err.message}`,
          failureTypes.byteQuotaExceeded,
          quotaRefusal(err),
        );
      });
      if ('refused' in recorded) {
        await store.delete(storageKey);
        if (recorded.refused === 'deleted') throw gone();
        throw ApplicationFailure.nonRetryable(`the upload has ${a.maxVariants} variants`, imageFailureTypes.imageVariantsFull);
      }
      await holdNewObjects(pool, store, a.uploadId, [recorded.row.storage_key]);
      return imageVariantSummary(recorded.row);
    },
  };
}

export type ImageActivities = ReturnType<typeof createImageActivities>;
