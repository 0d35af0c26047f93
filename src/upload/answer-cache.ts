// Recently replayed answers, kept in process memory: retry storms and repeated replays are
// answered without a database round trip. A completed key's answer changes only when its
// upload is deleted (it becomes 410): the process answering the DELETE forgets it at once,
// others hold a copy at most `maxAgeMs` (REPLAY_CACHE_SECONDS). Entries also live no longer
// than the key itself, and the cache is bounded in bytes.
import { LRUCache } from 'lru-cache';
import type { LiveKeyAnswer } from '../db/queries/idempotency-keys';

/** Bodies larger than this are not cached (a replay of them reads the row). */
const MAX_ENTRY_BYTES = 64 * 1024;

export class AnswerCache {
  private readonly lru: LRUCache<string, LiveKeyAnswer> | undefined;

  constructor(
    maxBytes: number,
    private readonly maxAgeMs = 30_000,
  ) {
    this.lru =
      maxBytes > 0
        ? new LRUCache({ maxSize: maxBytes, sizeCalculation: (a) => a.response_body.length + a.fingerprint.length + 200 })
        : undefined;
  }

  get(tenantId: string, key: string): LiveKeyAnswer | undefined {
    return this.lru?.get(`${tenantId}\n${key}`);
  }

  /** Caches a live answer for at most the key's remaining lifetime. */
  remember(tenantId: string, key: string, answer: LiveKeyAnswer): void {
    if (!this.lru || answer.ttl_seconds <= 0 || answer.response_body.length > MAX_ENTRY_BYTES) return;
    this.lru.set(`${tenantId}\n${key}`, answer, { ttl: Math.min(this.maxAgeMs, Math.floor(answer.ttl_seconds * 1000)) });
  }

  /** Drops a key's answer (its upload was deleted: the stored answer is now 410). */
  forget(tenantId: string, key: string): void {
    this.lru?.delete(`${tenantId}\n${key}`);
  }
}
