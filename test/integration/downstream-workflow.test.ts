// The downstream workflow at its own level (pipelines on): gates first, then upload.completed,
// then the other steps, then upload.processed; a gate that rejects deletes the bytes and
// announces upload.rejected instead; an async http.call waits for the tenant's decision
// (completeStep), which its validator takes only for such a step.
import { randomUUID } from 'node:crypto';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { failureTypes, workflowIds } from '../../src/temporal/names';
import { completeStepUpdate } from '../../src/temporal/definitions';
import type { DownstreamInput } from '../../src/downstream/types';
import type { PipelineVersion } from '../../src/pipelines/steps';
import type { PipelineStep } from '../../src/pipelines/catalogue';
import { downstreamWorkflow } from '../../workflows/downstream';
import { eventually } from '../helpers/inspect';
import { recorder, useWorkflowWorker } from '../helpers/workflow-worker';

const { calls, called, record } = recorder();
const scan: PipelineStep = { type: 'scan.clamav', gate: true, policy: 'block', unscanned: 'allow' };
const thumbs: PipelineStep = {
  type: 'image.variants',
  variants: [{ name: 'thumb', width: 100, fit: 'inside', format: 'webp' }],
  metadata: 'strip',
  autoOrient: true,
};
const call: PipelineStep = {
  type: 'http.call',
  url: 'https://app.example/check',
  gate: true,
  async: true,
  deadlineSeconds: 600,
  timeoutSeconds: 10,
};
/** Each upload's pipeline, and whether its scan finds it infected. */
const pipelines = new Map<string, PipelineVersion>();
const infected = new Set<string>();
const rendition = { name: 'thumb', storageKey: 'r/thumb', contentType: 'image/webp', bytes: 2, width: 100, height: 75, durationMs: null };
const activities = {
  planDownstream: record('planDownstream', ({ uploadId }: { uploadId: string }) => ({
    pipeline: pipelines.get(uploadId),
    endpoints: ['ep-1'],
  })),
  runStep: record('runStep', ({ upload, step }: { upload: DownstreamInput; step: { type: string } }) => {
    if (step.type === 'scan.clamav')
      return infected.has(upload.uploadId)
        ? {
            status: 'rejected',
            reason: 'infected: Eicar-Signature',
            media: null,
            renditions: [],
            scan: { verdict: 'infected', signature: 'Eicar-Signature' },
          }
        : { status: 'succeeded', reason: null, media: null, renditions: [], scan: { verdict: 'clean' } };
    if (step.type === 'http.call') return { status: 'waiting', reason: null, media: null, renditions: [] };
    return { status: 'succeeded', reason: null, media: { width: 400, height: 300 }, renditions: [rendition] };
  }),
  recordStep: record('recordStep'),
  openGate: record('openGate'),
  markUploadProcessed: record('markUploadProcessed'),
  markRejected: record('markRejected'),
  eraseRenditions: record('eraseRenditions', () => ({ deleted: 0, bytes: 0 })),
  releaseOriginal: record('releaseOriginal', () => ({ objectDeleted: true, bytes: 4 })),
  deliverWebhook: record('deliverWebhook', () => 'delivered'),
};
const workflows = useWorkflowWorker('downstream-workflow', activities);

function input(uploadId: string, steps: PipelineVersion['steps']): DownstreamInput {
  pipelines.set(uploadId, { name: 'photos', version: 3, steps });
  return {
    uploadId,
    tenantId: 't1',
    storageKey: `o/${uploadId}`,
    contentType: 'image/png',
    bytes: 4,
    sha256: 'a'.repeat(64),
    fileName: 'a.png',
    createdAt: '2026-12-06T00:00:00.000Z',
    transcodeQueue: workflows.taskQueue,
    webhookRetry: { initialSeconds: 1, coefficient: 2, maxIntervalSeconds: 1, maxAttempts: 1, attemptTimeoutSeconds: 5 },
    pipelines: true,
  };
}
const start = (i: DownstreamInput) =>
  workflows.env.client.workflow.start(downstreamWorkflow, {
    taskQueue: workflows.taskQueue,
    workflowId: workflowIds.downstream(i.uploadId),
    args: [i],
  });
/** What happened to one upload, in order: the activities' names, an event's type for a delivery. */
const story = (uploadId: string) =>
  calls
    .filter((c) => JSON.stringify(c.args).includes(uploadId))
    .map((c) => (c.name === 'deliverWebhook' ? c.args[0].event.type : c.name === 'runStep' ? `runStep ${c.args[0].step.type}` : c.name));

describe('downstreamWorkflow', () => {
  it('runs the gate, opens it, announces completed, runs the rest, marks processed and announces processed', async () => {
    const uploadId = randomUUID();
    const result = await (await start(input(uploadId, [thumbs, scan, { type: 'webhook' }]))).result();
    expect(result).toEqual({
      processing: 'ready',
      renditions: ['thumb'],
      deliveries: { 'upload.completed → ep-1': 'delivered', 'upload.processed → ep-1': 'delivered' },
    });
    const s = story(uploadId);
    expect(s.indexOf('runStep scan.clamav')).toBeLessThan(s.indexOf('openGate'));
    expect(s.indexOf('openGate')).toBeLessThan(s.indexOf('upload.completed'));
    expect(s.indexOf('openGate')).toBeLessThan(s.indexOf('runStep image.variants'));
    expect(s.indexOf('markUploadProcessed')).toBeLessThan(s.indexOf('upload.processed'));
    expect(s).not.toContain('markRejected');
    expect(called('markUploadProcessed').find((c) => c.args[0].uploadId === uploadId)!.args[0].outcome).toMatchObject({ status: 'ready' });
  });

  it('rejects for good when the gate says so: the bytes go, upload.rejected instead of completed, no other step runs', async () => {
    const uploadId = randomUUID();
    infected.add(uploadId);
    const result = await (await start(input(uploadId, [scan, thumbs]))).result();
    expect(result).toEqual({
      processing: 'failed',
      renditions: [],
      deliveries: { 'upload.rejected → ep-1': 'delivered' },
      rejected: 'infected: Eicar-Signature',
    });
    const s = story(uploadId);
    expect(s).toEqual(
      expect.arrayContaining(['markRejected', 'eraseRenditions', 'releaseOriginal', 'markUploadProcessed', 'upload.rejected']),
    );
    expect(s).not.toContain('runStep image.variants');
    expect(s).not.toContain('openGate');
    expect(s).not.toContain('upload.completed');
    const rejected = called('deliverWebhook').find((c) => c.args[0].event.uploadId === uploadId)!.args[0].event;
    expect(rejected.data.rejection).toEqual({
      reason: 'infected: Eicar-Signature',
      scan: { verdict: 'infected', signature: 'Eicar-Signature' },
    });
  });

  it("waits for the tenant's decision on an async http.call, refusing decisions for any other step", async () => {
    const uploadId = randomUUID();
    const handle = await start(input(uploadId, [call, thumbs]));
    await eventually(async () => story(uploadId).includes('runStep http.call'), 30_000);
    // Step 1 is the image step, not an async call: refused before anything is recorded.
    const refused = await handle
      .executeUpdate(completeStepUpdate, { args: [{ step: 1, outcome: 'accept', message: null, data: null }] })
      .catch((e) => e);
    expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
    expect((refused as WorkflowUpdateFailedError).cause).toMatchObject({ type: failureTypes.stepNotWaiting });
    expect(
      await handle.executeUpdate(completeStepUpdate, { args: [{ step: 0, outcome: 'accept', message: 'looks fine', data: null }] }),
    ).toEqual({
      step: 0,
      outcome: 'accept',
    });
    // A different decision for the decided step is refused; the same one again is taken.
    const changed = await handle
      .executeUpdate(completeStepUpdate, { args: [{ step: 0, outcome: 'reject', message: null, data: null }] })
      .catch((e) => e);
    expect((changed as WorkflowUpdateFailedError).cause).toMatchObject({ type: failureTypes.stepNotWaiting });
    const result = await handle.result();
    expect(result.processing).toBe('ready');
    const recorded = called('recordStep').find((c) => c.args[0].uploadId === uploadId)!.args[0];
    expect(recorded).toMatchObject({ type: 'http.call', result: { status: 'succeeded', reason: 'looks fine' } });
    expect(story(uploadId).indexOf('recordStep')).toBeLessThan(story(uploadId).indexOf('openGate'));
  });
});
