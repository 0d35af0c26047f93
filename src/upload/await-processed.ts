// Waits for an upload to be processed, for `GET /v1/uploads/{id}?wait`: woken by the
// processed signal (Postgres NOTIFY) and re-reading at the signal's poll interval. An id that
// names an import not yet committed is looked at again every IMPORT_POLL_MS until it fails
// or commits (then its upload is awaited like any other); one lookup reads both.
import type { Pool } from '../db/pool';
import { findUploadOrImport, type UploadOrImport } from '../db/queries/imports';
import type { ProcessedSignal } from '../db/upload-processed';
import { dependency } from '../errors';

/** How often a wait on an import not yet committed looks again (its progress is written about once a second). */
const IMPORT_POLL_MS = 500;

/** Upload statuses after which nothing more happens to the upload. */
const TERMINAL_STATUSES: ReadonlySet<string> = new Set(['processed']);

/**
 * The upload once terminal, or the import once failed, or either as it is when `waitMs` has
 * passed; undefined when the id names neither.
 */
export async function awaitProcessed(
  deps: { pool: Pool; signal: ProcessedSignal },
  tenantId: string,
  uploadId: string,
  waitMs: number,
): Promise<UploadOrImport | undefined> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const remaining = deadline - Date.now();
    // Subscribed before the read: a commit between the read and the wait still wakes us.
    const processed = remaining > 0 ? deps.signal.subscribe(uploadId, Math.min(deps.signal.pollMs, remaining)) : undefined;
    let found: UploadOrImport | undefined;
    try {
      found = await dependency('database_unavailable', () => findUploadOrImport(deps.pool, tenantId, uploadId));
    } catch (err) {
      processed?.cancel();
      throw err;
    }
    if (found?.kind === 'import' && found.row.state === 'importing' && processed) {
      processed.cancel();
      await new Promise((r) => setTimeout(r, Math.min(IMPORT_POLL_MS, remaining)));
      continue;
    }
    if (!found || found.kind === 'import' || !processed || TERMINAL_STATUSES.has(found.row.status)) {
      processed?.cancel();
      return found;
    }
    await processed.outcome;
  }
}
