// Webhook endpoints per tenant and the delivery ledger (one row per event and endpoint).
import type { Queryable } from '../pool';
import { pageInCreationOrder, type ListPosition } from './keyset';

export interface EndpointRow {
  id: string;
  tenant_id: string;
  url: string;
  description: string;
  secret: string;
  enabled: boolean;
  disabled_reason: string | null;
  created_at: Date;
}

export async function insertEndpoint(
  db: Queryable,
  e: { id: string; tenantId: string; url: string; description: string; secret: string },
): Promise<EndpointRow> {
  const res = await db.query<EndpointRow>(
    `INSERT INTO webhook_endpoints (id, tenant_id, url, description, secret) VALUES ($1, $2, $3, $4, $5)
     RETURNING id, tenant_id, url, description, secret, enabled, disabled_reason, created_at`,
    [e.id, e.tenantId, e.url, e.description, e.secret],
  );
  return res.rows[0]!;
}

/** A page of the tenant's endpoints in creation order, after `after`; `limit` rows at most. */
export function pageEndpoints(db: Queryable, tenantId: string, page: { after?: ListPosition; limit: number }) {
  return pageInCreationOrder<EndpointRow>(
    db,
    {
      columns: 'id, tenant_id, url, description, secret, enabled, disabled_reason, created_at',
      from: 'webhook_endpoints',
      where: 'tenant_id = $1 AND deleted_at IS NULL',
      values: [tenantId],
    },
    page,
  );
}

export async function listEndpoints(db: Queryable, tenantId: string): Promise<EndpointRow[]> {
  const res = await db.query<EndpointRow>(
    `SELECT id, tenant_id, url, description, secret, enabled, disabled_reason, created_at
       FROM webhook_endpoints WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY created_at, id`,
    [tenantId],
  );
  return res.rows;
}

export async function findEndpoint(db: Queryable, id: string): Promise<EndpointRow | undefined> {
  const res = await db.query<EndpointRow>(
    `SELECT id, tenant_id, url, description, secret, enabled, disabled_reason, created_at
       FROM webhook_endpoints WHERE id = $1 AND deleted_at IS NULL`,
    [id],
  );
  return res.rows[0];
}

export async function deleteEndpoint(db: Queryable, tenantId: string, id: string): Promise<boolean> {
  const res = await db.query(
    'UPDATE webhook_endpoints SET deleted_at = now(), enabled = false WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL',
    [tenantId, id],
  );
  return (res.rowCount ?? 0) > 0;
}

export async function disableEndpoint(db: Queryable, id: string, reason: string): Promise<void> {
  await db.query('UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2 WHERE id = $1 AND enabled', [id, reason]);
}

export interface DeliveryRow {
  event_id: string;
  endpoint_id: string;
  tenant_id: string;
  upload_id: string | null;
  event_type: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  created_at: Date;
}

export async function listDeliveries(db: Queryable, uploadId: string): Promise<DeliveryRow[]> {
  const res = await db.query<DeliveryRow>(
    'SELECT * FROM webhook_deliveries WHERE upload_id = $1 ORDER BY created_at, event_id, endpoint_id',
    [uploadId],
  );
  return res.rows;
}
