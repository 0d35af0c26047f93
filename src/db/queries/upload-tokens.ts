// Upload tokens: minted, found by their hash, revoked, and counted at each commit.
import type { Queryable } from '../pool';
import { statement } from '../pool';
import { pageInCreationOrder, type ListPosition } from './keyset';

export interface UploadTokenRow {
  id: string;
  tenant_id: string;
  expires_at: Date;
  max_bytes: string | null;
  allowed_types: string[] | null;
  max_uploads: number | null;
  uploads_used: number;
  subject: string | null;
  metadata: Record<string, string> | null;
  pipeline: string | null;
  import_hosts: string[] | null;
  storage_target: string | null;
  created_at: Date;
  revoked_at: Date | null;
}

export type NewUploadToken = Pick<
  UploadTokenRow,
  | 'id'
  | 'tenant_id'
  | 'expires_at'
  | 'allowed_types'
  | 'max_uploads'
  | 'subject'
  | 'metadata'
  | 'pipeline'
  | 'import_hosts'
  | 'storage_target'
> & {
  max_bytes: number | null;
};

const COLUMNS =
  'id, tenant_id, expires_at, max_bytes, allowed_types, max_uploads, uploads_used, subject, metadata, pipeline, import_hosts, storage_target, created_at, revoked_at';

export async function insertUploadToken(db: Queryable, hash: Buffer, t: NewUploadToken): Promise<UploadTokenRow> {
  const res = await db.query<UploadTokenRow>(
    `INSERT INTO upload_tokens (id, tenant_id, token_hash, expires_at, max_bytes, allowed_types, max_uploads, subject, metadata, pipeline, import_hosts, storage_target)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING ${COLUMNS}`,
    [
      t.id,
      t.tenant_id,
      hash,
      t.expires_at,
      t.max_bytes,
      t.allowed_types,
      t.max_uploads,
      t.subject,
      t.metadata,
      t.pipeline,
      t.import_hosts,
      t.storage_target,
    ],
  );
  return res.rows[0]!;
}

/** The unrevoked token with this hash (expired too: its open sessions may still finish). */
export async function findUnrevokedUploadToken(db: Queryable, hash: Buffer): Promise<UploadTokenRow | undefined> {
  const res = await db.query<UploadTokenRow>(
    statement('find_upload_token', `SELECT ${COLUMNS} FROM upload_tokens WHERE token_hash = $1 AND revoked_at IS NULL`, [hash]),
  );
  return res.rows[0];
}

/** A page of the tenant's tokens (revoked and expired ones included) in creation order, after `after`. */
export function pageUploadTokens(db: Queryable, tenantId: string, page: { after?: ListPosition; limit: number }) {
  return pageInCreationOrder<UploadTokenRow>(
    db,
    { columns: COLUMNS, from: 'upload_tokens', where: 'tenant_id = $1', values: [tenantId] },
    page,
  );
}

export async function findUploadToken(db: Queryable, tenantId: string, id: string): Promise<UploadTokenRow | undefined> {
  const res = await db.query<UploadTokenRow>(`SELECT ${COLUMNS} FROM upload_tokens WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
  return res.rows[0];
}

/** Revokes one of the tenant's tokens; false when it has no such unrevoked token. */
export async function revokeUploadToken(db: Queryable, tenantId: string, id: string): Promise<boolean> {
  const res = await db.query('UPDATE upload_tokens SET revoked_at = now() WHERE tenant_id = $1 AND id = $2 AND revoked_at IS NULL', [
    tenantId,
    id,
  ]);
  return (res.rowCount ?? 0) > 0;
}

/**
 * Counts one more upload under the token, inside the records transaction: the row's lock
 * orders concurrent commits, so a token allowing N commits exactly N. False when its
 * uploads are used up.
 */
export async function countTokenUpload(db: Queryable, tokenId: string): Promise<boolean> {
  const res = await db.query(
    `UPDATE upload_tokens SET uploads_used = uploads_used + 1
      WHERE id = $1 AND (max_uploads IS NULL OR uploads_used < max_uploads)`,
    [tokenId],
  );
  return (res.rowCount ?? 0) > 0;
}
