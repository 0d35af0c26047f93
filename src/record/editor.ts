// Changes to an upload's record (its metadata and tags), one version at a time. A change
// names the version it was made from (If-Match); under the row's lock it becomes the next
// version, the row, the label index and its upload.updated event in one transaction. The
// same change sent again (a retry after a lost answer) is recognised by its request hash
// and answered with the version it made: one version, one event, whatever is retried.
import { createHash } from 'node:crypto';
import type { Pool } from '../db/pool';
import { withTransaction } from '../db/pool';
import { findEvent } from '../db/queries/events';
import {
  applyVersion,
  findVersion,
  insertVersion,
  listVersions,
  lockRecord,
  writeLabels,
  type RecordRow,
  type VersionRow,
} from '../db/queries/upload-record';
import { findUpload } from '../db/queries/uploads';
import { numberedEventId } from '../downstream/events';
import { dependency, problem } from '../errors';
import { sortedKeys } from '../upload/fingerprint';
import { announce, eventOfPayload, writeEvent, type AnnounceDeps, type TimedEvent } from '../downstream/announce';

/** What a PATCH sets: each field given replaces the current one (`metadata: null` clears it). */
export interface RecordChange {
  metadata?: Record<string, unknown> | null;
  tags?: string[];
}

/** Who made version 1: the upload itself. */
export const AS_UPLOADED = 'upload';

export class RecordEditor {
  constructor(private readonly deps: AnnounceDeps & { pool: Pool; /** RECORD_MAX_VERSIONS */ maxVersions: number }) {}

  /** Makes `change` the version after `base`, or finds the version this very change already made. */
  async change(
    tenantId: string,
    uploadId: string,
    base: number,
    change: RecordChange,
    changedBy: string,
  ): Promise<{ version: VersionRow; replayed: boolean }> {
    const requestHash = createHash('sha256')
      .update(JSON.stringify([changedBy, base, sortedKeys(change)]))
      .digest('hex');
    const made = await dependency('database_unavailable', () =>
      withTransaction(this.deps.pool, async (tx) => {
        const row = await lockRecord(tx, tenantId, uploadId);
        if (!row) throw problem('not_found', 'No such upload.');
        if (row.deleted_at) throw problem('upload_deleted', 'This upload was deleted.', { extra: { uploadId } });
        if (row.record_version !== base) {
          const next = await findVersion(tx, uploadId, base + 1);
          if (next?.request_hash === requestHash) {
            const id = numberedEventId(uploadId, 'upload.updated', next.version);
            const stored = await findEvent(tx, tenantId, id);
            return { version: next, replayed: true, event: stored && eventOfPayload(id, tenantId, uploadId, stored.payload) };
          }
          throw problem('record_version_stale', `The record is at version ${row.record_version}; read it again and re-apply the change.`, {
            extra: { version: row.record_version },
          });
        }
        if (base >= this.deps.maxVersions)
          throw problem('quota_exceeded', `Quota reached: the record has ${base} versions, as many as it may keep (RECORD_MAX_VERSIONS).`, {
            extra: { limit: this.deps.maxVersions },
          });
        // The first change keeps the record as uploaded as version 1.
        if (base === 1) await insertVersion(tx, asUploaded(tenantId, row));
        const version = await insertVersion(tx, {
          upload_id: uploadId,
          version: base + 1,
          tenant_id: tenantId,
          metadata: change.metadata === undefined ? row.metadata : change.metadata,
          tags: change.tags === undefined ? row.tags : [...new Set(change.tags)].sort(),
          changed_by: changedBy,
          request_hash: requestHash,
        });
        await applyVersion(tx, version);
        await writeLabels(tx, uploadId, version, true);
        const event = updatedEvent(tenantId, row, version);
        await writeEvent(tx, event);
        return { version, replayed: false, event };
      }),
    );
    // Announced again by a retry of the same change: an answer lost after the commit loses no event.
    if (made.event) await announce(this.deps, made.event);
    return { version: made.version, replayed: made.replayed };
  }

  /** The record's versions, newest first, below `before`; a record never changed has only version 1, its row. */
  async versions(tenantId: string, uploadId: string, before: number | undefined, limit: number): Promise<VersionRow[]> {
    const [row, rows] = await dependency('database_unavailable', () =>
      Promise.all([findUpload(this.deps.pool, tenantId, uploadId), listVersions(this.deps.pool, tenantId, uploadId, before, limit)]),
    );
    if (!row) throw problem('not_found', 'No such upload.');
    // Within a restore window the record is still there to read (not to change).
    if (row.deleted_at && !row.restorable_until) throw problem('upload_deleted', 'This upload was deleted.', { extra: { uploadId } });
    if (rows.length > 0 || row.record_version > 1 || (before !== undefined && before <= 1)) return rows;
    return [{ ...asUploaded(tenantId, row), changed_at: row.created_at }];
  }
}

function asUploaded(tenantId: string, row: Pick<RecordRow, 'id' | 'created_at' | 'metadata' | 'tags'>) {
  return {
    upload_id: row.id,
    version: 1,
    tenant_id: tenantId,
    metadata: row.metadata,
    tags: row.tags,
    changed_by: AS_UPLOADED,
    changed_at: row.created_at,
    request_hash: null,
  };
}

/** upload.updated: the new version and the one it replaced. */
function updatedEvent(tenantId: string, before: RecordRow, v: VersionRow): TimedEvent {
  const timestamp = v.changed_at.toISOString();
  return {
    id: numberedEventId(v.upload_id, 'upload.updated', v.version),
    type: 'upload.updated',
    tenantId,
    uploadId: v.upload_id,
    timestamp,
    data: {
      uploadId: v.upload_id,
      version: v.version,
      metadata: v.metadata,
      tags: v.tags,
      changedBy: v.changed_by,
      changedAt: timestamp,
      previous: { version: before.record_version, metadata: before.metadata, tags: before.tags },
    },
  };
}
