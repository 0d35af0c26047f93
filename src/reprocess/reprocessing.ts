// Starting and cancelling re-processing jobs: the job row (with its total) first, then its
// workflow; a job whose workflow could not be started is closed at once, never left running.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Pool } from '../db/pool';
import { finishReprocessJob, insertReprocessJob, type ReprocessFilter, type ReprocessJobRow } from './queries';
import type { WebhookRetrySchedule } from '../downstream/types';
import { dependency } from '../errors';
import { searchAttributes } from '../temporal/names';

import { reprocessWorkflowIds, reprocessWorkflowTypes, type ReprocessJobInput } from './contract';

export class Reprocessing {
  constructor(
    private readonly deps: { pool: Pool; temporal: Client; taskQueue: string; transcodeQueue: string; webhookRetry: WebhookRetrySchedule },
  ) {}

  async start(j: {
    tenantId: string;
    pipeline: string;
    version: number;
    filter: ReprocessFilter;
    concurrency: number;
  }): Promise<ReprocessJobRow> {
    const id = randomUUID();
    const row = await dependency('database_unavailable', () => insertReprocessJob(this.deps.pool, { id, ...j }));
    const input: ReprocessJobInput = {
      jobId: id,
      tenantId: j.tenantId,
      pipeline: j.pipeline,
      version: j.version,
      concurrency: j.concurrency,
      transcodeQueue: this.deps.transcodeQueue,
      webhookRetry: this.deps.webhookRetry,
    };
    try {
      await dependency('temporal_unavailable', () =>
        this.deps.temporal.workflow.start(reprocessWorkflowTypes.reprocessJob, {
          workflowId: reprocessWorkflowIds.reprocessJob(id),
          taskQueue: this.deps.taskQueue,
          args: [input],
          staticSummary: `Re-process ${row.total} uploads with ${j.pipeline} v${j.version}`,
          typedSearchAttributes: [{ key: searchAttributes.tenant, value: j.tenantId }],
        }),
      );
    } catch (err) {
      await finishReprocessJob(this.deps.pool, id, 'cancelled').catch(() => {}); // the caller has the 503; its retry makes a new job
      throw err;
    }
    return row;
  }

  /** Asks the job to stop: uploads under way are cancelled and keep their served renditions. */
  async cancel(jobId: string): Promise<void> {
    await dependency('temporal_unavailable', () =>
      this.deps.temporal.workflow.getHandle(reprocessWorkflowIds.reprocessJob(jobId)).cancel(),
    );
  }
}
