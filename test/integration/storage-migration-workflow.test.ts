// The storage migration's run at its own level (the run's one bundle on the shared dev server,
// recording activities in place of the stores): a page's small uploads whose activity fails
// for good are recorded as each is (read by one activity: moved where a lost attempt switched
// it, else failed) while the large ones move in runs of their own; the end is
// recorded with its event and announced once; small uploads move in two lanes of half the
// concurrency; a run started without a webhook schedule (before it was carried) ends as it
// did, with no event. Its two kinds of child on their own: one upload's move, and the release
// of moved sources after the grace, page by page across continue-as-new.
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';

import { releaseMovedSourcesWorkflow, storageMigrationWorkflow, storageMoveWorkflow } from '../../workflows/targets/storage-migration';
import { eventually } from '../helpers/inspect';
import { recorder, useWorkflowWorker } from '../helpers/workflow-worker';
import { migrationWorkflowIds, type StorageMigrationInput } from '../../src/targets/contract';

const { calls, called, record } = recorder();
const PAGE = ['u1', 'u2', 'u3', 'u4', 'u5'];
const SMALL = ['u1', 'u2', 'u3'];
/** The cursors the release activity answers in turn (then null: nothing left). */
let releaseCursors: string[] = [];

const activities = {
  listMigrationPage: record('listMigrationPage', (a: { after: string | null }) => (a.after === null ? PAGE : [])),
  smallMigrationUploads: record('smallMigrationUploads', () => SMALL),
  moveUploads: record('moveUploads', () => {
    throw ApplicationFailure.nonRetryable('the target answered 403 AccessDenied');
  }),
  moveUpload: record('moveUpload', () => ({ outcome: 'moved', reason: null, bytes: 10 })),
  recordMigrationItems: record('recordMigrationItems'),
  recordUnfinishedMoves: record('recordUnfinishedMoves'),
  setMigrationState: record('setMigrationState'),
  finishMigration: record('finishMigration', (a: { migrationId: string; tenantId: string }) => ({
    id: `evt_${a.migrationId.replaceAll('-', '')}_completed`,
    type: 'storage_migration.completed',
    tenantId: a.tenantId,
    uploadId: null,
    timestamp: '2026-12-07T00:00:00.000Z',
    data: { migrationId: a.migrationId, state: 'completed' },
  })),
  releaseMovedSources: record('releaseMovedSources', () => releaseCursors.shift() ?? null),
  listWebhookEndpoints: record('listWebhookEndpoints', () => ['endpoint-1']),
  deliverWebhook: record('deliverWebhook', () => 'delivered'),
};

const workflows = useWorkflowWorker('storage-migration-workflow', activities);

function input(over: Partial<StorageMigrationInput> = {}): StorageMigrationInput {
  return {
    migrationId: randomUUID(),
    tenantId: 't1',
    from: null,
    to: 'target-1',
    concurrency: 2,
    sourceGraceSeconds: 0,
    webhookRetry: { attemptTimeoutSeconds: 5, initialSeconds: 1, coefficient: 2, maxIntervalSeconds: 10, maxAttempts: 3 },
    ...over,
  };
}

async function run(i: StorageMigrationInput) {
  calls.length = 0;
  await workflows.env.client.workflow.execute(storageMigrationWorkflow, {
    taskQueue: workflows.taskQueue,
    workflowId: `storage-migration-test/${i.migrationId}`,
    args: [i],
  });
}

describe('the storage migration run', () => {
  it('records the small uploads as they are when their activity fails for good; the large ones move; the end is announced once', async () => {
    const i = input();
    await run(i);
    // Concurrency 2: two lanes of one, three activities for the three small ones, each failed page read and recorded, with the store's words.
    expect(called('moveUploads').map((c) => c.args[0].uploadIds)).toEqual([['u1'], ['u2'], ['u3']]);
    expect(
      called('recordUnfinishedMoves')
        .map((c) => [c.args[0].uploadIds, c.args[0].reason, c.args[0].to])
        .sort(),
    ).toEqual(SMALL.map((id) => [[id], 'the target answered 403 AccessDenied', 'target-1']));
    const recorded = called('recordMigrationItems').flatMap((c) => c.args[0].items);
    expect(recorded.filter((r) => r.outcome === 'failed')).toEqual([]);
    expect(
      recorded
        .filter((r) => r.outcome === 'moved')
        .map((r) => r.uploadId)
        .sort(),
    ).toEqual(['u4', 'u5']);
    expect(
      called('moveUpload')
        .map((c) => c.args[0].uploadId)
        .sort(),
    ).toEqual(['u4', 'u5']);
    // The end: recorded with its event (not the bare state), then the event to each endpoint.
    expect(called('finishMigration').map((c) => c.args[0])).toEqual([{ migrationId: i.migrationId, tenantId: 't1', cancelled: false }]);
    expect(called('setMigrationState')).toEqual([]);
    await eventually(async () => called('deliverWebhook').length === 1 && called('releaseMovedSources').length === 1, 30_000);
    expect(called('deliverWebhook')[0]!.args[0]).toMatchObject({
      endpointId: 'endpoint-1',
      event: { type: 'storage_migration.completed', uploadId: null, data: { migrationId: i.migrationId } },
    });
  });

  it('moves small uploads in two lanes of half its concurrency: never more than its concurrency at once', async () => {
    await run(input({ concurrency: 4 }));
    expect(called('moveUploads').map((c) => c.args[0].uploadIds)).toEqual([['u1', 'u2'], ['u3']]);
    // Its abandoned runs (the announcement, the release) finish before the next test counts calls.
    await eventually(async () => called('deliverWebhook').length === 1 && called('releaseMovedSources').length === 1, 30_000);
  });

  it('a run started without the webhook schedule ends as before: the state alone, no event', async () => {
    const i = input({ webhookRetry: undefined });
    await run(i);
    expect(called('setMigrationState').map((c) => c.args[0])).toEqual([{ migrationId: i.migrationId, state: 'completed' }]);
    expect(called('finishMigration')).toEqual([]);
    await eventually(async () => called('releaseMovedSources').length === 1, 30_000);
    expect(called('deliverWebhook')).toEqual([]);
  });

  it('moves one upload in a run of its own: the move activity once, its answer the run’s', async () => {
    calls.length = 0;
    const uploadId = randomUUID();
    const result = await workflows.env.client.workflow.execute(storageMoveWorkflow, {
      taskQueue: workflows.taskQueue,
      workflowId: `storage-move-test/${uploadId}`,
      args: [{ tenantId: 't1', uploadId, from: null, to: 'target-1' }],
    });
    expect(result).toEqual({ outcome: 'moved', reason: null, bytes: 10 });
    expect(called('moveUpload').map((c) => c.args[0])).toEqual([{ tenantId: 't1', uploadId, from: null, to: 'target-1' }]);
  });

  it('releases the moved sources after the grace, page by page, carrying its cursor into a new run after 10 pages', async () => {
    calls.length = 0;
    const migrationId = randomUUID();
    const cursors = Array.from({ length: 11 }, (_, i) => `c${i + 1}`);
    releaseCursors = [...cursors];
    const handle = await workflows.env.client.workflow.start(releaseMovedSourcesWorkflow, {
      taskQueue: workflows.taskQueue,
      workflowId: migrationWorkflowIds.releaseSources(migrationId),
      args: [{ migrationId, delaySeconds: 1 }],
    });
    await handle.result();
    const asked = called('releaseMovedSources').map((c) => c.args[0]);
    expect(asked.map((a) => a.after)).toEqual([null, ...cursors]);
    expect(asked.every((a) => a.migrationId === migrationId && a.limit === 100)).toBe(true);
    // The first run waited out the grace and continued as new; the second, given its cursor, did not wait again.
    const first = await workflows.env.client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).fetchHistory();
    const events = first.events ?? [];
    expect(events.filter((e) => e.timerStartedEventAttributes)).toHaveLength(1);
    expect(events.some((e) => e.workflowExecutionContinuedAsNewEventAttributes)).toBe(true);
    const last = await handle.fetchHistory();
    expect((last.events ?? []).filter((e) => e.timerStartedEventAttributes)).toHaveLength(0);
  });
});
