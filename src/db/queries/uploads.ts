// Upload rows: one per logical upload, keyed by id and unique per (tenant, key).
import { statement, type Queryable } from '../pool';

export interface UploadRow {
  id: string;
  tenant_id: string;
  idempotency_key: string;
  workflow_id: string;
  storage_key: string;
  bytes: string; // bigint comes back as text from pg
  sha256: string;
  content_type: string;
  file_name: string | null;
  status: string;
  created_at: Date;
  processing_status: string;
  processing_reason: string | null;
  media: Record<string, unknown> | null;
  processed_at: Date | null;
}

export type NewUpload = Pick<
  UploadRow,
  'id' | 'tenant_id' | 'idempotency_key' | 'workflow_id' | 'storage_key' | 'sha256' | 'content_type' | 'file_name'
> & { bytes: number };

/** Inserts the row unless this upload (or another for the same key) already exists. */
export async function insertUploadIfAbsent(db: Queryable, u: NewUpload): Promise<void> {
  await db.query(
    `INSERT INTO uploads (id, tenant_id, idempotency_key, workflow_id, storage_key, bytes, sha256, content_type, file_name)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT DO NOTHING`,
    [u.id, u.tenant_id, u.idempotency_key, u.workflow_id, u.storage_key, u.bytes, u.sha256, u.content_type, u.file_name],
  );
}

export async function findUpload(db: Queryable, tenantId: string, id: string): Promise<UploadRow | undefined> {
  const res = await db.query<UploadRow>(statement('find_upload', 'SELECT * FROM uploads WHERE tenant_id = $1 AND id = $2', [tenantId, id]));
  return res.rows[0];
}

export async function findUploadByKey(db: Queryable, tenantId: string, key: string): Promise<UploadRow | undefined> {
  const res = await db.query<UploadRow>('SELECT * FROM uploads WHERE tenant_id = $1 AND idempotency_key = $2', [tenantId, key]);
  return res.rows[0];
}
