// The query of GET /v1/uploads: filters validated by the API's schema, and the opaque cursor
// (a page's last position: creation time in microseconds and id, base64url-encoded).
import { problem } from '../../errors';
import type { UploadFilter, UploadPosition } from '../../db/queries/uploads';
import { ListUploadsQuery } from '../schemas';

const POSITION = /^(\d{1,19})\.([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export function encodeCursor(p: UploadPosition): string {
  return Buffer.from(`${p.createdMicros}.${p.id}`).toString('base64url');
}

function decodeCursor(cursor: string): UploadPosition {
  const m = POSITION.exec(Buffer.from(cursor, 'base64url').toString('latin1'));
  if (!m) throw problem('query_invalid', 'cursor is not one this API handed out: pass the nextCursor of the previous page as it is.');
  return { createdMicros: m[1]!, id: m[2]! };
}

export function parseListQuery(query: Record<string, string>): { filter: UploadFilter; after?: UploadPosition; limit: number } {
  const r = ListUploadsQuery.safeParse(query);
  if (!r.success) {
    const issue = r.error.issues[0];
    const unknown = issue?.code === 'unrecognized_keys' ? `Unknown query parameter: ${issue.keys.join(', ')}.` : undefined;
    throw problem('query_invalid', unknown ?? issue?.message);
  }
  const q = r.data;
  return {
    filter: {
      status: q.status,
      contentType: q.contentType,
      createdAfter: q.createdAfter ? new Date(q.createdAfter) : undefined,
      createdBefore: q.createdBefore ? new Date(q.createdBefore) : undefined,
      idempotencyKey: q.idempotencyKey,
    },
    after: q.cursor === undefined ? undefined : decodeCursor(q.cursor),
    limit: q.limit ?? 50,
  };
}
