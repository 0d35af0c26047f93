// An import's fetch: the origin's file into the store in parts, heartbeating its progress.
// A retry after its worker died resumes from the last recorded heartbeat (Range and
// If-Range): a crash mid-file re-fetches what arrived since then (the SDK records one at
// most every 0.8 × IMPORT_HEARTBEAT_SECONDS) and the part in progress. What the origin answered, and a file that
// fails its checks once read, is the import's own refusal (not retried); a timeout or an
// origin that failed mid-transfer is retried.
import { createHash } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { Pool } from '../../src/db/pool';
import { endImport, findImportByKey, recordImportProgress, type ImportRow } from '../../src/db/queries/imports';
import {
  failListing,
  findBatchItem,
  findImportBatchById,
  finishImportBatch,
  recordListedItems,
  pendingBatchItems,
  recordBatchItem,
  setBatchPaused,
} from '../../src/imports/batches/queries';
import type { Client } from '@temporalio/client';
import type { ImportBody } from '../../src/imports/request';
import type { DeclaredUpload, StoredResponse } from '../../src/upload/types';
import { Problem } from '../../src/errors';
import type { ImportRefusal } from '../../src/imports/failures';
import { openImportHeaders } from '../../src/imports/headers';
import { LISTING_BOUNDS, listSource, openS3Access, signedObjectUrl } from '../../src/imports/s3-source';
import { batchItemUpload, MAX_BATCH_ITEMS } from '../../src/imports/batches/service';
import { ImportFailure, Origins, type OriginLimits } from '../../src/imports/origin';
import { transfer, type TransferProgress } from '../../src/imports/transfer';
import type { SecretBox } from '../../src/secret-box';
import type { ObjectStore } from '../../src/storage/store';
import type { UploadGrant } from '../../src/tokens/grant';
import { checkArrived } from '../../src/upload/grant-limits';
import { SNIFF_BYTES, stagedCopy } from '../../src/upload/staged-copy';
import type { StagedCopy } from '../../src/upload/types';
import { MEDIA_TYPE_PATTERN } from '../../src/upload/media-type';
import type { ImportSpec } from '../../src/temporal/definitions';
import { reserveRead } from './reserve-read';
import { createImporter, type ImporterWiring } from '../../src/imports/importer';

export interface ImportActivityDeps {
  pool: Pool;
  store: ObjectStore;
  secrets: SecretBox;
  imports: Omit<OriginLimits, 'maxBytes' | 'totalMs'> & { allowPrivateNetworks: boolean; partBytes: number };
  /** What the import door's service is built from, over the worker's Temporal client: a batch's items are imported as the door imports. */
  wiringFor?: (client: Client) => ImporterWiring;
}

type ItemOutcome = { kind: 'answer'; response: StoredResponse } | { kind: 'processing' | 'importing' };

/** What a batch item needs of the import door's service (src/imports/importer.ts). */
export interface ItemImporter {
  create(upload: DeclaredUpload, body: ImportBody, waitMs: number): Promise<ItemOutcome>;
  awaitAnswer(upload: DeclaredUpload, body: ImportBody, waitMs: number): Promise<ItemOutcome>;
  cancel(row: ImportRow): Promise<unknown>;
}

/** What an import's fetch is told by its run. */
export interface ImportFetch {
  spec: ImportSpec;
  fingerprint: string;
  /** The media type the request named (when `spec.typeDeclared`). */
  contentType: string;
  sha256: string | null;
  grant?: UploadGrant;
}

/** The read file, and the media type the upload records. */
export interface ImportedCopy {
  copy: StagedCopy;
  contentType: string;
}

/** Failures the origin decided: retrying cannot change them. */
const FINAL = new Set(['import_too_large', 'import_forbidden_address']);

/** How long an item waits for its import's answer at a time, heartbeating between (below its heartbeat timeout). */
const ITEM_WAIT_MS = 5_000;

export function createImportActivities({ pool, store, secrets, imports, wiringFor }: ImportActivityDeps) {
  let importer: ItemImporter | undefined;
  const importerOf = (client: Client) => {
    if (!wiringFor) throw new Error('this worker cannot import batch items (no importer)');
    return (importer ??= createImporter(wiringFor(client)));
  };
  /** What a batch's pending item asks the import door for; none once the item has an outcome (or the batch is gone). */
  const pendingItemRequest = async (batchId: string, n: number): Promise<{ upload: DeclaredUpload; body: ImportBody } | undefined> => {
    const batch = await findImportBatchById(pool, batchId);
    const item = batch && (await findBatchItem(pool, batchId, n));
    if (!batch || !item || item.state !== 'pending') return undefined;
    const body: ImportBody = {
      url: item.url,
      ...(item.file_name ? { fileName: item.file_name } : {}),
      ...(item.sha256 ? { sha256: item.sha256 } : {}),
      ...(batch.pipeline ? { pipeline: batch.pipeline } : {}),
      ...(batch.source ? { s3: openS3Access(secrets, batch.id, batch.source.sealedAccess) } : {}),
    };
    return { upload: batchItemUpload(batch, item), body };
  };
  return {
    async fetchImport(job: ImportFetch): Promise<ImportedCopy> {
      const { spec } = job;
      const ctx = Context.current();
      const origins = new Origins(
        { allowPrivateNetworks: imports.allowPrivateNetworks },
        { ...imports, maxBytes: spec.maxBytes, totalMs: spec.attemptSeconds * 1000 },
      );
      let progress = ctx.info.heartbeatDetails as TransferProgress | undefined;
      // Progress is heartbeated and shown (GET /v1/uploads/{id}) at most once a second.
      let shown = -1;
      const beat = setInterval(() => {
        ctx.heartbeat(progress);
        if (progress && progress.offset !== shown) {
          shown = progress.offset;
          recordImportProgress(pool, spec.uploadId, progress.offset, progress.length ?? null).catch(() => {
            // Only the view lags: the heartbeat carries the progress a resume needs.
          });
        }
      }, 1_000);
      // A deletion of the upload stops the read (the heartbeat brings the request). A worker
      // shutting down does not: the next attempt resumes where this one got.
      let canceled = false;
      const stopOnCancel = () => {
        if (!ctx.cancellationDetails?.cancelRequested) return;
        canceled = true;
        void origins.destroy();
      };
      ctx.cancellationSignal.addEventListener('abort', stopOnCancel, { once: true });
      try {
        const headers = spec.sealedHeaders ? openImportHeaders(secrets, spec.storageKey, spec.sealedHeaders) : undefined;
        // An S3 source's object: each attempt signs its own read (a resume may come long after the first).
        const url = spec.sealedS3Access
          ? await signedObjectUrl(spec.url, openS3Access(secrets, spec.storageKey, spec.sealedS3Access), spec.attemptSeconds)
          : spec.url;
        const got = await transfer(
          { origins, store, partBytes: imports.partBytes, sized: (length) => reserveRead({ pool, store }, spec, length) },
          {
            url,
            storageKey: spec.storageKey,
            contentType: spec.typeDeclared ? job.contentType : 'application/octet-stream',
            maxBytes: spec.maxBytes,
            ...(spec.hosts ? { hosts: spec.hosts } : {}),
            ...(headers ? { headers } : {}),
          },
          progress,
          (p) => {
            progress = p;
            ctx.heartbeat(p);
          },
        );
        await recordImportProgress(pool, spec.uploadId, got.bytes, got.bytes);
        // After a resume no one process read the whole file: the assembled object is hashed once.
        const sha256 = got.sha256 ?? (await hashObject(store, spec.storageKey));
        const copy = stagedCopy({
          attemptId: spec.attemptId,
          fingerprint: job.fingerprint,
          storageKey: spec.storageKey,
          bytes: got.bytes,
          sha256,
          head: await headOf(store, spec.storageKey, got.bytes),
        });
        const contentType = spec.typeDeclared ? job.contentType : recordedType(got.contentType, copy.sniffedType);
        await checkFile(store, job, copy, contentType);
        await reserveRead({ pool, store }, spec, copy.bytes);
        return { copy, contentType };
      } catch (err) {
        if (canceled) {
          if (progress) await store.abortParts(spec.storageKey, progress.multipartId).catch(() => {});
          throw new CancelledFailure('The import was canceled: its upload was deleted.');
        }
        if (err instanceof ApplicationFailure) throw err;
        if (!(err instanceof ImportFailure)) throw err;
        const status = err.originStatus;
        const final = FINAL.has(err.code) || (err.code === 'import_failed' && status !== undefined && status >= 400 && status < 500);
        // No attempt follows a final failure or the last attempt: the parts stored so far go.
        if ((final || ctx.info.attempt >= spec.maxAttempts) && progress)
          await store.abortParts(spec.storageKey, progress.multipartId).catch(() => {});
        throw refusal(err.code, err.message, { originStatus: status ?? null }, final);
      } finally {
        clearInterval(beat);
        ctx.cancellationSignal.removeEventListener('abort', stopOnCancel);
        void origins.close();
      }
    },

    /**
     * One item of a batch: imported under the key `import-batch/{batchId}/{n}` as its batch's
     * caller, its answer awaited, its outcome recorded once. Run again (its worker died) it
     * attaches to the same import. What would pass with time (a quota, an outage) is retried.
     */
    async importBatchItem({ batchId, n }: { batchId: string; n: number }): Promise<void> {
      const ctx = Context.current();
      const pending = await pendingItemRequest(batchId, n);
      if (!pending) return;
      const { upload, body } = pending;
      const importer = importerOf(ctx.client);
      // The batch was cancelled (heard on a heartbeat). A worker shutting down instead leaves the item to its retry.
      const batchCancelled = () => !!ctx.cancellationDetails?.cancelRequested;
      // Heartbeats go on whatever a call to Temporal or the database takes meanwhile.
      const beating = setInterval(() => ctx.heartbeat(), ITEM_WAIT_MS);
      let outcome: ItemOutcome;
      try {
        outcome = await importer.create(upload, body, 0);
        while (outcome.kind !== 'answer' && !batchCancelled()) {
          ctx.heartbeat();
          outcome = await importer.awaitAnswer(upload, body, ITEM_WAIT_MS);
        }
        if (outcome.kind !== 'answer') outcome = await cancelItemImport(pool, ctx, importer, { upload, body });
      } catch (err) {
        if (batchCancelled()) outcome = await cancelItemImport(pool, ctx, importer, { upload, body });
        // Past the tenant's imports in flight: try again soon (a slot frees as any import ends),
        // not on the backoff an outage gets, which would leave the batch's slots idle for a minute.
        else if (err instanceof Problem && err.code === 'too_many_imports')
          throw ApplicationFailure.create({
            type: err.code,
            message: err.detail,
            nextRetryDelay: QUOTA_RETRY_MS + Math.floor(Math.random() * QUOTA_RETRY_MS),
          });
        else if (!(err instanceof Problem) || RETRIED.has(err.code)) throw err;
        else return recordBatchItem(pool, batchId, n, { state: 'failed', uploadId: null, error: err.toJSON() });
      } finally {
        clearInterval(beating);
      }
      await recordItemAnswer(pool, batchId, n, outcome.response);
    },

    /**
     * An item whose attempt failed as the batch's cancel reached it, so Temporal did not retry
     * it: the import that attempt may have created is cancelled like an item's under way, and
     * what it came to recorded. An item that never started (or whose import could not be
     * followed) is left pending: the batch's end skips it.
     */
    async cancelImportBatchItem({ batchId, n }: { batchId: string; n: number }): Promise<void> {
      const ctx = Context.current();
      const pending = await pendingItemRequest(batchId, n);
      if (!pending) return;
      let outcome: { response: StoredResponse };
      try {
        outcome = await cancelItemImport(pool, ctx, importerOf(ctx.client), pending);
      } catch (err) {
        if (err instanceof CancelledFailure) return;
        throw err;
      }
      await recordItemAnswer(pool, batchId, n, outcome.response);
    },

    /**
     * An S3 source's objects, listed once by the batch's run within LISTING_BOUNDS (a heartbeat
     * a page; the batch's cancel stops it) and recorded as its items: true. A source that cannot
     * be listed within them fails the batch with the store's words: false.
     */
    async listImportBatchSource({ batchId }: { batchId: string }): Promise<boolean> {
      const ctx = Context.current();
      const batch = await findImportBatchById(pool, batchId);
      if (!batch?.source || batch.state !== 'listing') return !!batch && batch.state !== 'failed'; // listed by an earlier attempt
      const { sealedAccess, ...location } = batch.source;
      const source = { ...location, ...openS3Access(secrets, batch.id, sealedAccess) };
      try {
        const items = await listSource(source, {
          allowPrivateNetworks: imports.allowPrivateNetworks,
          connectMs: imports.connectMs,
          maxItems: MAX_BATCH_ITEMS,
          ...LISTING_BOUNDS,
          signal: ctx.cancellationSignal,
          onPage: (pages, items) => ctx.heartbeat({ pages, items }),
        });
        await recordListedItems(pool, batchId, items);
        return true;
      } catch (err) {
        if (!(err instanceof Problem)) throw err;
        await failListing(pool, batchId, err.toJSON());
        return false;
      }
    },

    async pendingImportBatchItems({ batchId, after, limit }: { batchId: string; after: number; limit: number }): Promise<number[]> {
      return pendingBatchItems(pool, batchId, after, limit);
    },

    async pauseImportBatch({ batchId, paused }: { batchId: string; paused: boolean }): Promise<void> {
      await setBatchPaused(pool, batchId, paused);
    },

    async finishImportBatch({ batchId, state }: { batchId: string; state: 'completed' | 'cancelled' }): Promise<void> {
      await finishImportBatch(pool, batchId, state);
    },

    /** An import whose run failed without recording an answer (e.g. its key was taken by another door meanwhile). */
    async failImport(uploadId: string): Promise<void> {
      await endImport(pool, uploadId, 'failed');
    },
  };
}

/** How long a cancelled item waits for its cancelled import to end. */
const CANCEL_WAIT_MS = 120_000;

/**
 * The batch was cancelled while this item ran: its import, once started, is cancelled as a
 * DELETE of its upload would be, and what it came to is awaited (the 410 import_canceled, or
 * the upload if it was already being committed). An import that never started, or did not end
 * within the bound, leaves the item cancelled: the batch's end counts it skipped.
 */
async function cancelItemImport(
  pool: Pool,
  ctx: Context,
  importer: ItemImporter,
  item: { upload: DeclaredUpload; body: ImportBody },
): Promise<{ kind: 'answer'; response: StoredResponse }> {
  // A worker's native connection bounds calls by deadline (it ignores abort signals).
  const until = Date.now() + CANCEL_WAIT_MS;
  try {
    const row = await findImportByKey(pool, item.upload.tenantId, item.upload.key);
    // No row: never started, or committed (its row is gone and its answer kept: awaited below).
    if (row?.state === 'failed') throw new CancelledFailure('The batch was cancelled after this item failed.');
    if (row) await ctx.client.withDeadline(until, () => importer.cancel(row));
    while (Date.now() < until) {
      const outcome = await importer.awaitAnswer(item.upload, item.body, Math.min(ITEM_WAIT_MS, until - Date.now()));
      if (outcome.kind === 'answer') return outcome;
      ctx.heartbeat();
    }
  } catch (err) {
    if (err instanceof CancelledFailure) throw err;
    throw new CancelledFailure(`The batch was cancelled; this item's import could not be followed (${String(err)}).`);
  }
  throw new CancelledFailure("The batch was cancelled; this item's import did not end in time.");
}

/** An item's outcome from its import's answer: done, skipped (its import cancelled: the batch's cancel, or a DELETE of its upload, with the reason) or failed. */
async function recordItemAnswer(pool: Pool, batchId: string, n: number, response: StoredResponse): Promise<void> {
  if (response.status < 300) return recordBatchItem(pool, batchId, n, { state: 'done', uploadId: response.uploadId, error: null });
  const error = JSON.parse(response.body) as Record<string, unknown>;
  await recordBatchItem(pool, batchId, n, { state: error.error === 'import_canceled' ? 'skipped' : 'failed', uploadId: null, error });
}

/** How long an item past the imports-in-flight quota waits before it asks again (up to twice this, spread). */
const QUOTA_RETRY_MS = 1_000;

/** Refusals that pass with time: the item is retried, not failed. */
const RETRIED = new Set<string>(['database_unavailable', 'temporal_unavailable', 'storage_unavailable', 'validation_unavailable']);

/** The checks on the read file: the declared SHA-256 and the token's limits. A refused file is deleted. */
async function checkFile(store: ObjectStore, job: ImportFetch, copy: StagedCopy, contentType: string): Promise<void> {
  try {
    if (job.sha256 && job.sha256 !== copy.sha256)
      throw new Problem('checksum_mismatch', `The declared SHA-256 is ${job.sha256} but the file read hashes to ${copy.sha256}.`);
    checkArrived(job.grant, { bytes: copy.bytes, sniffedType: copy.sniffedType, contentType });
  } catch (err) {
    if (!(err instanceof Problem)) throw err;
    await store.delete(copy.storageKey);
    throw refusal(err.code as ImportRefusal, err.detail, {}, true);
  }
}

function refusal(code: ImportRefusal, message: string, details: Record<string, unknown>, final: boolean): ApplicationFailure {
  return ApplicationFailure.create({ message, type: code, nonRetryable: final, details: [details] });
}

/** The origin's media type (without parameters) unless it says nothing useful; then the sniffed one. */
function recordedType(originType: string | null, sniffed: string | null): string {
  const bare = originType?.split(';')[0]!.trim().toLowerCase();
  if (bare && bare !== 'application/octet-stream' && MEDIA_TYPE_PATTERN.test(bare)) return bare;
  return sniffed ?? 'application/octet-stream';
}

async function hashObject(store: ObjectStore, key: string): Promise<string> {
  const stream = await store.get(key);
  if (!stream) throw new Error(`imported object ${key} is missing`);
  const hash = createHash('sha256');
  for await (const chunk of stream as AsyncIterable<Buffer>) hash.update(chunk);
  return hash.digest('hex');
}

async function headOf(store: ObjectStore, key: string, bytes: number): Promise<Buffer> {
  if (bytes === 0) return Buffer.alloc(0);
  const stream = await store.get(key, { start: 0, end: Math.min(SNIFF_BYTES, bytes) - 1 });
  const chunks: Buffer[] = [];
  for await (const chunk of stream ?? []) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
