// Starting the workflows that send recorded events again: one redelivery per request (its
// Idempotency-Key, when sent, keeps it to one), one recovery per endpoint and window (a
// repeat while it runs attaches to it; once done, a repeat runs it again for what is left).
import { randomUUID } from 'node:crypto';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { dependency } from '../errors';
import { searchAttributes, workflowIds, workflowTypes } from '../temporal/names';

import { recoveryProgressQuery, type RecoveryInput, type RecoveryProgress, type RedeliveryInput } from '../temporal/definitions';

export class Redeliveries {
  constructor(private readonly deps: { temporal: Client; taskQueue: string }) {}

  redeliver(input: RedeliveryInput): Promise<WorkflowHandle> {
    return dependency('temporal_unavailable', () =>
      this.deps.temporal.workflow.start(workflowTypes.redelivery, {
        workflowId: workflowIds.redelivery(input.eventId, randomUUID()),
        taskQueue: this.deps.taskQueue,
        args: [input],
        staticSummary: `Redeliver ${input.eventId} to ${input.endpointIds.length} endpoint(s)`,
        typedSearchAttributes: [{ key: searchAttributes.tenant, value: input.tenantId }],
      }),
    );
  }

  recoveryId(endpointId: string, since: string, until: string): string {
    return workflowIds.recovery(endpointId, since, until);
  }

  recover(input: RecoveryInput): Promise<WorkflowHandle> {
    return dependency('temporal_unavailable', () =>
      this.deps.temporal.workflow.start(workflowTypes.recovery, {
        workflowId: this.recoveryId(input.endpointId, input.since, input.until),
        taskQueue: this.deps.taskQueue,
        args: [input],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        staticSummary: `Recover endpoint ${input.endpointId}: events ${input.since} to ${input.until}`,
        typedSearchAttributes: [{ key: searchAttributes.tenant, value: input.tenantId }],
      }),
    );
  }

  /** A recovery's progress: its result once done, else what its `progress` query answers. */
  async progress(recoveryId: string): Promise<RecoveryProgress | undefined> {
    const handle = this.deps.temporal.workflow.getHandle(recoveryId);
    return dependency('temporal_unavailable', async () => {
      // No such run: an unknown recovery (404).
      const described = await handle.describe().catch(() => undefined);
      if (!described) return undefined;
      if (described.status.name === 'COMPLETED') return (await handle.result()) as RecoveryProgress;
      return handle.query(recoveryProgressQuery);
    });
  }
}
