// Phase "settle": an attempt's copy is deleted only once the key's committed answer (the key
// row) names another object, or the key's run ended without one; the offer's own answer is
// not enough (a lost workflow task may have committed a copy its re-run calls not_needed).
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Pool } from '../db/pool';
import { findKeyAnswer } from '../db/queries/idempotency-keys';
import { objectInUse } from '../db/queries/records';
import type { ObjectStore } from '../storage/store';
import type { StagedCopy, UploadRequest } from './types';

/** Where delivering a copy ended: what decides the copy's fate (`copyFate`). */
export type DeliveryEnd =
  /** Refused before any run saw it (bad rest of the request, checksum, token limits, admission), or answered by a replay. */
  | { at: 'before-offer' }
  /** The offer's outcome is unknown (deadline, connection lost): the copy may be the upload. */
  | { at: 'offer-unknown' }
  /** No run's handler saw the copy: a session's copy stays for its next attempt, unless the key is another request's. */
  | { at: 'offer-refused'; session: boolean; keyReuse: boolean }
  /** Offered; the run then failed or could not be awaited. A key reuse wrote nothing that could name the copy. */
  | { at: 'after-offer'; keyReuse: boolean }
  /** The key's answer, when it was read (a committed answer decides; none yet: read it later). */
  | { at: 'answered'; committedBody: string | undefined };

/** What becomes of a copy. */
export type CopyFate = 'discard' | 'keep' | 'settle-later' | { settleAgainst: string };

/** The one decision of what becomes of an offered copy, from where its delivery ended. */
export function copyFate(end: DeliveryEnd): CopyFate {
  switch (end.at) {
    case 'before-offer':
      return 'discard';
    case 'offer-unknown':
      return 'settle-later';
    case 'offer-refused':
      return end.session && !end.keyReuse ? 'keep' : 'discard';
    case 'after-offer':
      return end.keyReuse ? 'discard' : 'settle-later';
    case 'answered':
      return end.committedBody === undefined ? 'settle-later' : { settleAgainst: end.committedBody };
  }
}

const SETTLE_INTERVAL_MS = 2_000;
const SETTLE_ATTEMPTS = 150;

export class CopySettler {
  constructor(private readonly deps: { pool: Pool; store: ObjectStore; temporal: Client }) {}

  /** Does what `copyFate` decides for where the delivery of `copy` ended. */
  async after(end: DeliveryEnd, req: UploadRequest, workflowId: string, copy: StagedCopy): Promise<void> {
    const fate = copyFate(end);
    if (fate === 'discard') return this.discard(copy);
    if (fate === 'settle-later') return this.settleLater(req, workflowId, copy);
    if (fate !== 'keep') return this.settle(copy, fate.settleAgainst);
  }

  /** Deletes the copy unless the committed answer (`body`) names it as the upload. */
  async settle(copy: StagedCopy, body: string): Promise<void> {
    if (committedStorageKey(body) !== copy.storageKey) await this.discard(copy);
  }

  /**
   * Settles the copy once the key's answer is committed (read from Postgres), or deletes it
   * once the key's run has ended without one. Bounded; anything still open is left to
   * housekeeping, which removes objects no upload references.
   */
  settleLater(req: UploadRequest, workflowId: string, copy: StagedCopy, attempt = 0): void {
    if (attempt >= SETTLE_ATTEMPTS) return;
    const timer = setTimeout(async () => {
      try {
        const row = await findKeyAnswer(this.deps.pool, req.tenantId, req.idempotencyKey);
        if (row?.expired) return; // long gone: housekeeping decides from the upload rows
        if (row && row.response_status !== null) return void (await this.settle(copy, row.response_body));
        const { status } = await this.deps.temporal.withDeadline(Date.now() + 5_000, () =>
          this.deps.temporal.workflow.getHandle(workflowId).describe(),
        );
        // Failed, timed out, terminated or cancelled: no answer was committed from any copy.
        if (status.name !== 'RUNNING' && status.name !== 'COMPLETED') return void (await this.discard(copy));
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return void (await this.discard(copy));
      }
      this.settleLater(req, workflowId, copy, attempt + 1);
    }, SETTLE_INTERVAL_MS);
    timer.unref();
  }

  async discard(copy: StagedCopy): Promise<void> {
    // Best effort: housekeeping removes anything left behind. Bytes an upload names (a
    // shared object under dedupe, offered again as an instant upload) are never a copy to drop.
    try {
      if (await objectInUse(this.deps.pool, copy.storageKey)) return;
      await this.deps.store.delete(copy.storageKey);
    } catch {
      // left to housekeeping
    }
  }
}

/** The object a committed answer names (absent for a recorded rejection). */
function committedStorageKey(body: string): string | undefined {
  try {
    const key = (JSON.parse(body) as { storageKey?: unknown }).storageKey;
    return typeof key === 'string' ? key : undefined;
  } catch {
    return undefined;
  }
}
