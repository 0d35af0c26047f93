// The one lease on a session row: whoever holds it may write the session (a tus PATCH, a
// termination, a completion); others wait for it or are told 423. Shaped like
// withTransaction: taken, the work runs, released whatever happens. A holder that stalls
// (no progress for `stallSeconds`) or outlives `seconds` is taken over. With `renew`, the
// lease is renewed every second while the work runs, marked as progressing when the work
// reported progress or has a store write in flight, and the work hears when it was lost.
import type { SessionMode } from '../modes';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from '../db/pool';
import { findSession, releaseLease, renewLease, takeLease, type SessionRow } from '../db/queries/sessions';
import { dependency, problem } from '../errors';

/** How often a renewed lease is renewed (and checked to be still held). */
const RENEW_EVERY_MS = 1_000;

export interface LeaseOptions {
  seconds: number;
  stallSeconds: number;
  /** Wait up to this long for a held lease (polling); 0: answer 423 at once. */
  waitMs?: number;
  /** Renew the lease while the work runs (long writes). */
  renew?: boolean;
}

/** The lease as its work sees it. */
export interface Lease {
  owner: string;
  /** The work moved on (bytes arrived): it is not stalled. */
  progressed(): void;
  /** Runs a store write under the lease: refused once the lease is lost; progress while in flight. */
  write<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Starts a store write that waits on the client for its bytes (a part streamed while it
   * arrives): refused once the lease is lost, and not progress while it waits, so a stalled
   * client is still taken over; the caller aborts it when the lease is lost.
   */
  begin<T>(fn: () => T): T;
  /** Called once if another request takes the lease over. */
  onLost(fn: () => void): void;
}

export function noSuchSession() {
  return problem('not_found', 'No such upload (it may have expired or been terminated).');
}

export function leaseLost() {
  return problem('upload_locked', 'Another request took over this upload; HEAD it for the offset.');
}

/** Runs `work` under the session's lease; 404 when there is no such session of `mode`, 423 while another holds it. */
export async function withLease<T>(
  pool: Pool,
  tenantId: string,
  id: string,
  mode: SessionMode,
  opts: LeaseOptions,
  work: (s: SessionRow, lease: Lease) => Promise<T>,
): Promise<T> {
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
  let moved = false;
  let writes = 0;
  let lost = false;
  const lostListeners: (() => void)[] = [];
  const lease: Lease = {
    owner,
    progressed: () => void (moved = true),
    async write(fn) {
      if (lost) throw leaseLost();
      writes++;
      try {
        return await fn();
      } finally {
        writes--;
      }
    },
    begin(fn) {
      if (lost) throw leaseLost();
      return fn();
    },
    onLost: (fn) => void lostListeners.push(fn),
  };
  const renewal = opts.renew
    ? setInterval(() => {
        const progressed = moved || writes > 0;
        moved = false;
        void renewLease(pool, id, owner, opts.seconds, progressed).then(
          (held) => {
            if (held || lost) return;
            lost = true;
            for (const fn of lostListeners) fn();
          },
          () => {},
        );
      }, RENEW_EVERY_MS)
    : undefined;
  renewal?.unref();
  try {
    // Another mode's session under this id is not one of this mode's.
    if (leased.mode !== mode) throw noSuchSession();
    return await work(leased, lease);
  } finally {
    clearInterval(renewal);
    await releaseLease(pool, id, owner).catch(() => {}); // an unreleased lease expires in leaseSeconds
  }
}
