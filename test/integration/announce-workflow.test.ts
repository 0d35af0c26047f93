// The announcement workflow at its own level: an event goes to each of the tenant's endpoints
// once per delivery activity, retried on the tenant's schedule; an endpoint whose deliveries
// give up is recorded as gave_up and holds up neither the others nor the run's end.
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { expect, it } from 'vitest';
import { workflowIds } from '../../src/temporal/names';
import { announceEventWorkflow } from '../../workflows/announce';
import { recorder, useWorkflowWorker } from '../helpers/workflow-worker';

const { called, record } = recorder();
const activities = {
  listWebhookEndpoints: record('listWebhookEndpoints', () => ['ep-ok', 'ep-flaky', 'ep-down']),
  deliverWebhook: record('deliverWebhook', ({ endpointId }: { endpointId: string }) => {
    const attempts = called('deliverWebhook').filter((c) => c.args[0].endpointId === endpointId).length;
    if (endpointId === 'ep-down') throw ApplicationFailure.create({ message: 'connection refused' });
    if (endpointId === 'ep-flaky' && attempts === 1) throw ApplicationFailure.create({ message: '503 from the receiver' });
    return 'delivered';
  }),
};
const workflows = useWorkflowWorker('announce-workflow', activities);

it('delivers to every endpoint, retrying on the schedule, and records the one that gave up', async () => {
  const eventId = `evt_${randomUUID().replace(/-/g, '')}`;
  const event = { id: eventId, type: 'upload.completed' as const, tenantId: 't1', uploadId: randomUUID(), data: { bytes: 4 } };
  const result = await workflows.env.client.workflow.execute(announceEventWorkflow, {
    taskQueue: workflows.taskQueue,
    workflowId: workflowIds.announce(eventId),
    args: [
      {
        tenantId: 't1',
        event,
        timestamp: '2026-12-06T00:00:00.000Z',
        webhookRetry: { initialSeconds: 0.1, coefficient: 1, maxIntervalSeconds: 0.1, maxAttempts: 3, attemptTimeoutSeconds: 5 },
      },
    ],
  });
  expect(result).toEqual({
    'upload.completed → ep-ok': 'delivered',
    'upload.completed → ep-flaky': 'delivered',
    'upload.completed → ep-down': 'gave_up',
  });
  expect(called('listWebhookEndpoints').map((c) => c.args[0])).toEqual(['t1']);
  const attempts = (endpointId: string) => called('deliverWebhook').filter((c) => c.args[0].endpointId === endpointId);
  expect(attempts('ep-ok')).toHaveLength(1);
  expect(attempts('ep-flaky')).toHaveLength(2);
  expect(attempts('ep-down')).toHaveLength(3);
  // Every attempt carries the same event and timestamp: the receiver sees one webhook-id.
  expect(new Set(called('deliverWebhook').map((c) => JSON.stringify([c.args[0].event, c.args[0].timestamp])))).toEqual(
    new Set([JSON.stringify([event, '2026-12-06T00:00:00.000Z'])]),
  );
});
