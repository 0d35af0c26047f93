// Starting and steering storage migrations: the migration row (with its total) first, then its
// run; a migration whose run could not start is closed at once. One migration from a source
// runs at a time (the database refuses a second), so no upload is moved twice at once.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Pool } from '../db/pool';
import {
  findMigration,
  insertMigration,
  migrationProgress,
  MigrationRunning,
  setMigrationState,
  type MigrationFilter,
  type StorageMigrationRow,
} from './migration-queries';
import { dependency, problem } from '../errors';
import { controlBatchUpdate, type BatchControl } from '../temporal/definitions';
import { searchAttributes } from '../temporal/names';
import type { Placement } from '../placement/placement';
import type { WebhookRetrySchedule } from '../downstream/types';
import { migrationWorkflowIds, migrationWorkflowTypes, type StorageMigrationInput } from './contract';

export class StorageMigrations {
  constructor(
    private readonly deps: {
      pool: Pool;
      temporal: Client;
      taskQueue: string;
      placement: Pick<Placement, 'targetFor' | 'targetOrDefault'>;
      sourceGraceSeconds: number;
      webhookRetry: WebhookRetrySchedule;
    },
  ) {}

  /** Starts moving the source's uploads (matching `filter`) to `to`; 409 while another migration from the source runs. */
  async start(m: {
    tenantId: string;
    from: string;
    to: string;
    filter: MigrationFilter;
    concurrency: number;
  }): Promise<StorageMigrationRow> {
    const from = await this.deps.placement.targetOrDefault(m.tenantId, m.from, false);
    // The destination is checked as an upload naming it would be (residency included).
    const to = await this.deps.placement.targetOrDefault(m.tenantId, m.to, true);
    if (from === to) throw problem('body_invalid', 'from and to name the same store.');
    const id = randomUUID();
    const row = await dependency('database_unavailable', () =>
      insertMigration(this.deps.pool, { id, tenantId: m.tenantId, from, to, filter: m.filter }).catch((err: unknown) => {
        if (err instanceof MigrationRunning)
          throw problem('storage_migration_running', 'A migration from this source is running or paused: wait for it, or cancel it.');
        throw err;
      }),
    );
    const input: StorageMigrationInput = {
      migrationId: id,
      tenantId: m.tenantId,
      from,
      to,
      concurrency: m.concurrency,
      sourceGraceSeconds: this.deps.sourceGraceSeconds,
      webhookRetry: this.deps.webhookRetry,
    };
    try {
      await dependency('temporal_unavailable', () =>
        this.deps.temporal.workflow.start(migrationWorkflowTypes.storageMigration, {
          workflowId: migrationWorkflowIds.storageMigration(id),
          taskQueue: this.deps.taskQueue,
          args: [input],
          staticSummary: `Move ${row.total} uploads from ${from ?? 'the instance store'} to ${to ?? 'the instance store'}`,
          typedSearchAttributes: [{ key: searchAttributes.tenant, value: m.tenantId }],
        }),
      );
    } catch (err) {
      await setMigrationState(this.deps.pool, id, 'cancelled').catch(() => {}); // the caller has the 503; its retry starts a new one
      throw err;
    }
    return row;
  }

  async view(tenantId: string, id: string) {
    const row = await dependency('database_unavailable', () => findMigration(this.deps.pool, tenantId, id));
    if (!row) throw problem('not_found', 'No such storage migration.');
    return { row, progress: await dependency('database_unavailable', () => migrationProgress(this.deps.pool, id)) };
  }

  /** Pause, resume or cancel: the moves under way finish either way; 409 once it has ended. */
  async control(tenantId: string, id: string, action: BatchControl) {
    const { row } = await this.view(tenantId, id);
    if (row.state === 'completed' || row.state === 'cancelled')
      throw problem('storage_migration_ended', `The migration has ${row.state === 'completed' ? 'completed' : 'been cancelled'}.`);
    try {
      await dependency('temporal_unavailable', () =>
        this.deps.temporal.workflow
          .getHandle(migrationWorkflowIds.storageMigration(id))
          .executeUpdate(controlBatchUpdate, { args: [action] }),
      );
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError) && !((err as { cause?: unknown }).cause instanceof WorkflowNotFoundError)) throw err;
    }
    return this.view(tenantId, id);
  }
}
