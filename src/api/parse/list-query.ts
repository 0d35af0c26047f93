// The queries of the list routes: filters validated by the API's schemas, and the opaque
// cursor, base64url-encoded: a page's last position (creation time in microseconds and id),
// or, for lists in name order, the last name.
import { problem } from '../../errors';
import type { UploadFilter } from '../../db/queries/uploads';
import type { z } from 'zod';
import type { EventFilter } from '../../db/queries/events';
import type { ListPosition } from '../../db/queries/keyset';
import { BatchItemsQuery, ListUploadsQuery } from '../schemas';
import { ListEventsQuery } from '../webhook-schemas';
import { PageQuery } from '../../http/schemas';

const UPLOAD_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const EVENT_ID = /^evt_[0-9a-z_]{1,80}$/;
/** The last microsecond of year 9999: no row is created later. */
const LATEST_MICROS = 253_402_300_799_999_999n;

export function encodeCursor(p: ListPosition): string {
  return Buffer.from(`${p.createdMicros}.${p.id}`).toString('base64url');
}

const forgedCursor = () =>
  problem('query_invalid', 'cursor is not one this API handed out: pass the nextCursor of the previous page as it is.');

function decodeCursor(cursor: string, id: RegExp): ListPosition {
  const m = /^(\d{1,19})\.(.+)$/.exec(Buffer.from(cursor, 'base64url').toString('latin1'));
  if (!m || !id.test(m[2]!) || BigInt(m[1]!) > LATEST_MICROS) throw forgedCursor();
  return { createdMicros: m[1]!, id: m[2]! };
}

/** The issues of a failed parse as one problem: an unknown parameter by name, else the first message. */
function queryProblem(issue: z.core.$ZodIssue | undefined) {
  const unknown = issue?.code === 'unrecognized_keys' ? `Unknown query parameter: ${issue.keys.join(', ')}.` : undefined;
  return problem('query_invalid', unknown ?? issue?.message);
}

export function parseListQuery(query: Record<string, string>): { filter: UploadFilter; after?: ListPosition; limit: number } {
  const r = ListUploadsQuery.safeParse(query);
  if (!r.success) throw queryProblem(r.error.issues[0]);
  const q = r.data;
  return {
    filter: {
      status: q.status,
      contentType: q.contentType,
      createdAfter: q.createdAfter ? new Date(q.createdAfter) : undefined,
      createdBefore: q.createdBefore ? new Date(q.createdBefore) : undefined,
      idempotencyKey: q.idempotencyKey,
      subject: q.subject,
    },
    after: q.cursor === undefined ? undefined : decodeCursor(q.cursor, UPLOAD_ID),
    limit: q.limit ?? 50,
  };
}

export function parseEventQuery(query: Record<string, string>): { filter: EventFilter; after?: ListPosition; limit: number } {
  const r = ListEventsQuery.safeParse(query);
  if (!r.success) throw queryProblem(r.error.issues[0]);
  const q = r.data;
  return {
    filter: { type: q.type, uploadId: q.uploadId, deliveryFailed: q.deliveryFailed === 'true' },
    after: q.cursor === undefined ? undefined : decodeCursor(q.cursor, EVENT_ID),
    limit: q.limit ?? 50,
  };
}

/** The page query every list takes: its raw cursor and its limit. */
function parsePage(query: Record<string, string>): { cursor?: string; limit: number } {
  const r = PageQuery.safeParse(query);
  if (!r.success) throw queryProblem(r.error.issues[0]);
  return { cursor: r.data.cursor, limit: r.data.limit ?? 50 };
}

/** A list in creation order of rows with uuid ids (API keys, webhook endpoints). */
export function parsePageQuery(query: Record<string, string>): { after?: ListPosition; limit: number } {
  const { cursor, limit } = parsePage(query);
  return { after: cursor === undefined ? undefined : decodeCursor(cursor, UPLOAD_ID), limit };
}

/** A batch's items in order (the cursor is the last item's number), optionally of one state. */
export function parseBatchItemsQuery(query: Record<string, string>): {
  state?: 'pending' | 'done' | 'failed' | 'skipped';
  after: number;
  limit: number;
} {
  const r = BatchItemsQuery.safeParse(query);
  if (!r.success) throw queryProblem(r.error.issues[0]);
  const after = r.data.cursor === undefined ? '0' : Buffer.from(r.data.cursor, 'base64url').toString('latin1');
  if (!/^\d{1,5}$/.test(after)) throw forgedCursor();
  return { ...(r.data.state ? { state: r.data.state } : {}), after: Number(after), limit: r.data.limit ?? 50 };
}

export const encodeNumberCursor = (n: number) => Buffer.from(String(n)).toString('base64url');

/** A list in name order (`name` checks a name is one the list can hold). */
export function parseNamePageQuery(query: Record<string, string>, name: RegExp): { after?: string; limit: number } {
  const { cursor, limit } = parsePage(query);
  const after = cursor === undefined ? undefined : Buffer.from(cursor, 'base64url').toString('latin1');
  if (after !== undefined && !name.test(after)) throw forgedCursor();
  return { after, limit };
}

export const encodeNameCursor = (name: string) => Buffer.from(name).toString('base64url');

/** The page's items and the cursor of the next one, from `limit + 1` rows read. */
export function pageOf<T>(rows: T[], limit: number, cursorOf: (last: T) => string): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, limit);
  return { items, nextCursor: rows.length > limit ? cursorOf(items[items.length - 1]!) : null };
}
