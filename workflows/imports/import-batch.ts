// An import batch (ID `import-batch/{batchId}`): its items, a page at a time, each imported by
// one activity (the import door's own path, keyed by batch and item) with at most
// `concurrency` at once. Pausing stops starting items (those under way finish); cancelling
// stops starting them and cancels those under way (each cancels its import, or sees it
// commit; so does an item whose attempt failed as the cancel came), and ends the batch once
// they have, its items not started skipped. The batch continues as new every few pages, so
// its history stays short however many items it has.
import {
  ActivityCancellationType,
  ActivityFailure,
  allHandlersFinished,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { controlBatchUpdate } from '../../src/temporal/definitions';
import { JOB_STEP_OPTIONS } from '../windows';
import { inWindows } from '../../src/temporal/in-windows';
import { stepLabels } from '../../src/temporal/step-labels';
import { importPatches, type ImportBatchInput } from '../../src/imports/contract';

const local = proxyLocalActivities<Activities>(JOB_STEP_OPTIONS);
// An item runs as long as its import: it heartbeats while it waits for the import's answer,
// which is also how it hears of the batch's cancel (the SDK sends heartbeats at most every
// 0.8 × the timeout). A cancelled item is waited for: it records what came of its import.
const ITEM_BOUNDS = {
  startToCloseTimeout: '7 days',
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
} as const;
const items = proxyActivities<Activities>({
  ...ITEM_BOUNDS,
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  summary: stepLabels.importBatchItem,
});
// An S3 source's listing: bounded itself (objects, pages, five minutes), heartbeating each page.
const listing = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 5 },
  summary: stepLabels.listImportBatchSource,
});
// The cancel of an item's import, which it waits for as an item under way does: the same bounds.
const cancelling = proxyActivities<Activities>({ ...ITEM_BOUNDS, summary: stepLabels.cancelImportBatchItem });

function failedOnCancel(err: unknown): boolean {
  return err instanceof ActivityFailure && err.retryState === 'CANCEL_REQUESTED';
}

/** Items listed per page, and pages per run before it continues as new. */
const PAGE = 100;
const PAGES_PER_RUN = 5;

export async function importBatchWorkflow(input: ImportBatchInput): Promise<void> {
  let paused = input.paused ?? false;
  let cancelled = input.cancelled ?? false;
  const underWay = new CancellationScope();
  setHandler(controlBatchUpdate, async (action) => {
    if (cancelled) return;
    if (action === 'cancel') {
      cancelled = true;
      // Batches cancelled before this release let their items under way finish.
      if (patched(importPatches.batchCancelsItemsUnderWay)) underWay.cancel();
    } else paused = action === 'pause';
    if (action !== 'cancel') await local.pauseImportBatch({ batchId: input.batchId, paused });
  });
  // A source that could not be listed has failed the batch (its reason recorded): nothing to import.
  if (input.listSource && !(await underWay.run(() => listing.listImportBatchSource({ batchId: input.batchId })).catch(skipIfCancelled)))
    return;
  if (input.listSource && paused) await local.pauseImportBatch({ batchId: input.batchId, paused });
  let after = input.after ?? 0;
  for (let page = 0; !cancelled; page++) {
    const ns = await local.pendingImportBatchItems({ batchId: input.batchId, after, limit: PAGE });
    if (!ns.length) break;
    await inWindows(ns, input.concurrency, async (n) => {
      await condition(() => !paused || cancelled);
      if (cancelled) return;
      await underWay
        .run(() => items.importBatchItem({ batchId: input.batchId, n }))
        .catch(async (err: unknown) => {
          // An item cancelled while it waited to be retried (past the tenant's imports in flight) never started: skipped at the end.
          if (cancelled && isCancellation(err)) return;
          // An attempt that failed as the cancel reached it (turned away by the quota, or its
          // wait for the import's answer broken, before its heartbeat brought the cancel):
          // Temporal does not retry it. An import it created is cancelled (or its upload
          // recorded, if it was committing); an item that never started is skipped.
          if (cancelled && failedOnCancel(err) && patched(importPatches.batchSkipsItemsFailedOnCancel)) {
            if (patched(importPatches.batchCancelsFailedItemsImport)) await cancelling.cancelImportBatchItem({ batchId: input.batchId, n });
            return;
          }
          throw err;
        });
    });
    after = ns.at(-1)!;
    if (page + 1 >= PAGES_PER_RUN || workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof importBatchWorkflow>({ ...input, listSource: false, after, paused, cancelled });
    }
  }
  await local.finishImportBatch({ batchId: input.batchId, state: cancelled ? 'cancelled' : 'completed' });
  await condition(allHandlersFinished);

  /** A listing the batch's cancel stopped: the batch ends cancelled (true: go on to its end). */
  function skipIfCancelled(err: unknown): boolean {
    if (cancelled && isCancellation(err)) return true;
    throw err;
  }
}
