// One scheduled housekeeping task per run; the result is what it removed.
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { HousekeepingTask } from '../src/temporal/definitions';

const acts = proxyActivities<Activities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '2 minutes',
  retry: { maximumAttempts: 3 },
});

export async function housekeepingWorkflow(task: HousekeepingTask): Promise<Record<string, number>> {
  switch (task) {
    case 'expire-keys':
      return acts.expireIdempotencyKeys();
    case 'sweep-staging':
      return acts.sweepStagingObjects();
    case 'abort-multipart':
      return acts.abortStaleMultipartUploads();
    case 'expire-uploads':
      return acts.expireDueUploads();
    case 'expire-events':
      return acts.expireWebhookEvents();
  }
}
