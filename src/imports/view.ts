// An import not yet committed, as GET /v1/uploads/{id} and the import's 202 show it.
import type { ImportRow } from '../db/queries/imports';

export interface FailedAnswer {
  status: number;
  body: string;
}

/** `failure`: the answer a failed import recorded under its key, when there is one. */
export function importView(row: ImportRow, failure?: FailedAnswer) {
  return {
    uploadId: row.id,
    status: row.state,
    idempotencyKey: row.idempotency_key,
    origin: row.origin,
    tokenId: row.token_id,
    bytesFetched: Number(row.bytes_fetched),
    bytesTotal: row.bytes_total === null ? null : Number(row.bytes_total),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    ...(row.state === 'failed' ? { error: failure ? (JSON.parse(failure.body) as Record<string, unknown>) : null } : {}),
  };
}
export type ImportView = ReturnType<typeof importView>;
