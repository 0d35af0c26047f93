// Waits for an upload to be processed, for `GET /v1/uploads/{id}?wait`: woken by the
// processed signal (Postgres NOTIFY) and re-reading the row at the signal's poll interval.
import type { Pool } from '../db/pool';
import { findUpload, type UploadRow } from '../db/queries/uploads';
import type { ProcessedSignal } from '../db/upload-processed';
import { dependency } from '../errors';

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
