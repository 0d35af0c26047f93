// The re-processing workflows at their own level: a job runs one child per upload, at most
// `concurrency` at once, records each outcome and finishes completed. A child runs the
// version's rendition steps and switches the upload to them; a failed step leaves nothing of
// the version (discarded); an upload that serves a newer version is superseded. A second job
// of the same version finds each child done: one per (upload, version), ever. A child started
// on its own does the same.
import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';

import { reprocessJobWorkflow, reprocessUploadWorkflow } from '../../workflows/reprocess/reprocess';
import { recorder, useWorkflowWorker } from '../helpers/workflow-worker';
import { reprocessWorkflowIds, type ReprocessJobInput } from '../../src/reprocess/contract';

const { called, record } = recorder();
const step = { type: 'image.variants', variants: [{ name: 'thumb', width: 100, format: 'webp' }], metadata: 'strip', autoOrient: true };
/** What each upload of the job is: done, skipped, failing at its step, or serving a newer version. */
const kinds = new Map<string, 'done' | 'skip' | 'fails' | 'newer'>();
let running = 0;
let mostAtOnce = 0;
const activities = {
  listReprocessPage: record('listReprocessPage', ({ jobId, after }: { jobId: string; after: string | null }) =>
    after ? [] : [...kinds.keys()].filter((id) => id.startsWith(jobId.slice(0, 8))),
  ),
  planReprocess: record('planReprocess', ({ uploadId }: { uploadId: string }) => {
    if (kinds.get(uploadId) === 'skip') return { skip: 'upload deleted or rejected' };
    return {
      upload: {
        storageKey: `o/${uploadId}`,
        contentType: 'image/png',
        bytes: 4,
        sha256: 'a'.repeat(64),
        fileName: null,
        createdAt: '2026-12-06T00:00:00.000Z',
      },
      steps: [[0, step]],
    };
  }),
  runStep: record('runStep', async ({ upload }: { upload: { uploadId: string } }) => {
    mostAtOnce = Math.max(mostAtOnce, ++running);
    await new Promise((r) => setTimeout(r, 50));
    running--;
    if (kinds.get(upload.uploadId) === 'fails') return { status: 'failed', reason: 'sharp: corrupt header', media: null, renditions: [] };
    return {
      status: 'succeeded',
      reason: null,
      media: { width: 4 },
      renditions: [{ name: 'thumb', storageKey: 'r/thumb', contentType: 'image/webp', bytes: 2, width: 4, height: 3, durationMs: null }],
    };
  }),
  switchRenditions: record('switchRenditions', ({ uploadId }: { uploadId: string }) =>
    kinds.get(uploadId) === 'newer' ? { switched: false, removed: 0, servedVersion: 9 } : { switched: true, removed: 1 },
  ),
  discardVersion: record('discardVersion', () => 1),
  recordReprocessItems: record('recordReprocessItems'),
  finishReprocessJob: record('finishReprocessJob'),
};
const workflows = useWorkflowWorker('reprocess-workflow', activities);

it('runs one child per upload within its concurrency, records each outcome, and a second job finds them done', async () => {
  const jobId = randomUUID();
  const id = (n: number) => `${jobId.slice(0, 8)}-0000-4000-8000-00000000000${n}`;
  kinds.set(id(1), 'done').set(id(2), 'skip').set(id(3), 'fails').set(id(4), 'newer').set(id(5), 'done');
  const input: ReprocessJobInput = {
    jobId,
    tenantId: 't1',
    pipeline: 'photos',
    version: 2,
    concurrency: 2,
    transcodeQueue: workflows.taskQueue,
    webhookRetry: { initialSeconds: 1, coefficient: 2, maxIntervalSeconds: 1, maxAttempts: 1, attemptTimeoutSeconds: 5 },
  };
  await workflows.env.client.workflow.execute(reprocessJobWorkflow, {
    taskQueue: workflows.taskQueue,
    workflowId: reprocessWorkflowIds.reprocessJob(jobId),
    args: [input],
  });

  const recorded = called('recordReprocessItems').filter((c) => c.args[0].jobId === jobId);
  expect(recorded).toHaveLength(1);
  const outcomes = Object.fromEntries(
    recorded[0]!.args[0].items.map((i: { uploadId: string; outcome: string }) => [i.uploadId, i.outcome]),
  );
  expect(outcomes).toEqual({ [id(1)]: 'done', [id(2)]: 'skipped', [id(3)]: 'failed', [id(4)]: 'superseded', [id(5)]: 'done' });
  expect(recorded[0]!.args[0].items.find((i: { uploadId: string }) => i.uploadId === id(3)).reason).toContain('sharp: corrupt header');
  expect(
    called('finishReprocessJob')
      .filter((c) => c.args[0].jobId === jobId)
      .map((c) => c.args[0].state),
  ).toEqual(['completed']);
  expect(mostAtOnce).toBeLessThanOrEqual(2);
  // What the failed and the superseded child made is discarded; the done ones' is served.
  expect(
    called('discardVersion')
      .map((c) => c.args[0].uploadId)
      .sort(),
  ).toEqual([id(3), id(4)].sort());
  expect(
    called('switchRenditions')
      .map((c) => c.args[0].uploadId)
      .sort(),
  ).toEqual([id(1), id(4), id(5)].sort());

  // The same version again: every completed child is found done, none runs a step again.
  const stepsBefore = called('runStep').length;
  const again = randomUUID();
  await workflows.env.client.workflow.execute(reprocessJobWorkflow, {
    taskQueue: workflows.taskQueue,
    workflowId: reprocessWorkflowIds.reprocessJob(again),
    args: [{ ...input, jobId: `${jobId.slice(0, 8)}${again.slice(8)}` }],
  });
  const second = called('recordReprocessItems').at(-1)!.args[0].items as { uploadId: string; outcome: string; reason: string }[];
  expect(second.map((i) => i.outcome)).toEqual(['skipped', 'skipped', 'skipped', 'skipped', 'skipped']);
  expect(second.find((i) => i.uploadId === id(1))!.reason).toBe('already re-processed with version 2');
  expect(called('runStep').length).toBe(stepsBefore);
});

it('re-processes one upload in a run of its own: a failed step leaves nothing of the version, a done one switches to it', async () => {
  const jobId = randomUUID();
  const failing = `${jobId.slice(0, 8)}-0000-4000-8000-000000000011`;
  const done = `${jobId.slice(0, 8)}-0000-4000-8000-000000000012`;
  kinds.set(failing, 'fails').set(done, 'done');
  const child = (uploadId: string) =>
    workflows.env.client.workflow.execute(reprocessUploadWorkflow, {
      taskQueue: workflows.taskQueue,
      workflowId: `reprocess-upload-test/${uploadId}`,
      args: [
        {
          tenantId: 't1',
          uploadId,
          pipeline: 'photos',
          version: 3,
          transcodeQueue: workflows.taskQueue,
          webhookRetry: { initialSeconds: 1, coefficient: 2, maxIntervalSeconds: 1, maxAttempts: 1, attemptTimeoutSeconds: 5 },
        },
      ],
    });
  expect(await child(failing)).toEqual({ outcome: 'failed', reason: 'sharp: corrupt header' });
  expect(
    called('discardVersion')
      .filter((c) => c.args[0].uploadId === failing)
      .map((c) => c.args[0]),
  ).toEqual([{ uploadId: failing, pipeline: 'photos', version: 3 }]);
  expect(called('switchRenditions').filter((c) => c.args[0].uploadId === failing)).toEqual([]);
  expect(await child(done)).toEqual({ outcome: 'done', reason: null });
  expect(called('switchRenditions').filter((c) => c.args[0].uploadId === done)).toHaveLength(1);
  expect(called('discardVersion').filter((c) => c.args[0].uploadId === done)).toEqual([]);
});
