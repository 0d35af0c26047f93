// The list kit every list route shares: a query parsed by its schema into one problem, the
// opaque cursor (base64url: a page's last position, creation time in microseconds and id, or
// for lists in name order the last name, or an item number), and the page cut from its rows.
import type { z } from 'zod';
import { dependency, problem } from '../errors';
import type { ListPosition } from '../db/queries/keyset';
import { PageQuery } from './schemas';

/** Ids the creation-order lists page over: uuids (uploads, keys, endpoints) and event ids. */
export const UUID_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const EVENT_ID = /^evt_[0-9a-z_]{1,80}$/;
/** The last microsecond of year 9999: no row is created later. */
const LATEST_MICROS = 253_402_300_799_999_999n;

export function encodeCursor(p: ListPosition): string {
  return Buffer.from(`${p.createdMicros}.${p.id}`).toString('base64url');
}

export const forgedCursor = () =>
  problem('query_invalid', 'cursor is not one this API handed out: pass the nextCursor of the previous page as it is.');

/** A creation-order cursor back to its position; `id` checks the id part. */
export function decodeCursor(cursor: string, id: RegExp): ListPosition {
  const m = /^(\d{1,19})\.(.+)$/.exec(Buffer.from(cursor, 'base64url').toString('latin1'));
  if (!m || !id.test(m[2]!) || BigInt(m[1]!) > LATEST_MICROS) throw forgedCursor();
  return { createdMicros: m[1]!, id: m[2]! };
}

/** A query parsed by its schema; a failure is one problem: an unknown parameter by name, else the first message. */
export function parseQuery<S extends z.ZodType>(schema: S, query: Record<string, unknown>): z.output<S> {
  const r = schema.safeParse(query);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const unknown = issue?.code === 'unrecognized_keys' ? `Unknown query parameter: ${issue.keys.join(', ')}.` : undefined;
  throw problem('query_invalid', unknown ?? issue?.message);
}

/** The page query every list takes: its raw cursor and its limit. */
function parsePage(query: Record<string, string>): { cursor?: string; limit: number } {
  const q = parseQuery(PageQuery, query);
  return { cursor: q.cursor, limit: q.limit ?? 50 };
}

/** A list in creation order of rows with uuid ids (API keys, webhook endpoints). */
export function parsePageQuery(query: Record<string, string>): { after?: ListPosition; limit: number } {
  const { cursor, limit } = parsePage(query);
  return { after: cursor === undefined ? undefined : decodeCursor(cursor, UUID_ID), limit };
}

export const encodeNumberCursor = (n: number) => Buffer.from(String(n)).toString('base64url');

/** A number cursor (an item number of at most five digits) back to the number; absent: 0. */
export function decodeNumberCursor(cursor: string | undefined): number {
  const after = cursor === undefined ? '0' : Buffer.from(cursor, 'base64url').toString('latin1');
  if (!/^\d{1,5}$/.test(after)) throw forgedCursor();
  return Number(after);
}

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

/**
 * One page of a list in creation order (the query's `cursor` and `limit`): `load` reads
 * `limit + 1` rows after the position (pageInCreationOrder), the page keeps `limit` of them.
 */
export async function creationOrderPage<T extends { created_micros: string; id: string }>(
  query: Record<string, string>,
  load: (page: { after?: ListPosition; limit: number }) => Promise<T[]>,
): Promise<{ items: T[]; nextCursor: string | null }> {
  const { after, limit } = parsePageQuery(query);
  const rows = await dependency('database_unavailable', () => load({ after, limit: limit + 1 }));
  return pageOf(rows, limit, (last) => encodeCursor({ createdMicros: last.created_micros, id: last.id }));
}
