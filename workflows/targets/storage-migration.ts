// Moving uploads between storage targets. A migration (`storage-migration/{id}`) pages through
// the uploads on its source: a page's small ones moved together by one activity, each other one
// in a run of its own (`move/{uploadId}`: one move of an upload at a time, whichever migration
// asks), a few at a time; each outcome is recorded once. Either way the rows switch only if the
// upload is still where the move found it, so two moves of one upload cannot both take it.
// Pause and cancel (the batch control update) let the moves under way finish: an upload is
// moved whole or not at all. A moved upload's sources are deleted by a run of their own once
// the URLs signed before the migration's moves have expired (`release-sources/{migrationId}`,
// started as the migration ends and abandoned by it).
import {
  ActivityFailure,
  ChildWorkflowFailure,
  ParentClosePolicy,
  allHandlersFinished,
  condition,
  continueAsNew,
  executeChild,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { Activities } from '../../activities';
import { controlBatchUpdate } from '../../src/temporal/definitions';

import { JOB_STEP_OPTIONS } from '../windows';
import { inWindows } from '../../src/temporal/in-windows';
import { startAnnouncing } from '../announce';
import {
  migrationPatches,
  migrationWorkflowIds,
  type MigrationOutcome,
  type ReleaseSourcesInput,
  type StorageMigrationInput,
  type StorageMoveInput,
  type StorageMoveResult,
} from '../../src/targets/contract';

const local = proxyLocalActivities<Activities>(JOB_STEP_OPTIONS);
// A store away for a while is waited out (about half an hour of retries), then the upload's move fails.
const moves = proxyActivities<Activities>({
  startToCloseTimeout: '6 hours',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', maximumAttempts: 40 },
});
// A page of small uploads: heartbeats as each is moved; a store away is waited out as for one.
const batchMoves = proxyActivities<Activities>({
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', maximumAttempts: 40 },
});
// A worker lost mid-page is noticed by the missed heartbeat, not after the whole page's bound.
const releases = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', maximumInterval: '1 minute' },
});

/** Uploads whose original is at most this are moved a page at a time, in one activity. */
const SMALL_UPLOAD_BYTES = 8 * 1024 * 1024;
/** Uploads listed per page, and pages per run before it continues as new. */
const PAGE = 50;
const PAGES_PER_RUN = 10;
/** Moved uploads whose sources one release activity deletes. */
const RELEASE_PAGE = 100;

export async function storageMigrationWorkflow(input: StorageMigrationInput): Promise<void> {
  let paused = input.paused ?? false;
  let cancelled = input.cancelled ?? false;
  setHandler(controlBatchUpdate, async (action) => {
    if (cancelled) return;
    if (action === 'cancel') cancelled = true;
    else {
      paused = action === 'pause';
      await local.setMigrationState({ migrationId: input.migrationId, state: paused ? 'paused' : 'running' });
    }
  });
  let after = input.after ?? null;
  for (let page = 0; !cancelled; page++) {
    const ids = await local.listMigrationPage({ migrationId: input.migrationId, after, limit: PAGE });
    if (!ids.length) break;
    setCurrentDetails(`moving a page of ${ids.length} uploads after ${after ?? 'the start'}`);
    // Small uploads go together (a run each would cost more than their bytes),
    const small = patched(migrationPatches.migrationMovesSmallInBatches)
      ? await local.smallMigrationUploads({ uploadIds: ids, maxBytes: SMALL_UPLOAD_BYTES })
      : [];
    // At most `concurrency` of them under way, so a pause or a cancel still lets no more than that
    // finish: in two activities of half as many, one starting as the other finishes its tail.
    const lanes = patched(migrationPatches.migrationSmallInTwoLanes) && input.concurrency > 1 ? 2 : 1;
    const width = Math.ceil(input.concurrency / lanes);
    const chunks: string[][] = [];
    for (let at = 0; at < small.length; at += width) chunks.push(small.slice(at, at + width));
    await inWindows(chunks, lanes, async (chunk) => {
      await condition(() => !paused || cancelled);
      if (!cancelled) await moveSmall(input, chunk);
    });
    // The others each in a run of their own; each outcome is recorded as it comes, so the progress moves with the uploads.
    await inWindows(small.length ? ids.filter((id) => !small.includes(id)) : ids, input.concurrency, async (id) => {
      await condition(() => !paused || cancelled);
      if (!cancelled) await local.recordMigrationItems({ migrationId: input.migrationId, items: [await moveOne(input, id)] });
    });
    after = ids.at(-1)!;
    if (page + 1 >= PAGES_PER_RUN || workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof storageMigrationWorkflow>({ ...input, after, paused, cancelled });
    }
  }
  // What moved leaves its source behind until the grace has passed, in a run of its own.
  await startChild(releaseMovedSourcesWorkflow, {
    workflowId: migrationWorkflowIds.releaseSources(input.migrationId),
    parentClosePolicy: ParentClosePolicy.ABANDON,
    args: [{ migrationId: input.migrationId, delaySeconds: input.sourceGraceSeconds }],
  });
  if (patched(migrationPatches.migrationAnnouncesItsEnd) && input.webhookRetry) {
    // The end and its event commit together; the event is announced in a run of its own (its ID keeps it to one).
    const event = await local.finishMigration({ migrationId: input.migrationId, tenantId: input.tenantId, cancelled });
    if (event) await startAnnouncing({ tenantId: input.tenantId, event, timestamp: event.timestamp, webhookRetry: input.webhookRetry });
  } else await local.setMigrationState({ migrationId: input.migrationId, state: cancelled ? 'cancelled' : 'completed' });
  await condition(allHandlersFinished);
}

/**
 * A page of small uploads moved by one activity, which records their outcomes; when it fails for
 * good, those it did not record are recorded as they are: moved where a lost attempt switched
 * them, else failed.
 */
async function moveSmall(input: StorageMigrationInput, uploadIds: string[]): Promise<void> {
  const { migrationId, tenantId, from, to, concurrency } = input;
  try {
    await batchMoves.moveUploads({ migrationId, tenantId, from, to, uploadIds, concurrency });
  } catch (err) {
    const cause = err instanceof ActivityFailure ? err.cause : err;
    const reason = cause instanceof Error ? cause.message : String(cause);
    // Outcomes are recorded once: those the activity recorded stay.
    if (patched(migrationPatches.migrationFailureReadsAddresses)) {
      await local.recordUnfinishedMoves({ migrationId, tenantId, from, to, uploadIds, concurrency, reason });
      return;
    }
    await local.recordMigrationItems({
      migrationId,
      items: uploadIds.map((uploadId) => ({ uploadId, outcome: 'failed', reason, bytes: 0 })),
    });
  }
}

async function moveOne(input: StorageMigrationInput, uploadId: string): Promise<MigrationOutcome> {
  try {
    const r = await executeChild(storageMoveWorkflow, {
      workflowId: migrationWorkflowIds.storageMove(uploadId),
      // A later migration may move it again (elsewhere); one at a time.
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      staticSummary: `Move upload ${uploadId} to ${input.to ?? 'the instance store'}`,
      args: [{ tenantId: input.tenantId, uploadId, from: input.from, to: input.to }],
    });
    return { uploadId, ...r };
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError)
      return { uploadId, outcome: 'skipped', reason: 'another move of this upload is under way', bytes: 0 };
    const cause = err instanceof ChildWorkflowFailure ? err.cause : err;
    return { uploadId, outcome: 'failed', reason: cause instanceof Error ? cause.message : String(cause), bytes: 0 };
  }
}

/** One upload moved whole, or not at all. */
export async function storageMoveWorkflow(input: StorageMoveInput): Promise<StorageMoveResult> {
  return moves.moveUpload(input);
}

/** Deletes what the migration's moves left at the source, once no URL signed before them can read it. */
export async function releaseMovedSourcesWorkflow(input: ReleaseSourcesInput): Promise<void> {
  if (!input.after && input.delaySeconds > 0) await sleep(input.delaySeconds * 1000);
  let after = input.after ?? null;
  for (let page = 0; ; page++) {
    const next = await releases.releaseMovedSources({ migrationId: input.migrationId, after, limit: RELEASE_PAGE });
    if (next === null) return;
    after = next;
    if (page + 1 >= PAGES_PER_RUN || workflowInfo().continueAsNewSuggested)
      await continueAsNew<typeof releaseMovedSourcesWorkflow>({ ...input, after });
  }
}
