// The housekeeping workflow at its own level: each scheduled task runs its one activity and
// answers what it removed.
import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import type { HousekeepingTask } from '../../src/temporal/definitions';
import { HOUSEKEEPING } from '../../src/temporal/schedules';
import { housekeepingWorkflow } from '../../workflows/housekeeping';
import { recorder, useWorkflowWorker } from '../helpers/workflow-worker';

const { calls, record } = recorder();
const activities = {
  expireIdempotencyKeys: record('expireIdempotencyKeys', () => ({
    expired: 1,
    tombstonesRemoved: 2,
    orphanedImports: 0,
    unusedRunKeys: 3,
  })),
  sweepStagingObjects: record('sweepStagingObjects', () => ({ examined: 10, removed: 4, protectedKeys: 6 })),
  abortStaleMultipartUploads: record('abortStaleMultipartUploads', () => ({ aborted: 5 })),
  expireDueUploads: record('expireDueUploads', () => ({ started: 7 })),
  expireWebhookEvents: record('expireWebhookEvents', () => ({ removed: 8 })),
};
const workflows = useWorkflowWorker('housekeeping-workflow', activities);

const expected: Record<HousekeepingTask, [string, Record<string, number>]> = {
  'expire-keys': ['expireIdempotencyKeys', { expired: 1, tombstonesRemoved: 2, orphanedImports: 0, unusedRunKeys: 3 }],
  'sweep-staging': ['sweepStagingObjects', { examined: 10, removed: 4, protectedKeys: 6 }],
  'abort-multipart': ['abortStaleMultipartUploads', { aborted: 5 }],
  'expire-uploads': ['expireDueUploads', { started: 7 }],
  'expire-events': ['expireWebhookEvents', { removed: 8 }],
};

it('runs each scheduled task as its one activity and answers what it removed', async () => {
  expect(Object.keys(expected).sort()).toEqual(Object.keys(HOUSEKEEPING).sort());
  for (const [task, [activity, answer]] of Object.entries(expected) as [HousekeepingTask, [string, Record<string, number>]][]) {
    const before = calls.length;
    const result = await workflows.env.client.workflow.execute(housekeepingWorkflow, {
      taskQueue: workflows.taskQueue,
      workflowId: `housekeeping-test/${task}/${randomUUID()}`,
      args: [task],
    });
    expect(result, task).toEqual(answer);
    expect(
      calls.slice(before).map((c) => c.name),
      task,
    ).toEqual([activity]);
  }
});
