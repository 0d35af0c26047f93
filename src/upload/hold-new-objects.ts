// An upload's legal hold reaches the objects written for it after it was recorded.
import type { Queryable } from '../db/pool';
import { isHeld } from '../db/queries/legal-holds';
import type { ObjectStore } from '../storage/store';

/**
 * Objects written for an upload once it is recorded (a rendition, a variant) are held in the
 * store too while the upload is held: a hold placed while they were written lists them only
 * if they were there already, and this check, after the row, covers the other order.
 */
export async function holdNewObjects(pool: Queryable, store: ObjectStore, uploadId: string, keys: string[]): Promise<void> {
  // Where no bucket holds (the common case) the row is not read.
  const first = keys[0];
  if (first === undefined || !store.setLegalHold || !(await store.holdsObjects?.(first)) || !(await isHeld(pool, uploadId))) return;
  for (const key of keys) await store.setLegalHold(key, true);
}
