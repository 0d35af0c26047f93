// The deletion of one upload (ID `delete/{uploadId}`; a repeated or concurrent delete
// attaches to it): tombstone first, then wait for the upload's own runs (cancelling its
// downstream child), delete the renditions and the original (shared bytes only when no
// other upload holds them), scrub the personal metadata, and announce upload.deleted once,
// in a run of its own (`announce/{eventId}`), so the deletion's answer waits for no receiver.
import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { failureTypes, patches, searchAttributes } from '../src/temporal/names';
import type { Activities } from '../activities';
import { eventId, type WebhookEvent } from '../src/downstream/events';
import {
  purgeUploadUpdate,
  restoreUploadUpdate,
  type DeletionInput,
  type DeletionResult,
  type ImportErasureInput,
  type RestoredUpload,
} from '../src/temporal/definitions';
import { announcer, startAnnouncing } from './announce';
import { stepLabels } from '../src/temporal/step-labels';

// The erasure steps are short database and store calls: as local activities they skip two
// task-queue round trips each (a deletion is otherwise several times an upload's CPU).
const step = (summary: string, startToCloseTimeout = '1 minute') =>
  proxyLocalActivities<Activities>({
    summary,
    startToCloseTimeout,
    localRetryThreshold: '2 seconds',
    retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
  });
const { listWebhookEndpoints } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

const { awaitUploadRunsClosed } = proxyActivities<Activities>({
  summary: stepLabels.awaitUploadRunsClosed,
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

/** A canceled import's erasure: nothing was stored, so only its run's history is left to seal for good. */
export async function importErasureWorkflow({ uploadId, uploadWorkflowId }: ImportErasureInput): Promise<{ erasedAt: string }> {
  setCurrentDetails('waiting for the canceled import run to end');
  await awaitUploadRunsClosed({ uploadId, uploadWorkflowId });
  const erased = await step(stepLabels.eraseRunKeys).eraseRunKeys({ uploadId, uploadWorkflowId });
  setCurrentDetails('erased: the run holds only ciphertext');
  return erased;
}

export async function deletionWorkflow(input: DeletionInput): Promise<DeletionResult | RestoredUpload> {
  const { uploadId, tenantId } = input;
  const window = input.graceSeconds ? restoreWindow(input) : undefined;
  const tombstone = await step(stepLabels.tombstoneUpload).tombstoneUpload({ tenantId, uploadId });
  if (!tombstone) throw ApplicationFailure.nonRetryable(`No upload ${uploadId} for this tenant`, failureTypes.notFound);
  // A hold placed after the request was let through: nothing is deleted (a later run may be, once it is released).
  if ('held' in tombstone) throw ApplicationFailure.nonRetryable(`Upload ${uploadId} is under a legal hold`, failureTypes.legalHold);
  if (window) {
    const restored = await window();
    if (restored) return restored;
  }

  setCurrentDetails('waiting for the upload run and its downstream child');
  await awaitUploadRunsClosed({ uploadId, uploadWorkflowId: tombstone.uploadWorkflowId });

  setCurrentDetails('erasing renditions and the original');
  const renditions = await step(stepLabels.eraseRenditions, '10 minutes').eraseRenditions({ tenantId, uploadId });
  const original = await step(stepLabels.releaseOriginal, '10 minutes').releaseOriginal({
    uploadId,
  });
  const scrubbed = await step(stepLabels.scrubUpload).scrubUpload({ uploadId, reason: input.reason });

  const event: WebhookEvent = {
    id: eventId(uploadId, 'upload.deleted'),
    type: 'upload.deleted',
    tenantId,
    uploadId,
    data: { uploadId, reason: input.reason, deletedAt: scrubbed.deletedAt, erasedAt: scrubbed.erasedAt },
  };
  if (patched(patches.deletionAnnouncesApart)) {
    // The answer is the erasure's: upload.deleted goes out in its own run, however long its receivers take.
    await startAnnouncing({ tenantId, event, timestamp: scrubbed.erasedAt, webhookRetry: input.webhookRetry }, stepLabels.announceDeleted);
  } else {
    setCurrentDetails('announcing upload.deleted');
    const announce = announcer(await listWebhookEndpoints(tenantId), input.webhookRetry, {});
    await announce(event, scrubbed.erasedAt);
  }
  upsertSearchAttributes([{ key: searchAttributes.phase, value: 'deleted' }]);
  setCurrentDetails(`erased: ${renditions.deleted} renditions, original ${original.objectDeleted ? 'deleted' : 'kept (shared)'}`);
  return {
    uploadId,
    deletedAt: scrubbed.deletedAt,
    erasedAt: scrubbed.erasedAt,
    objectDeleted: original.objectDeleted,
    renditionsDeleted: renditions.deleted,
    bytesErased: renditions.bytes + original.bytes,
  };
}

/**
 * The restore window: the upload stays tombstoned and whole until a restore (an update),
 * a purge (an update) or the window's end. Whichever the run takes first is the outcome:
 * once it has taken one, the other updates are rejected, so a restore racing the window's
 * end is either restored or refused, never both. A legal hold at the end keeps the window
 * (and the bytes) until it is released. The updates' handlers are set before the first
 * step, so one sent as the run starts waits for the window instead of being refused.
 */
function restoreWindow(input: DeletionInput) {
  const { uploadId, tenantId } = input;
  let asked: 'restore' | 'purge' | 'ended' | undefined;
  let restored: RestoredUpload | undefined;
  setHandler(
    restoreUploadUpdate,
    async () => {
      asked ??= 'restore';
      await condition(() => restored !== undefined);
      return restored!;
    },
    {
      validator: () => {
        if (asked !== undefined && asked !== 'restore')
          throw ApplicationFailure.nonRetryable('The restore window has closed', failureTypes.windowClosed);
      },
    },
  );
  setHandler(
    purgeUploadUpdate,
    () => {
      asked ??= 'purge';
    },
    {
      validator: () => {
        if (asked === 'restore') throw ApplicationFailure.nonRetryable('The upload is being restored', failureTypes.windowClosed);
      },
    },
  );
  /** Runs the window once the upload is tombstoned: the restored upload, or undefined for the erasure to go on. */
  return async function wait(): Promise<RestoredUpload | undefined> {
    const until = await step(stepLabels.openRestoreWindow).openRestoreWindow({ uploadId, graceSeconds: input.graceSeconds! });
    setCurrentDetails(`restorable until ${until}`);
    if (!(await condition(() => asked !== undefined, input.graceSeconds! * 1000))) asked = 'ended';
    if (asked === 'restore') {
      const back = await step(stepLabels.restoreUpload).restoreUpload({ uploadId });
      restored = { uploadId, restoredAt: back?.restoredAt ?? new Date().toISOString() };
      if (back)
        await startAnnouncing(
          { tenantId, event: back.event, timestamp: back.restoredAt, webhookRetry: input.webhookRetry },
          stepLabels.announceRestored,
        );
      upsertSearchAttributes([{ key: searchAttributes.phase, value: 'restored' }]);
      await condition(allHandlersFinished);
      return restored;
    }
    for (;;) {
      if ((await step(stepLabels.closeRestoreWindow).closeRestoreWindow({ uploadId })) === 'closed') return undefined;
      setCurrentDetails('held: erased once the legal hold is released');
      await sleep('10 seconds');
    }
  };
}
