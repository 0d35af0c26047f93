// Side effects of the deletion workflow, in its order: tombstone, let the upload's own runs
// finish (a downstream child is cancelled), delete renditions, release the original (its
// bytes go unless another upload shares them), scrub the personal metadata. Each is safe to
// run again: a retry finds its work done.
import { findUploadById } from '../src/db/queries/uploads';
import { renditionPrefix } from '../src/storage/layout';
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Pool } from '../src/db/pool';
import {
  closeRestoreWindow,
  deleteRenditionRows,
  dueUploads,
  openRestoreWindow,
  releaseObject,
  restoreUpload,
  scrubUpload,
  tombstoneUpload,
} from '../src/db/queries/deletions';
import { eventBody, numberedEventId, type WebhookEvent } from '../src/downstream/events';
import { Deletions } from '../src/lifecycle/deletions';
import { allRenditionKeys } from '../src/db/queries/renditions';
import { destroyPayloadKeys } from '../src/db/queries/payload-keys';
import { uploadScopes } from '../src/codec/payload-scope';
import { rejectionAnswer } from '../src/upload/stored-answers';
import { metrics } from '../src/metrics';
import type { ObjectStore } from '../src/storage/store';
import type { DeletionReason } from '../src/temporal/definitions';
import type { WebhookRetrySchedule } from '../src/downstream/types';
import { workflowIds } from '../src/temporal/names';
import { linkToCommit } from '../src/telemetry/context';

export interface DeletionActivityDeps {
  pool: Pool;
  store: ObjectStore;
  /** The retry schedule of the upload.deleted webhooks of deletions this worker starts. */
  webhookRetry: WebhookRetrySchedule;
}

/** Deletions started per sweep at most; the next sweep takes the rest. */
const SWEEP_BATCH = 1000;

const POLL_MS = 500;

export function createDeletionActivities({ pool, store, webhookRetry }: DeletionActivityDeps) {
  /** Deletes an object if it is there; the bytes it held (0 when it was already gone). */
  async function deleteObject(key: string): Promise<number> {
    const head = await store.head(key);
    if (!head) return 0;
    // The erasure runs only once Oncely holds nothing; a store hold a lost release left behind goes with it.
    await store.setLegalHold?.(key, false);
    await store.delete(key);
    metrics.bytesErased.inc(head.bytes);
    return head.bytes;
  }

  return {
    /**
     * Starts the deletion (reason `retention`) of every live upload whose time is up; one
     * already started is attached to, not repeated. Run by the expire-uploads Schedule.
     */
    async expireDueUploads(): Promise<{ started: number }> {
      const ctx = Context.current();
      const deletions = new Deletions({ temporal: ctx.client, taskQueue: ctx.info.taskQueue, webhookRetry });
      const due = await dueUploads(pool, SWEEP_BATCH);
      for (const u of due) {
        await deletions.start(u.tenant_id, u.id, u.idempotency_key, 'retention');
        ctx.heartbeat(u.id);
      }
      metrics.housekeepingRemoved.inc({ kind: 'expired_uploads' }, due.length);
      return { started: due.length };
    },

    /** The tombstone; null when the tenant has no such upload, `held` when a legal hold keeps it. */
    async tombstoneUpload(a: {
      tenantId: string;
      uploadId: string;
    }): Promise<{ uploadWorkflowId: string; deletedAt: string } | { held: true } | null> {
      const row = await tombstoneUpload(pool, a.tenantId, a.uploadId);
      if (row === 'held') return { held: true };
      // The deletion is a trace of its own (its request's), linked to the upload's commit.
      linkToCommit(row?.traceparent, 'deletion');
      return row ? { uploadWorkflowId: row.workflow_id, deletedAt: row.deleted_at!.toISOString() } : null;
    },

    /**
     * Waits until the upload's run has closed (after it, no downstream child can start) and
     * its downstream child too, cancelling a child still running: after this no transcode
     * of the upload is scheduled (one already writing finds the tombstone and removes its
     * own output).
     */
    async awaitUploadRunsClosed(a: { uploadId: string; uploadWorkflowId: string }): Promise<{ downstreamCancelled: boolean }> {
      const ctx = Context.current();
      const { client } = ctx;
      const running = async (workflowId: string) => {
        try {
          return (await client.workflow.getHandle(workflowId).describe()).status.name === 'RUNNING';
        } catch (err) {
          if (err instanceof WorkflowNotFoundError) return false;
          throw err;
        }
      };
      while (await running(a.uploadWorkflowId)) {
        ctx.heartbeat('waiting for the upload run');
        await sleep(POLL_MS, undefined, { signal: ctx.cancellationSignal });
      }
      const downstream = workflowIds.downstream(a.uploadId);
      let downstreamCancelled = false;
      while (await running(downstream)) {
        if (!downstreamCancelled) await client.workflow.getHandle(downstream).cancel();
        downstreamCancelled = true;
        ctx.heartbeat('waiting for the downstream child to close');
        await sleep(POLL_MS, undefined, { signal: ctx.cancellationSignal });
      }
      return { downstreamCancelled };
    },

    /** Deletes every rendition (the rows' objects, and any object under the upload's rendition prefix). */
    async eraseRenditions(a: { tenantId: string; uploadId: string }): Promise<{ deleted: number; bytes: number }> {
      const keys = new Set(await allRenditionKeys(pool, a.uploadId));
      // On the target the original is on (an upload row that never was: the instance's store).
      const original = (await findUploadById(pool, a.uploadId))?.storage_key ?? '';
      for await (const o of store.list(renditionPrefix(a.tenantId, a.uploadId, original))) keys.add(o.key);
      let bytes = 0;
      for (const key of keys) bytes += await deleteObject(key);
      await deleteRenditionRows(pool, a.uploadId);
      return { deleted: keys.size, bytes };
    },

    /** Gives up the upload's claim on its object and deletes the bytes when no other upload shares them. */
    async releaseOriginal(a: { uploadId: string }): Promise<{ objectDeleted: boolean; bytes: number }> {
      const released = await releaseObject(pool, a.uploadId);
      if (!released.unused) return { objectDeleted: false, bytes: 0 };
      return { objectDeleted: true, bytes: await deleteObject(released.storageKey) };
    },

    /** Destroys the data keys of a run that made no upload (a canceled import): from now on its history is ciphertext nobody opens. */
    async eraseRunKeys(a: { uploadId: string; uploadWorkflowId: string }): Promise<{ erasedAt: string }> {
      await destroyPayloadKeys(pool, uploadScopes(a.uploadId, a.uploadWorkflowId));
      return { erasedAt: new Date().toISOString() };
    },

    /** Scrubs the personal metadata; a replay of the upload's key now answers 410 upload_deleted. */
    /** Opens the restore window; when it ends (ISO), or null when the upload is not tombstoned. */
    async openRestoreWindow(a: { uploadId: string; graceSeconds: number }): Promise<string | null> {
      return (await openRestoreWindow(pool, a.uploadId, a.graceSeconds))?.toISOString() ?? null;
    },

    /** Takes the deletion back: the upload as it was, with its upload.restored event; null when no window is open. */
    async restoreUpload(a: { uploadId: string }): Promise<{ restoredAt: string; event: WebhookEvent } | null> {
      const restored = await restoreUpload(pool, a.uploadId, (row) => {
        const restoredAt = row.restored_at.toISOString();
        const type = 'upload.restored' as const;
        return {
          id: numberedEventId(a.uploadId, type, row.restores),
          type,
          payload: eventBody({ type, data: { uploadId: a.uploadId, restoredAt } }, restoredAt),
        };
      });
      if (!restored) return null;
      const body = JSON.parse(restored.payload) as { data: Record<string, unknown> };
      const event: WebhookEvent = {
        id: restored.eventId,
        type: 'upload.restored',
        tenantId: restored.tenantId,
        uploadId: a.uploadId,
        data: body.data,
      };
      return { restoredAt: restored.restoredAt.toISOString(), event };
    },

    /** Closes the window for the erasure; `held` while a legal hold keeps the upload. */
    async closeRestoreWindow(a: { uploadId: string }): Promise<'closed' | 'held'> {
      return closeRestoreWindow(pool, a.uploadId);
    },

    async scrubUpload(a: { uploadId: string; reason: DeletionReason }): Promise<{ deletedAt: string; erasedAt: string }> {
      const gone = rejectionAnswer('upload_deleted', 'This upload was deleted; its key is not reused for a new upload until it expires.', {
        uploadId: a.uploadId,
      });
      const r = await scrubUpload(pool, a.uploadId, gone);
      if (r.first) metrics.deletions.inc({ reason: a.reason });
      return { deletedAt: r.deletedAt.toISOString(), erasedAt: r.erasedAt.toISOString() };
    },
  };
}
