// Keyset pagination over (created_at, id), shared by the upload and event lists: a page's
// position is its last row's creation time in microseconds (exact, where a JavaScript Date
// holds milliseconds) and id; the next page is the rows strictly past it.
import type { Queryable } from '../pool';

/** Where a page of a list (uploads, events) starts: after this creation time (µs since the epoch) and id. */
export interface ListPosition {
  createdMicros: string;
  id: string;
}

/** The select-list item that yields each row's position time (`alias` qualifies the table). */
export function positionColumn(alias = ''): string {
  return `(extract(epoch FROM ${alias}created_at) * 1000000)::bigint::text AS created_micros`;
}

/**
 * The condition "past `after`" in `direction` (`<` newest first, `>` oldest first), its two
 * values appended to `values`; `idType` is the id column's type, so the index serves it.
 */
export function pastPosition(values: unknown[], after: ListPosition, direction: '<' | '>', idType: 'uuid' | 'text', alias = ''): string {
  values.push(after.createdMicros, after.id);
  const [micros, id] = [values.length - 1, values.length];
  return `(${alias}created_at, ${alias}id) ${direction} (timestamptz 'epoch' + $${micros}::bigint * interval '1 microsecond', $${id}::${idType})`;
}

/**
 * One page of `from` rows matching `where` (whose values are `values`, $1 on) in creation
 * order, past `page.after`, `page.limit` at most, each with its position (`created_micros`).
 */
export async function pageInCreationOrder<T extends object>(
  db: Queryable,
  q: { columns: string; from: string; where: string; values: unknown[] },
  page: { after?: ListPosition; limit: number },
): Promise<(T & { created_micros: string; id: string })[]> {
  const values = [...q.values];
  const past = page.after ? ` AND ${pastPosition(values, page.after, '>', 'uuid')}` : '';
  values.push(page.limit);
  const res = await db.query<T & { created_micros: string; id: string }>(
    `SELECT ${q.columns}, ${positionColumn()} FROM ${q.from} WHERE ${q.where}${past} ORDER BY created_at, id LIMIT $${values.length}`,
    values,
  );
  return res.rows;
}
