// A tenant's deletion (workflows/tenant-deletion.ts): closed first (migration 027 then
// refuses every new row of it), its uploads and open work swept, then what it kept besides
// its uploads scrubbed. The tenant row stays, scrubbed, as the tombstone its uploads' rows
// (themselves tombstones) refer to.
import { withTransaction, type Pool, type Queryable } from '../pool';
import { OPERATOR_TENANT_ID } from './tenants';

/**
 * Closes the tenant: from this commit on no row of it can be written; its API keys and
 * upload tokens are revoked and its webhook endpoints removed (its uploads' erasures
 * announce nothing). Undefined for no such tenant; again on a closed one is a no-op.
 */
export async function closeTenant(pool: Pool, id: string): Promise<{ closedAt: Date } | undefined> {
  return withTransaction(pool, async (tx) => {
    const res = await tx.query<{ closed_at: Date }>(
      'UPDATE tenants SET closed_at = coalesce(closed_at, now()) WHERE id = $1 AND id <> $2 RETURNING closed_at',
      [id, OPERATOR_TENANT_ID],
    );
    if (!res.rows[0]) return undefined;
    await tx.query('UPDATE api_keys SET revoked_at = now() WHERE tenant_id = $1 AND revoked_at IS NULL', [id]);
    await tx.query('UPDATE upload_tokens SET revoked_at = now() WHERE tenant_id = $1 AND revoked_at IS NULL', [id]);
    await tx.query('UPDATE console_sessions SET revoked_at = now() WHERE tenant_id = $1 AND revoked_at IS NULL', [id]);
    await tx.query('UPDATE webhook_endpoints SET deleted_at = now() WHERE tenant_id = $1 AND deleted_at IS NULL', [id]);
    return { closedAt: res.rows[0].closed_at };
  });
}

/** A page of the tenant's live uploads (the sweep erases each by its deletion run). */
export async function liveUploadsOf(db: Queryable, tenantId: string, limit: number): Promise<{ id: string; idempotency_key: string }[]> {
  const res = await db.query<{ id: string; idempotency_key: string }>(
    'SELECT id, idempotency_key FROM uploads WHERE tenant_id = $1 AND deleted_at IS NULL AND hold_reason IS NULL ORDER BY created_at LIMIT $2',
    [tenantId, limit],
  );
  return res.rows;
}

/** Uploads of the tenant deleted and within their restore window (not held: a hold keeps its window). */
export async function pendingDeletionsOf(db: Queryable, tenantId: string, limit: number): Promise<string[]> {
  const res = await db.query<{ id: string }>(
    'SELECT id FROM uploads WHERE tenant_id = $1 AND restorable_until IS NOT NULL AND hold_reason IS NULL LIMIT $2',
    [tenantId, limit],
  );
  return res.rows.map((r) => r.id);
}

/**
 * The last step, once no upload of the tenant is live: every data key it still has is
 * destroyed (its runs' histories then hold only ciphertext), and what it kept besides its
 * uploads is scrubbed of what could be personal or secret.
 */
export async function eraseTenantRecords(
  pool: Pool,
  id: string,
): Promise<{ erasedAt: Date; keysDestroyed: number; uploadsErased: number }> {
  return withTransaction(pool, async (tx) => {
    const keys = await tx.query(
      'UPDATE payload_keys SET wrapped = NULL, destroyed_at = now() WHERE tenant_id = $1 AND destroyed_at IS NULL',
      [id],
    );
    await tx.query('DELETE FROM pipeline_secrets WHERE tenant_id = $1', [id]);
    await tx.query(`UPDATE webhook_endpoints SET url = '', description = '', secret = '' WHERE tenant_id = $1`, [id]);
    await tx.query('UPDATE upload_tokens SET subject = NULL, metadata = NULL WHERE tenant_id = $1', [id]);
    await tx.query('DELETE FROM console_sessions WHERE tenant_id = $1', [id]);
    await tx.query(
      `UPDATE import_batch_items SET url = '', file_name = NULL WHERE batch_id IN (SELECT id FROM import_batches WHERE tenant_id = $1)`,
      [id],
    );
    await tx.query(`UPDATE import_batches SET source = NULL, caller = '{}', upload_grant = NULL WHERE tenant_id = $1`, [id]);
    await tx.query(`UPDATE imports SET origin = '' WHERE tenant_id = $1`, [id]);
    // Their runs were terminated by the sweep.
    await tx.query(
      `UPDATE import_batches SET state = 'cancelled', finished_at = now() WHERE tenant_id = $1 AND state IN ('listing', 'running', 'paused')`,
      [id],
    );
    await tx.query(`UPDATE reprocess_jobs SET state = 'cancelled', finished_at = now() WHERE tenant_id = $1 AND state = 'running'`, [id]);
    // Events carry an upload's name and metadata; the answers of other routes hold secrets
    // (an endpoint's, a token's). The uploads' own key rows already answer 410.
    await tx.query(`UPDATE webhook_events SET payload = '{}' WHERE tenant_id = $1`, [id]);
    await tx.query('DELETE FROM idempotency_keys WHERE tenant_id = $1 AND upload_id IS NULL', [id]);
    // The keys' request logs (a key may say what it was for).
    await tx.query('DELETE FROM key_requests WHERE tenant_id = $1', [id]);
    await tx.query('DELETE FROM key_request_tallies WHERE tenant_id = $1', [id]);
    const res = await tx.query<{ erased_at: Date }>(
      `UPDATE tenants SET name = '', erased_at = coalesce(erased_at, now()) WHERE id = $1 RETURNING erased_at`,
      [id],
    );
    // Counted, not carried: a sweep retried after a crash cannot tell what it erased before.
    const erased = await tx.query<{ n: string }>(
      `SELECT count(*) AS n FROM uploads u JOIN tenants t ON t.id = u.tenant_id WHERE u.tenant_id = $1 AND u.erased_at >= t.closed_at`,
      [id],
    );
    return { erasedAt: res.rows[0]!.erased_at, keysDestroyed: keys.rowCount ?? 0, uploadsErased: Number(erased.rows[0]!.n) };
  });
}
