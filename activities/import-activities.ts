// An import's fetch: the origin's file into the store in parts, heartbeating its progress.
// A retry after its worker died resumes from the last heartbeat (Range and If-Range), so a
// crash mid-file re-fetches at most one part. What the origin answered is the import's own
// failure (not retried); a timeout or an origin that failed mid-transfer is retried.
import { createHash } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { ImportFailure, Origins, type OriginLimits } from '../src/imports/origin';
import { transfer, type TransferProgress } from '../src/imports/transfer';
import type { SecretBox } from '../src/secret-box';
import type { ObjectStore } from '../src/storage/store';
import { SNIFF_BYTES, stagedCopy } from '../src/upload/staged-copy';
import type { StagedCopy } from '../src/upload/types';

export interface ImportActivityDeps {
  store: ObjectStore;
  secrets: SecretBox;
  imports: Omit<OriginLimits, 'maxBytes'> & { allowPrivateNetworks: boolean; maxBytes: number; partBytes: number };
}

/** What an import's fetch is told (its run's input carries it; the tenant's headers only sealed). */
export interface ImportFetch {
  url: string;
  /** The tenant's request headers for the origin, sealed with the secrets box under `importHeadersContext(storageKey)`. */
  sealedHeaders?: string;
  storageKey: string;
  contentType: string;
  maxBytes?: number;
  attemptId: string;
  fingerprint: string;
}

export function importHeadersContext(storageKey: string): string {
  return `import-headers\n${storageKey}`;
}

/** Failures the origin decided: retrying cannot change them. */
const FINAL = new Set(['import_too_large', 'import_forbidden_address']);

export function createImportActivities({ store, secrets, imports }: ImportActivityDeps) {
  const origins = new Origins({ allowPrivateNetworks: imports.allowPrivateNetworks }, imports);
  return {
    async fetchImport(job: ImportFetch): Promise<StagedCopy> {
      const ctx = Context.current();
      let progress = ctx.info.heartbeatDetails as TransferProgress | undefined;
      const beat = setInterval(() => ctx.heartbeat(progress), 1_000);
      try {
        const headers = job.sealedHeaders
          ? (JSON.parse(secrets.open(job.sealedHeaders, importHeadersContext(job.storageKey))) as Record<string, string>)
          : undefined;
        const got = await transfer(
          { origins, store, partBytes: imports.partBytes },
          {
            url: job.url,
            storageKey: job.storageKey,
            contentType: job.contentType,
            ...(headers ? { headers } : {}),
            ...(job.maxBytes ? { maxBytes: job.maxBytes } : {}),
          },
          progress,
          (p) => {
            progress = p;
            ctx.heartbeat(p);
          },
        );
        // After a resume no one process read the whole file: the assembled object is hashed once.
        const sha256 = got.sha256 ?? (await hashObject(store, job.storageKey));
        return stagedCopy({
          attemptId: job.attemptId,
          fingerprint: job.fingerprint,
          storageKey: job.storageKey,
          bytes: got.bytes,
          sha256,
          head: await headOf(store, job.storageKey, got.bytes),
        });
      } catch (err) {
        if (!(err instanceof ImportFailure)) throw err;
        const status = err.originStatus;
        const final = FINAL.has(err.code) || (err.code === 'import_failed' && status !== undefined && status >= 400 && status < 500);
        throw ApplicationFailure.create({
          message: err.message,
          type: err.code,
          nonRetryable: final,
          details: [{ originStatus: status ?? null }],
        });
      } finally {
        clearInterval(beat);
      }
    },
  };
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
