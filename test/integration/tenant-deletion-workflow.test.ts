// The tenant deletion workflow at its own level: closed, swept, erased, in that order, its
// result the sum of the three; a tenant that does not exist fails not_found with nothing swept.
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { expect, it } from 'vitest';
import { failureTypes, workflowIds } from '../../src/temporal/names';
import { tenantDeletionWorkflow } from '../../workflows/tenant-deletion';
import { recorder, useWorkflowWorker } from '../helpers/workflow-worker';

const { calls, record } = recorder();
const known = new Set<string>();
const activities = {
  closeTenant: record('closeTenant', ({ tenantId }: { tenantId: string }) =>
    known.has(tenantId) ? { closedAt: '2026-12-06T00:00:00.000Z' } : null,
  ),
  sweepTenant: record('sweepTenant', () => ({ sessionsEnded: 1 })),
  eraseTenant: record('eraseTenant', () => ({
    erasedAt: '2026-12-06T00:01:00.000Z',
    uploadsErased: 3,
    dataKeysDestroyed: 5,
    objectsDeleted: 2,
  })),
};
const workflows = useWorkflowWorker('tenant-deletion-workflow', activities);
const retry = { initialSeconds: 1, coefficient: 2, maxIntervalSeconds: 1, maxAttempts: 1, attemptTimeoutSeconds: 5 };
const forTenant = (tenantId: string) => calls.filter((c) => c.args[0]?.tenantId === tenantId).map((c) => c.name);

it('closes, sweeps and erases the tenant in that order, and reports each count', async () => {
  const tenantId = randomUUID();
  known.add(tenantId);
  const result = await workflows.env.client.workflow.execute(tenantDeletionWorkflow, {
    taskQueue: workflows.taskQueue,
    workflowId: workflowIds.tenantDeletion(tenantId),
    args: [{ tenantId, webhookRetry: retry }],
  });
  expect(result).toEqual({
    tenantId,
    closedAt: '2026-12-06T00:00:00.000Z',
    erasedAt: '2026-12-06T00:01:00.000Z',
    uploadsErased: 3,
    sessionsEnded: 1,
    dataKeysDestroyed: 5,
    objectsDeleted: 2,
  });
  expect(forTenant(tenantId)).toEqual(['closeTenant', 'sweepTenant', 'eraseTenant']);
  expect(calls.find((c) => c.name === 'sweepTenant' && c.args[0].tenantId === tenantId)!.args[0]).toEqual({
    tenantId,
    webhookRetry: retry,
  });
});

it('fails not_found for a tenant that does not exist, sweeping nothing', async () => {
  const tenantId = randomUUID();
  const err = await workflows.env.client.workflow
    .execute(tenantDeletionWorkflow, {
      taskQueue: workflows.taskQueue,
      workflowId: workflowIds.tenantDeletion(tenantId),
      args: [{ tenantId, webhookRetry: retry }],
    })
    .catch((e) => e);
  expect(err).toBeInstanceOf(WorkflowFailedError);
  expect((err as WorkflowFailedError).cause).toMatchObject({ type: failureTypes.notFound, nonRetryable: true });
  expect(forTenant(tenantId)).toEqual(['closeTenant']);
});
