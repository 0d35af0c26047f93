// Waits for an upload to be processed, for `GET /v1/uploads/{id}?wait`: woken by the
// processed signal (Postgres NOTIFY) and re-reading the row at the signal's poll interval.
import type { Pool } from '../db/pool';
import { findUpload, type UploadRow } from '../db/queries/uploads';
import type { ProcessedSignal } from '../db/upload-processed';
import { dependency } from '../errors';
import type { ImportView } from '../imports/view';

/** How often a wait on an import not yet committed looks again (its progress is written about once a second). */
const IMPORT_POLL_MS = 500;

/** Upload statuses after which nothing more happens to the upload. */
const TERMINAL_STATUSES: ReadonlySet<string> = new Set(['processed']);

/** The row once terminal or when `waitMs` has passed; undefined when there is no such upload. */
export async function awaitProcessed(
  deps: { pool: Pool; signal: ProcessedSignal },
  tenantId: string,
  uploadId: string,
  waitMs: number,
): Promise<UploadRow | undefined> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const remaining = deadline - Date.now();
    // Subscribed before the read: a commit between the read and the wait still wakes us.
    const processed = remaining > 0 ? deps.signal.subscribe(uploadId, Math.min(deps.signal.pollMs, remaining)) : undefined;
    let row: UploadRow | undefined;
    try {
      row = await dependency('database_unavailable', () => findUpload(deps.pool, tenantId, uploadId));
    } catch (err) {
      processed?.cancel();
      throw err;
    }
    if (!row || !processed || TERMINAL_STATUSES.has(row.status)) {
      processed?.cancel();
      return row;
    }
    await processed.outcome;
  }
}

/**
 * For an upload that is an import not yet committed: its view once it failed or at `deadline`,
 * else (committed meanwhile) its row once processed or at `deadline`. Neither: no such upload.
 */
export async function awaitImport(
  imports: { view(tenantId: string, uploadId: string): Promise<ImportView | undefined> },
  deps: { pool: Pool; signal: ProcessedSignal },
  tenantId: string,
  uploadId: string,
  deadline: number,
): Promise<{ view?: ImportView; row?: UploadRow }> {
  for (;;) {
    const view = await imports.view(tenantId, uploadId);
    if (!view) {
      // Committed since (its import row goes with the commit), or never an import.
      const row = await awaitProcessed(deps, tenantId, uploadId, Math.max(0, deadline - Date.now()));
      return row ? { row } : {};
    }
    const remaining = deadline - Date.now();
    if (view.status === 'failed' || remaining <= 0) return { view };
    await new Promise((r) => setTimeout(r, Math.min(IMPORT_POLL_MS, remaining)));
  }
}
