// Housekeeping Schedules, created idempotently at worker start: one per task, IDs scoped
// by the task queue so several deployments can share a namespace.
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { HousekeepingTask } from './definitions';
import { workflowIds, workflowTypes } from './names';

export const HOUSEKEEPING: Record<HousekeepingTask, string> = {
  'expire-keys': '15 minutes',
  'sweep-staging': '30 minutes',
  'abort-multipart': '1 hour',
  'expire-uploads': '1 minute',
  'expire-events': '1 hour',
};

export function scheduleId(taskQueue: string, task: HousekeepingTask): string {
  return workflowIds.housekeeping(taskQueue, task);
}

/** `every` overrides a task's interval (the retention sweep's comes from RETENTION_SWEEP_SECONDS). */
export async function ensureHousekeepingSchedules(
  client: Client,
  taskQueue: string,
  every: Partial<Record<HousekeepingTask, string>> = {},
): Promise<string[]> {
  const ids: string[] = [];
  for (const [task, interval] of Object.entries({ ...HOUSEKEEPING, ...every }) as [HousekeepingTask, string][]) {
    const id = scheduleId(taskQueue, task);
    try {
      await client.schedule.create({
        scheduleId: id,
        spec: { intervals: [{ every: interval }] },
        policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 hour' },
        action: {
          type: 'startWorkflow',
          workflowType: workflowTypes.housekeeping,
          args: [task],
          taskQueue,
          workflowId: workflowIds.housekeeping(taskQueue, task),
        },
      });
    } catch (err) {
      if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    }
    ids.push(id);
  }
  return ids;
}
