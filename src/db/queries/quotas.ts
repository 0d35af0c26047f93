// Count quotas per tenant. A creation runs in one transaction that first locks the tenant's
// row, so concurrent creations are counted one after another and never overshoot.
import { withTransaction, type Pool, type Queryable } from '../pool';

const LIVE_ROWS = {
  api_keys: 'SELECT count(*)::int AS n FROM api_keys WHERE tenant_id = $1 AND revoked_at IS NULL',
  webhook_endpoints: 'SELECT count(*)::int AS n FROM webhook_endpoints WHERE tenant_id = $1 AND deleted_at IS NULL',
  // Every resumable or signed mode's sessions (tus, direct, Uppy) until they commit; an
  // expired, terminated or failed session's row is deleted, which frees its slot.
  open_sessions: "SELECT count(*)::int AS n FROM resumable_sessions WHERE tenant_id = $1 AND state <> 'committed'",
  // Imports until they commit (their row is deleted) or fail.
  imports_in_flight: "SELECT count(*)::int AS n FROM imports WHERE tenant_id = $1 AND state = 'importing'",
  // Batches of imports not yet completed or cancelled.
  open_import_batches: "SELECT count(*)::int AS n FROM import_batches WHERE tenant_id = $1 AND state IN ('listing', 'running', 'paused')",
  // Renders of image variants under way (their row goes when the variant is recorded or the render fails).
  renders_in_flight: 'SELECT count(*)::int AS n FROM image_renders WHERE tenant_id = $1 AND expires_at > now()',
  // Declared names (a name is never removed: its versions are what uploads recorded).
  pipelines: 'SELECT count(DISTINCT name)::int AS n FROM pipeline_versions WHERE tenant_id = $1',
  // Registered storage targets (a removed one frees its slot).
  storage_targets: 'SELECT count(*)::int AS n FROM storage_targets WHERE tenant_id = $1 AND deleted_at IS NULL',
  // Declared image presets, by name (kept for the same reason).
  image_presets: 'SELECT count(DISTINCT name)::int AS n FROM image_presets WHERE tenant_id = $1',
} as const;

export type QuotaKind = keyof typeof LIVE_ROWS;

export class QuotaReached extends Error {
  constructor(
    readonly kind: QuotaKind | 'pipeline_versions' | 'image_preset_versions',
    readonly limit: number,
    message = `the tenant already has ${limit} ${kind.replace('_', ' ')}`,
  ) {
    super(message);
    this.name = 'QuotaReached';
  }
}

/** How many live rows of `kind` the tenant has (a cheap check before costly preparations; not a guarantee). */
export async function countLive(db: Queryable, tenantId: string, kind: QuotaKind): Promise<number> {
  return (await db.query<{ n: number }>(LIVE_ROWS[kind], [tenantId])).rows[0]!.n;
}

/**
 * Runs `insert` while the tenant has fewer than `limit` live rows of `kind`; else throws
 * QuotaReached. `existing` (read under the same lock) answers a repeated creation without
 * counting it, so a replay is never refused at the limit.
 */
/** Locks the tenant's row for the transaction: creations counted under it run one after another. */
export async function lockTenant(tx: Queryable, tenantId: string): Promise<void> {
  await tx.query('SELECT 1 FROM tenants WHERE id = $1 FOR UPDATE', [tenantId]);
}

export async function insertWithinQuota<T>(
  pool: Pool,
  tenantId: string,
  kind: QuotaKind,
  limit: number,
  insert: (tx: Queryable) => Promise<T>,
  existing?: (tx: Queryable) => Promise<T | undefined>,
): Promise<T> {
  return withTransaction(pool, async (tx) => {
    await lockTenant(tx, tenantId);
    const found = existing && (await existing(tx));
    if (found !== undefined) return found;
    if ((await countLive(tx, tenantId, kind)) >= limit) throw new QuotaReached(kind, limit);
    return insert(tx);
  });
}
