// The deletion workflows at their own level: the real workflow code on the shared dev server,
// recording activities in place of the database and the store. An upload's deletion erases
// in order and announces upload.deleted in a run of its own; an unknown upload fails
// not_found having erased nothing; a canceled import's erasure destroys its run's keys once
// the run has ended.
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { failureTypes, workflowIds } from '../../src/temporal/names';
import { purgeUploadUpdate, restoreUploadUpdate, type DeletionInput } from '../../src/temporal/definitions';
import { deletionWorkflow, importErasureWorkflow } from '../../workflows/deletion';
import { eventually } from '../helpers/inspect';
import { recorder, useWorkflowWorker } from '../helpers/workflow-worker';

const { calls, called, record } = recorder();
const known = new Set<string>();
/** Uploads whose window a hold keeps open: how many more times closing it finds the hold. */
const heldAtClose = new Map<string, number>();
const activities = {
  openRestoreWindow: record('openRestoreWindow', () => '2026-12-06T01:00:00.000Z'),
  restoreUpload: record('restoreUpload', ({ uploadId }: { uploadId: string }) => ({
    restoredAt: '2026-12-06T00:30:00.000Z',
    event: { id: `evt_${uploadId.replaceAll('-', '')}_restored_1`, type: 'upload.restored', tenantId: 't1', uploadId, data: { uploadId } },
  })),
  closeRestoreWindow: record('closeRestoreWindow', ({ uploadId }: { uploadId: string }) => {
    const left = heldAtClose.get(uploadId) ?? 0;
    heldAtClose.set(uploadId, left - 1);
    return left > 0 ? 'held' : 'closed';
  }),
  tombstoneUpload: record('tombstoneUpload', ({ uploadId }: { uploadId: string }) =>
    known.has(uploadId) ? { uploadWorkflowId: `upload/t1/key-${uploadId}`, deletedAt: '2026-12-06T00:00:00.000Z' } : null,
  ),
  awaitUploadRunsClosed: record('awaitUploadRunsClosed', () => ({ downstreamCancelled: false })),
  eraseRenditions: record('eraseRenditions', () => ({ deleted: 2, bytes: 300 })),
  releaseOriginal: record('releaseOriginal', () => ({ objectDeleted: true, bytes: 1000 })),
  scrubUpload: record('scrubUpload', () => ({ deletedAt: '2026-12-06T00:00:00.000Z', erasedAt: '2026-12-06T00:00:01.000Z' })),
  listWebhookEndpoints: record('listWebhookEndpoints', () => ['ep-1']),
  deliverWebhook: record('deliverWebhook', () => 'delivered'),
  eraseRunKeys: record('eraseRunKeys', () => ({ erasedAt: '2026-12-06T00:00:02.000Z' })),
};
const workflows = useWorkflowWorker('deletion-workflow', activities);

const input = (uploadId: string): DeletionInput => ({
  tenantId: 't1',
  uploadId,
  reason: 'request',
  webhookRetry: { initialSeconds: 1, coefficient: 2, maxIntervalSeconds: 1, maxAttempts: 1, attemptTimeoutSeconds: 5 },
});
const forUpload = (uploadId: string) => calls.filter((c) => JSON.stringify(c.args).includes(uploadId)).map((c) => c.name);
const ERASURE = ['awaitUploadRunsClosed', 'eraseRenditions', 'releaseOriginal', 'scrubUpload'];

describe('deletionWorkflow with a restore window', () => {
  const start = (uploadId: string, graceSeconds: number) => {
    known.add(uploadId);
    return workflows.env.client.workflow.start(deletionWorkflow, {
      taskQueue: workflows.taskQueue,
      workflowId: workflowIds.deletion(uploadId),
      args: [{ ...input(uploadId), graceSeconds }],
    });
  };

  it('a restore within the window brings it back, once, and erases nothing', async () => {
    const uploadId = randomUUID();
    const run = await start(uploadId, 60);
    const [first, second] = await Promise.all([run.executeUpdate(restoreUploadUpdate), run.executeUpdate(restoreUploadUpdate)]);
    expect(first).toEqual({ uploadId, restoredAt: '2026-12-06T00:30:00.000Z' });
    expect(second).toEqual(first);
    expect(await run.result()).toEqual(first);
    expect(forUpload(uploadId).filter((n) => n !== 'listWebhookEndpoints' && n !== 'deliverWebhook')).toEqual([
      'tombstoneUpload',
      'openRestoreWindow',
      'restoreUpload',
    ]);
    await eventually(
      async () => called('deliverWebhook').some((c) => c.args[0].event.id === `evt_${uploadId.replaceAll('-', '')}_restored_1`),
      30_000,
    );
  });

  it('the window ends: erased; a restore then is refused', async () => {
    const uploadId = randomUUID();
    const run = await start(uploadId, 1);
    expect(await run.result()).toMatchObject({ uploadId, erasedAt: '2026-12-06T00:00:01.000Z' });
    expect(forUpload(uploadId).slice(0, 3)).toEqual(['tombstoneUpload', 'openRestoreWindow', 'closeRestoreWindow']);
    expect(await run.executeUpdate(restoreUploadUpdate).catch((e) => e)).toBeInstanceOf(Error);
    expect(forUpload(uploadId)).not.toContain('restoreUpload');
  });

  it('a purge ends the window at once; a restore after it is refused as the window closed', async () => {
    const uploadId = randomUUID();
    const run = await start(uploadId, 3600);
    await run.executeUpdate(purgeUploadUpdate);
    const refused = await run.executeUpdate(restoreUploadUpdate).catch((e) => e);
    expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
    expect((refused as WorkflowUpdateFailedError).cause).toMatchObject({ type: failureTypes.windowClosed });
    expect(await run.result()).toMatchObject({ uploadId, erasedAt: expect.any(String) });
    for (const step of ERASURE) expect(forUpload(uploadId)).toContain(step);
  });

  it('a restore raced against the window end has one outcome each time: restored and whole, or refused and erased', async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const uploadId = randomUUID();
        const run = await start(uploadId, 1);
        await new Promise((r) => setTimeout(r, 850 + i * 50));
        const restored = await run.executeUpdate(restoreUploadUpdate).then(
          () => true,
          () => false,
        );
        const result = await run.result();
        const steps = forUpload(uploadId);
        if (restored) {
          expect(result).toMatchObject({ restoredAt: expect.any(String) });
          expect(steps).toContain('restoreUpload');
          for (const step of ERASURE) expect(steps).not.toContain(step);
        } else {
          expect(result).toMatchObject({ erasedAt: expect.any(String) });
          expect(steps).not.toContain('restoreUpload');
          for (const step of ERASURE) expect(steps).toContain(step);
        }
        return restored;
      }),
    );
    expect(outcomes).toHaveLength(8);
  });

  it('a legal hold at the window end keeps the upload until it is released', async () => {
    const uploadId = randomUUID();
    heldAtClose.set(uploadId, 1);
    const run = await start(uploadId, 1);
    expect(await run.result()).toMatchObject({ uploadId, erasedAt: expect.any(String) });
    expect(forUpload(uploadId).filter((n) => n === 'closeRestoreWindow')).toHaveLength(2);
  });
});

describe('deletionWorkflow', () => {
  it('erases in order (tombstone, runs closed, renditions, original, scrub) and answers what it erased', async () => {
    const uploadId = randomUUID();
    known.add(uploadId);
    const result = await workflows.env.client.workflow.execute(deletionWorkflow, {
      taskQueue: workflows.taskQueue,
      workflowId: workflowIds.deletion(uploadId),
      args: [input(uploadId)],
    });
    expect(result).toEqual({
      uploadId,
      deletedAt: '2026-12-06T00:00:00.000Z',
      erasedAt: '2026-12-06T00:00:01.000Z',
      objectDeleted: true,
      renditionsDeleted: 2,
      bytesErased: 1300,
    });
    expect(forUpload(uploadId).slice(0, 5)).toEqual([
      'tombstoneUpload',
      'awaitUploadRunsClosed',
      'eraseRenditions',
      'releaseOriginal',
      'scrubUpload',
    ]);
    expect(called('awaitUploadRunsClosed').find((c) => c.args[0].uploadId === uploadId)!.args[0]).toEqual({
      uploadId,
      uploadWorkflowId: `upload/t1/key-${uploadId}`,
    });
    // upload.deleted goes out from announce/{eventId}, a run of its own the deletion left behind.
    await eventually(async () => called('deliverWebhook').some((c) => c.args[0].event.uploadId === uploadId), 30_000);
    const delivery = called('deliverWebhook').find((c) => c.args[0].event.uploadId === uploadId)!.args[0];
    expect(delivery).toMatchObject({ endpointId: 'ep-1', event: { type: 'upload.deleted', data: { uploadId, reason: 'request' } } });
    const announce = workflows.env.client.workflow.getHandle(workflowIds.announce(delivery.event.id));
    expect(await announce.result()).toEqual({ 'upload.deleted → ep-1': 'delivered' });
  });

  it('fails not_found for an upload the tenant does not have, erasing nothing', async () => {
    const uploadId = randomUUID();
    const err = await workflows.env.client.workflow
      .execute(deletionWorkflow, { taskQueue: workflows.taskQueue, workflowId: workflowIds.deletion(uploadId), args: [input(uploadId)] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect((err as WorkflowFailedError).cause).toBeInstanceOf(ApplicationFailure);
    expect((err as WorkflowFailedError).cause).toMatchObject({ type: failureTypes.notFound, nonRetryable: true });
    expect(forUpload(uploadId)).toEqual(['tombstoneUpload']);
  });
});

describe('importErasureWorkflow', () => {
  it("waits for the canceled import's run to end, then destroys its keys", async () => {
    const uploadId = randomUUID();
    const uploadWorkflowId = `upload/t1/import-${uploadId}`;
    const result = await workflows.env.client.workflow.execute(importErasureWorkflow, {
      taskQueue: workflows.taskQueue,
      workflowId: workflowIds.deletion(uploadId),
      args: [{ uploadId, uploadWorkflowId }],
    });
    expect(result).toEqual({ erasedAt: '2026-12-06T00:00:02.000Z' });
    expect(forUpload(uploadId)).toEqual(['awaitUploadRunsClosed', 'eraseRunKeys']);
    expect(called('eraseRunKeys').at(-1)!.args[0]).toEqual({ uploadId, uploadWorkflowId });
  });
});
