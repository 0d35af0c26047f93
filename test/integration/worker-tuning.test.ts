// WORKER_TUNING reaches the workflow worker (and only it): an operator's overrides of
// Temporal's WorkerOptions, checked at start (test/unit/config.test.ts) and applied here.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../helpers/stack';
import { postUpload } from '../helpers/http';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack('tuning', { env: { WORKER_TUNING: '{"maxConcurrentWorkflowTaskExecutions":7,"maxCachedWorkflows":13}' } });
});
afterAll(() => stack?.stop());

it('the uploads worker runs with the tuned options, the transcode worker with its own, and uploads go through', async () => {
  const byQueue = new Map(stack.runtime.workers.map((w) => [w.options.taskQueue, w.options]));
  const uploads = byQueue.get(stack.config.TASK_QUEUE_UPLOADS)!;
  const transcode = byQueue.get(stack.config.TASK_QUEUE_TRANSCODE)!;
  // The SDK compiles slot counts into its tuner.
  const slots = (o: typeof uploads, kind: 'workflowTaskSlotSupplier' | 'activityTaskSlotSupplier') =>
    (o.tuner[kind] as { numSlots?: number }).numSlots;
  expect(slots(uploads, 'workflowTaskSlotSupplier')).toBe(7);
  expect(uploads.maxCachedWorkflows).toBe(13);
  expect(slots(transcode, 'workflowTaskSlotSupplier')).toBe(40);
  expect(transcode.maxCachedWorkflows).not.toBe(13);
  expect(slots(transcode, 'activityTaskSlotSupplier')).toBe(2);
  const tenant = await stack.createTenant();
  const key = `tuned-${randomUUID()}`;
  const first = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('tuned worker') });
  expect(first.status).toBe(201);
  const again = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('tuned worker') });
  expect(again.status).toBe(201);
  expect(again.json.uploadId).toBe(first.json.uploadId);
});
