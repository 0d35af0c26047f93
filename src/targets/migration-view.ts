// A storage migration as the API answers it and as the event at its end carries it.
import type { MigrationProgress, StorageMigrationRow } from './migration-queries';

export function migrationView(row: StorageMigrationRow, progress: MigrationProgress) {
  return {
    id: row.id,
    from: row.from_target,
    to: row.to_target,
    filter: row.filter as Record<string, unknown>,
    state: row.state,
    total: row.total,
    moved: progress.moved,
    skipped: progress.skipped,
    failed: progress.failed,
    bytesMoved: progress.bytesMoved,
    failures: progress.failures,
    createdAt: row.created_at.toISOString(),
    finishedAt: row.finished_at?.toISOString() ?? null,
  };
}
