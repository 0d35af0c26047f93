// Legal holds: a held upload cannot be deleted — by a request (409 legal_hold), retention,
// its own expiry or its tenant's deletion — until the hold is released. Placing and releasing
// are idempotent (the same hold again changes nothing); each change is numbered and sends one
// event, written in the same transaction and announced after it. Where the store has S3 Object
// Lock, its own legal hold is set on each of the upload's objects after the change commits
// (a retry sets it again), so a delete that bypasses Oncely is refused by the store.
import type { Pool, Queryable } from '../db/pool';
import { withTransaction } from '../db/pool';
import { findEvent } from '../db/queries/events';
import { heldElsewhere, lockHold, setHold, type HoldRow } from '../db/queries/legal-holds';
import type { ObjectStore } from '../storage/store';
import { renditionPrefix } from '../storage/layout';
import { numberedEventId, type EventType } from '../downstream/events';
import { dependency, problem } from '../errors';
import { announce, eventOfPayload, writeEvent, type AnnounceDeps, type TimedEvent } from '../downstream/announce';

/** What the store did with the hold: set on the upload's objects, or nothing (no Object Lock). */
export type StoreHold = 'placed' | 'released' | 'unsupported';

export class LegalHolds {
  constructor(private readonly deps: AnnounceDeps & { pool: Pool; store: ObjectStore }) {}

  /** Holds the upload for `reason` (null: releases it). The hold as it now is, and what the store did. */
  async set(tenantId: string, uploadId: string, reason: string | null, changedBy: string): Promise<{ row: HoldRow; storeHold: StoreHold }> {
    const made = await dependency('database_unavailable', () =>
      withTransaction(this.deps.pool, async (tx) => {
        const row = await lockHold(tx, tenantId, uploadId);
        if (!row) throw problem('not_found', 'No such upload.');
        if (row.tenant_closed) throw problem('tenant_deleted', 'This tenant has been deleted.');
        // Deleted: too late, unless within its restore window (the hold then stops the erasure).
        if (row.deleted_at && !row.restorable_until) throw problem('upload_deleted', 'This upload was deleted.', { extra: { uploadId } });
        // The same hold again (a retry): its last change's event is announced again, in case the first answer was lost before it.
        if (row.hold_reason === reason) return { row, event: row.hold_changes > 0 ? await lastEvent(tx, tenantId, row) : undefined };
        const held = await setHold(tx, uploadId, reason, changedBy);
        const event = holdEvent(tenantId, held, changedBy);
        await writeEvent(tx, event);
        return { row: held, event };
      }),
    );
    if (made.event) await announce(this.deps, made.event);
    const storeHold = await dependency('storage_unavailable', () => this.mirror(made.row));
    return { row: made.row, storeHold };
  }

  /**
   * The store's hold on the original and everything under the upload's rendition prefix set
   * to match the row. A shared original (dedupe) stays held while another held upload has it.
   */
  private async mirror(row: HoldRow): Promise<StoreHold> {
    const { store, pool } = this.deps;
    if (!store.setLegalHold) return 'unsupported';
    const on = row.hold_reason !== null;
    const keys = on || !(await heldElsewhere(pool, row.storage_key, row.id)) ? [row.storage_key] : [];
    for await (const o of store.list(renditionPrefix(row.tenant_id, row.id, row.storage_key))) keys.push(o.key);
    let held = false;
    for (const key of keys) held = (await store.setLegalHold(key, on)) || held;
    return !held ? 'unsupported' : on ? 'placed' : 'released';
  }
}

async function lastEvent(tx: Queryable, tenantId: string, row: HoldRow): Promise<TimedEvent | undefined> {
  const type: EventType = row.hold_reason === null ? 'upload.hold_released' : 'upload.hold_placed';
  const id = numberedEventId(row.id, type, row.hold_changes);
  const stored = await findEvent(tx, tenantId, id);
  return stored && eventOfPayload(id, tenantId, row.id, stored.payload);
}

function holdEvent(tenantId: string, row: HoldRow, changedBy: string): TimedEvent {
  const type: EventType = row.hold_reason === null ? 'upload.hold_released' : 'upload.hold_placed';
  const timestamp = (row.held_at ?? new Date()).toISOString();
  return {
    id: numberedEventId(row.id, type, row.hold_changes),
    type,
    tenantId,
    uploadId: row.id,
    timestamp,
    data: { uploadId: row.id, reason: row.hold_reason, changedBy, changedAt: timestamp },
  };
}
