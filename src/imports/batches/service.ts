// Starting and steering import batches: the batch row with its items first (under the
// tenant's open-batch quota), then its workflow; a batch whose workflow could not be started
// is closed at once, never left open. Pause, resume and cancel are updates the workflow
// records before it answers.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Pool } from '../../db/pool';
import {
  finishImportBatch,
  insertImportBatch,
  type BatchItem,
  type ImportBatchItemRow,
  type ImportBatchRow,
  type ImportBatchSource,
} from './queries';
import { QuotaReached } from '../../db/queries/quotas';
import { dependency, problem } from '../../errors';
import { searchAttributes } from '../../temporal/names';
import { assertImportUrlsAllowed, assertImportUrlAllowed } from '../url-check';
import { probeSource, sealS3Access, type S3Source } from '../s3-source';
import type { SecretBox } from '../../secret-box';
import type { UploadGrant } from '../../tokens/grant';
import type { Caller } from '../../upload/types';
import { controlBatchUpdate, type BatchControl } from '../../temporal/definitions';
import type { DeclaredUpload, UploadLabels } from '../../upload/types';
import { nameFromUrl } from '../request';
import { labelsOf } from '../../http/parse/labels';
import { metadataFault, Tags } from '../../http/schemas';
import { importWorkflowIds, importWorkflowTypes, type ImportBatchInput } from '../contract';

/** An item's upload's labels: the item's metadata keys over the batch's, the tags of both. */
export function batchItemLabels(batch: UploadLabels | null | undefined, item: UploadLabels | null | undefined): UploadLabels | undefined {
  const metadata = batch?.metadata || item?.metadata ? { ...batch?.metadata, ...item?.metadata } : undefined;
  return labelsOf(metadata, [...(batch?.tags ?? []), ...(item?.tags ?? [])]);
}

/** What an item asks for, as its batch's caller: its key is the batch's and its number. */
export function batchItemUpload(batch: ImportBatchRow, item: ImportBatchItemRow): DeclaredUpload {
  const labels = batchItemLabels(batch.labels, item.labels);
  return {
    tenantId: batch.tenant_id,
    mode: 'import',
    key: `import-batch/${batch.id}/${item.n}`,
    contentType: 'application/octet-stream',
    typeUnknown: true,
    fileName: item.file_name ?? nameFromUrl(new URL(item.url)),
    sha256: item.sha256,
    ...(batch.pipeline ? { pipeline: batch.pipeline } : {}),
    ...(labels ? { labels } : {}),
    ...(batch.upload_grant ? { grant: batch.upload_grant } : {}),
    caller: batch.caller,
  };
}

/** Each item's labels with the batch's still within an upload's limits (else 422, naming the first item past them). */
function assertItemLabelsFit(batch: UploadLabels | undefined, items: readonly BatchItem[]): void {
  if (!batch) return;
  items.forEach((item, i) => {
    if (!item.labels) return;
    const merged = batchItemLabels(batch, item.labels);
    const fault = merged?.metadata && metadataFault(merged.metadata);
    if (fault) throw problem('body_invalid', `items[${i}].metadata with the batch's: ${fault}`);
    const tags = merged?.tags && Tags.safeParse(merged.tags);
    if (tags && !tags.success) throw problem('body_invalid', `items[${i}].tags with the batch's: ${tags.error.issues[0]?.message}.`);
  });
}

/** The most items one batch imports (a listed source may hold no more). */
export const MAX_BATCH_ITEMS = 10_000;
/** The longest the request that makes a batch waits for its S3 source's first page. */
const PROBE_MS = 30_000;

export class ImportBatches {
  constructor(
    private readonly deps: {
      pool: Pool;
      temporal: Client;
      secrets: SecretBox;
      taskQueue: string;
      maxOpen: number;
      allowPrivateNetworks: boolean;
      connectMs: number;
    },
  ) {}

  async start(
    b: {
      tenantId: string;
      caller: Caller;
      grant?: UploadGrant;
      pipeline?: string;
      concurrency: number;
      labels?: UploadLabels | undefined;
    } & ({ items: BatchItem[] } | { s3: S3Source }),
    signal?: AbortSignal,
  ): Promise<ImportBatchRow> {
    if ('items' in b) assertItemLabelsFit(b.labels, b.items);
    const id = randomUUID();
    const { items, source } = await this.itemsOf(id, b, signal);
    const row = await dependency('database_unavailable', () =>
      insertImportBatch(
        this.deps.pool,
        {
          id,
          tenant_id: b.tenantId,
          concurrency: b.concurrency,
          pipeline: b.pipeline ?? null,
          caller: b.caller,
          upload_grant: b.grant ?? null,
          source,
          labels: b.labels ?? null,
        },
        items,
        this.deps.maxOpen,
      ).catch((err: unknown) => {
        if (err instanceof QuotaReached)
          throw problem('too_many_import_batches', `This tenant already has ${err.limit} import batches open; wait for one to end.`, {
            extra: { limit: err.limit },
          });
        throw err;
      }),
    );
    const input: ImportBatchInput = { batchId: id, concurrency: b.concurrency, ...(items === 'to-list' ? { listSource: true } : {}) };
    try {
      await dependency('temporal_unavailable', () =>
        this.deps.temporal.workflow.start(importWorkflowTypes.importBatch, {
          workflowId: importWorkflowIds.importBatch(id),
          taskQueue: this.deps.taskQueue,
          args: [input],
          staticSummary: items === 'to-list' ? `Import the objects under an S3 prefix` : `Import a batch of ${items.length} files`,
          typedSearchAttributes: [{ key: searchAttributes.tenant, value: b.tenantId }],
        }),
      );
    } catch (err) {
      await finishImportBatch(this.deps.pool, id, 'cancelled').catch(() => {}); // the caller has the 503; its retry makes a new batch
      throw err;
    }
    return row;
  }

  /**
   * The batch's items, every host they name checked once before anything is stored (as the
   * door checks its URL); an S3 source's endpoint is checked, and its first page (stopping
   * when the request ends).
   */
  private async itemsOf(
    id: string,
    b: { items: BatchItem[] } | { s3: S3Source },
    signal?: AbortSignal,
  ): Promise<{ items: BatchItem[] | 'to-list'; source: ImportBatchSource | null }> {
    const { allowPrivateNetworks, connectMs, secrets } = this.deps;
    if ('items' in b) {
      await assertImportUrlsAllowed(
        b.items.map((i) => i.url),
        allowPrivateNetworks,
      );
      return { items: b.items, source: null };
    }
    const { endpoint, region, bucket, prefix, ...access } = b.s3;
    await assertImportUrlAllowed(`${endpoint}/`, allowPrivateNetworks, 'The source endpoint');
    // Its first page here; the rest is listed by the batch's run, where a store that never ends cannot hold the API.
    await probeSource(b.s3, { allowPrivateNetworks, connectMs, maxMs: PROBE_MS, ...(signal ? { signal } : {}) });
    return {
      items: 'to-list',
      source: { endpoint, region, bucket, prefix, sealedAccess: sealS3Access(secrets, id, { region, ...access }) },
    };
  }

  /** Pauses, resumes or cancels an open batch; answers once its workflow recorded it. */
  async control(batchId: string, action: BatchControl): Promise<void> {
    await dependency('temporal_unavailable', () =>
      this.deps.temporal.workflow.getHandle(importWorkflowIds.importBatch(batchId)).executeUpdate(controlBatchUpdate, { args: [action] }),
    );
  }
}
