// The window a usage query covers: whole buckets in UTC, bounded in count.
import type { Granularity } from '../db/queries/byte-quotas';
import { problem } from '../errors';

const BUCKET_MS: Record<Granularity, number> = { hour: 3_600_000, day: 86_400_000 };
/** A query answers at most this many buckets (hourly: ~83 days; daily: ~5 years). */
export const MAX_BUCKETS = 2000;
const DEFAULT_BUCKETS: Record<Granularity, number> = { hour: 48, day: 30 };

export interface UsageWindow {
  from: Date;
  to: Date;
  granularity: Granularity;
}

/** [from, to) widened to whole buckets; 400 query_invalid when empty or too long. */
export function usageWindow(q: { from?: string; to?: string; granularity: Granularity }, now = new Date()): UsageWindow {
  const size = BUCKET_MS[q.granularity];
  const to = Math.ceil((q.to ? Date.parse(q.to) : now.getTime()) / size) * size;
  const from = Math.floor((q.from ? Date.parse(q.from) : to - DEFAULT_BUCKETS[q.granularity] * size) / size) * size;
  if (from >= to) throw problem('query_invalid', '`from` must be before `to`.');
  if ((to - from) / size > MAX_BUCKETS)
    throw problem('query_invalid', `At most ${MAX_BUCKETS} buckets per query: narrow the window or use granularity=day.`);
  return { from: new Date(from), to: new Date(to), granularity: q.granularity };
}
