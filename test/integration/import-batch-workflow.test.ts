// The import batch workflow's cancel at its own level: the real workflow code (the run's one
// bundle) on the shared dev server, with recording activities in place of the importer. An
// item whose attempt fails just as the batch's cancel reaches it (turned away by the tenant's
// imports in flight, or its wait for the import's answer broken, before a heartbeat brought
// the cancel) is not retried by Temporal: the import that attempt may have created is
// cancelled by a step of its own, and the batch still ends cancelled.
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { expect, it } from 'vitest';
import { controlBatchUpdate } from '../../src/temporal/definitions';
import { importBatchWorkflow } from '../../workflows/imports/import-batch';
import { eventually } from '../helpers/inspect';
import { recorder, useWorkflowWorker } from '../helpers/workflow-worker';

const { calls, called, record } = recorder();

/** Lets an item's attempt fail once the test has sent the cancel. */
let cancelSent: () => void = () => {};
const activities = {
  pendingImportBatchItems: record('pendingImportBatchItems', ({ after }: { after: number }) => (after === 0 ? [1] : [])),
  pauseImportBatch: record('pauseImportBatch'),
  finishImportBatch: record('finishImportBatch'),
  cancelImportBatchItem: record('cancelImportBatchItem'),
  importBatchItem: record('importBatchItem', async () => {
    // No heartbeat in between: the attempt fails without having heard the cancel.
    await new Promise<void>((resolve) => (cancelSent = resolve));
    throw ApplicationFailure.create({
      type: 'too_many_imports',
      message: 'This tenant already has 3 imports in flight.',
      nextRetryDelay: 1_000,
    });
  }),
};

const workflows = useWorkflowWorker('import-batch-workflow', activities);

it("ends cancelled when an item fails as the cancel reaches it, the item not retried and its import's cancel asked for", async () => {
  const batchId = randomUUID();
  const handle = await workflows.env.client.workflow.start(importBatchWorkflow, {
    taskQueue: workflows.taskQueue,
    workflowId: `import-batch/${batchId}`,
    args: [{ batchId, concurrency: 1 }],
  });
  await eventually(async () => called('importBatchItem').length === 1, 30_000);
  await handle.executeUpdate(controlBatchUpdate, { args: ['cancel'] });
  cancelSent();
  await handle.result();
  expect(called('finishImportBatch').map((c) => c.args[0])).toEqual([{ batchId, state: 'cancelled' }]);
  expect(called('importBatchItem')).toHaveLength(1);
  expect(called('cancelImportBatchItem').map((c) => c.args[0])).toEqual([{ batchId, n: 1 }]);
  // Before the batch's end, which skips what is still pending.
  expect(calls.findIndex((c) => c.name === 'cancelImportBatchItem')).toBeLessThan(calls.findIndex((c) => c.name === 'finishImportBatch'));
}, 60_000);
