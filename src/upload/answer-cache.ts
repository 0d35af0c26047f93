// Recently replayed answers, kept in process memory. A completed key's answer never changes
// until it expires, so a copy is as good as the row: retry storms and repeated replays are
// answered without a database round trip. Entries live no longer than the key itself
// (then the database answers `idempotency_key_expired`), and the cache is bounded in bytes.
import { LRUCache } from 'lru-cache';
import type { LiveKeyAnswer } from '../db/queries/idempotency-keys';

/** Bodies larger than this are not cached (a replay of them reads the row). */
const MAX_ENTRY_BYTES = 64 * 1024;

export class AnswerCache {
  private readonly lru: LRUCache<string, LiveKeyAnswer> | undefined;

  constructor(maxBytes: number) {
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
    this.lru.set(`${tenantId}\n${key}`, answer, { ttl: Math.floor(answer.ttl_seconds * 1000) });
  }
}
