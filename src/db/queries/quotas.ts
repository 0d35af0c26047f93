// Count quotas per tenant. A creation runs in one transaction that first locks the tenant's
// row, so concurrent creations are counted one after another and never overshoot.
import { withTransaction, type Pool, type Queryable } from '../pool';

const LIVE_ROWS = {
  api_keys: 'SELECT count(*)::int AS n FROM api_keys WHERE tenant_id = $1 AND revoked_at IS NULL',
  webhook_endpoints: 'SELECT count(*)::int AS n FROM webhook_endpoints WHERE tenant_id = $1 AND deleted_at IS NULL',
} as const;

export type QuotaKind = keyof typeof LIVE_ROWS;

export class QuotaReached extends Error {
  constructor(readonly kind: QuotaKind, readonly limit: number) {
    super(`the tenant already has ${limit} ${kind.replace('_', ' ')}`);
    this.name = 'QuotaReached';
  }
}

/** Runs `insert` while the tenant has fewer than `limit` live rows of `kind`; else throws QuotaReached. */
export async function insertWithinQuota<T>(pool: Pool, tenantId: string, kind: QuotaKind, limit: number, insert: (tx: Queryable) => Promise<T>): Promise<T> {
  return withTransaction(pool, async (tx) => {
    await tx.query('SELECT 1 FROM tenants WHERE id = $1 FOR UPDATE', [tenantId]);
    const { n } = (await tx.query<{ n: number }>(LIVE_ROWS[kind], [tenantId])).rows[0]!;
    if (n >= limit) throw new QuotaReached(kind, limit);
    return insert(tx);
  });
}
