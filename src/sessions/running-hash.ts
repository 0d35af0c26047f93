// The whole-file SHA-256 of an appended session (tus, the IETF draft). Node's native hash
// runs at ~1.4 GiB/s here where a hash whose state can be saved to Postgres (hash-wasm) ran
// at ~180 MiB/s and took 40 % of a resumable upload's API CPU; but a native hash's state
// cannot leave the process. So each process holds, per session it appends to, the hash over
// exactly the acknowledged bytes. An append that finds the session at the offset its process
// holds continues that hash; one that does not (the appends changed hands: another replica, a
// restart, an eviction) goes on unhashed, and the digest is then taken from the assembled
// object at completion: one read of the stored bytes, only when hands changed.
import { createHash, type Hash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { LRUCache } from 'lru-cache';
import { metrics } from '../metrics';

/**
 * Stored as the session row's `sha256_state` by this code: not a saved state. Builds that
 * saved hash-wasm states refuse to load it (hash-wasm checks its own prefix), so during a
 * rolling deploy an older process fails such an append (retried) instead of hashing from zero.
 */
export const HASH_HELD_IN_PROCESS = Buffer.from([0]);

/** Sessions whose running hash one process holds at once; past this the oldest go to read-back. */
const MAX_HELD = 4096;

export class RunningHashes {
  private readonly held = new LRUCache<string, { offset: number; hash: Hash }>({ max: MAX_HELD });

  /**
   * A hash over the session's first `offset` bytes for an append to continue, or null when
   * this process does not hold one at that offset (the append then hashes nothing).
   */
  resume(sessionId: string, offset: number): Hash | null {
    if (offset === 0) return createHash('sha256');
    const held = this.held.get(sessionId);
    return held?.offset === offset ? held.hash.copy() : null;
  }

  /** Records `hash` as covering the session's first `offset` acknowledged bytes (the caller must not update it after). */
  hold(sessionId: string, offset: number, hash: Hash): void {
    this.held.set(sessionId, { offset, hash });
  }

  /**
   * The hex SHA-256 of a session's `length` bytes: from the hash held here when it covers
   * them all, else read back from the assembled object.
   */
  async digest(sessionId: string, length: number, read: () => Promise<Readable>): Promise<string> {
    const held = this.held.get(sessionId);
    this.held.delete(sessionId);
    if (held?.offset === length) return held.hash.digest('hex');
    metrics.resumableHashReadBack.inc();
    const hash = createHash('sha256');
    for await (const chunk of await read()) hash.update(chunk as Buffer);
    return hash.digest('hex');
  }
}
