// The deletion workflows at their own level: the real workflow code on the shared dev server,
// recording activities in place of the database and the store. An upload's deletion erases
// in order and announces upload.deleted in a run of its own; an unknown upload fails
// not_found having erased nothing; a canceled import's erasure destroys its run's keys once
// the run has ended.
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { failureTypes, workflowIds } from '../../src/temporal/names';
import type { DeletionInput } from '../../src/temporal/definitions';
import { deletionWorkflow, importErasureWorkflow } from '../../workflows/deletion';
import { eventually } from '../helpers/inspect';
import { recorder, useWorkflowWorker } from '../helpers/workflow-worker';

const { calls, called, record } = recorder();
const known = new Set<string>();
const activities = {
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
