// The one completion of a session, whatever its mode: under the session's lease (one at a
// time; a second waits, then finds it committed and replays), the session moves to
// 'completing' (the expiry timer no longer takes it), the mode verifies its bytes into a
// StagedCopy, and the copy is delivered to the key's workflow like any upload's.
import type { Pool } from '../db/pool';
import type { SessionMode } from '../modes';
import { moveSession, type SessionRow } from '../db/queries/sessions';
import { dependency } from '../errors';
import { isLimitRefusal } from '../upload/grant-limits';
import type { UploadOutcome, UploadReceiver } from '../upload/receive';
import type { StagedCopy } from '../upload/types';
import { withLease } from './lease';
import { uploadRequest, type SessionRegistry } from './registry';

/** A completion holds the lease this long (assembling or checking GiBs takes a while). */
const COMPLETE_LEASE_SECONDS = 120;
/** How long a second completion waits for the first. */
const COMPLETE_WAIT_MS = 60_000;

export interface CompleteDeps {
  pool: Pool;
  receiver: UploadReceiver;
  registry: SessionRegistry;
}

export async function completeSession(
  deps: CompleteDeps,
  target: { tenantId: string; id: string; mode: SessionMode; idleSeconds: number },
  waitMs: number,
  /** The mode's check of its bytes; a failure leaves the session open (or gone, if the check discarded it). */
  verify: (s: SessionRow) => Promise<StagedCopy>,
): Promise<UploadOutcome> {
  const { pool: db, receiver } = deps;
  const lease = { seconds: COMPLETE_LEASE_SECONDS, stallSeconds: COMPLETE_LEASE_SECONDS, waitMs: COMPLETE_WAIT_MS };
  return withLease(db, target.tenantId, target.id, target.mode, lease, async (s) => {
    const req = uploadRequest(s);
    if (s.state === 'committed') {
      const replay = await receiver.replay(req);
      if (replay) return replay;
    }
    await dependency('database_unavailable', () => moveSession(db, s.id, ['open', 'completing'], 'completing'));
    let copy: StagedCopy;
    try {
      copy = await verify(s);
    } catch (err) {
      await moveSession(db, s.id, ['completing'], 'open').catch(() => {}); // a completion may start from 'completing' too
      throw err;
    }
    const outcome = await receiver
      .deliver(req, copy, waitMs, { resumable: { sessionId: s.id, idleSeconds: target.idleSeconds } })
      .catch(async (err: unknown) => {
        // Bytes past the upload token's limits: the session goes with them, and the key is free.
        if (s.upload_grant && isLimitRefusal(err)) await deps.registry.discard(s, { object: true });
        throw err;
      });
    // Left 'completing': the next request completes again and gets the key's answer.
    if (outcome.kind === 'answer') await moveSession(db, s.id, ['completing'], 'committed').catch(() => {});
    return outcome;
  });
}
