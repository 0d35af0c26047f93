// The one lease on a session row: whoever holds it may write the session (a tus PATCH, a
// termination, a completion); others wait for it or are told 423. Shaped like
// withTransaction: taken, the work runs, released whatever happens. A holder that stalls
// (no progress for `stallSeconds`) or outlives `seconds` is taken over.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from '../db/pool';
import { findSession, releaseLease, takeLease, type SessionMode, type SessionRow } from '../db/queries/sessions';
import { dependency, problem } from '../errors';

export interface LeaseOptions {
  seconds: number;
  stallSeconds: number;
  /** Wait up to this long for a held lease (polling); 0: answer 423 at once. */
  waitMs?: number;
}

export function noSuchSession() {
  return problem('not_found', 'No such upload (it may have expired or been terminated).');
}

/** Runs `work` under the session's lease; 404 when there is no such session of `mode`, 423 while another holds it. */
export async function withLease<T>(pool: Pool, tenantId: string, id: string, mode: SessionMode, opts: LeaseOptions, work: (s: SessionRow, owner: string) => Promise<T>): Promise<T> {
  const owner = randomUUID();
  const deadline = Date.now() + (opts.waitMs ?? 0);
  let leased: SessionRow | undefined;
  for (;;) {
    leased = await dependency('database_unavailable', () => takeLease(pool, tenantId, id, owner, opts.seconds, opts.stallSeconds));
    if (leased) break;
    if (!(await dependency('database_unavailable', () => findSession(pool, tenantId, id, mode)))) throw noSuchSession();
    if (Date.now() >= deadline) throw problem('upload_locked', 'Another request is writing to this upload; retry shortly.');
    await sleep(100);
  }
  try {
    // Another mode's session under this id is not one of this mode's.
    if (leased.mode !== mode) throw noSuchSession();
    return await work(leased, owner);
  } finally {
    await releaseLease(pool, id, owner).catch(() => {});
  }
}
