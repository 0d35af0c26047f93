// Side effects of moving uploads between storage targets: paging through a migration's
// uploads and recording each outcome once; one upload's move (every object copied and
// checked, then the rows switched in one transaction, so reads follow the row and never
// find a missing or wrong byte); and deleting the sources a move left once nothing names them.
import { createHash } from 'node:crypto';
import { Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { withTransaction, type Pool } from '../../src/db/pool';
import {
  addressReferenced,
  findMigration,
  migrationPage,
  migrationProgress,
  movedSources,
  moveSource,
  recordMigrationItems,
  setMigrationState,
  smallUploads,
  switchUploadAddress,
  type MigrationOutcome,
  type StorageMigrationRow,
} from '../../src/targets/migration-queries';
import { eventId } from '../../src/downstream/events';
import { findSharedObject } from '../../src/db/queries/records';
import { writeEvent, type TimedEvent } from '../../src/downstream/announce';
import { addressOn, parseAddress } from '../../src/storage/address';
import { migrationView } from '../../src/targets/migration-view';
import { renditionPrefix } from '../../src/storage/layout';
import type { ObjectStore } from '../../src/storage/store';

import { inWindows } from '../../src/temporal/in-windows';
import { failureTypes } from '../../src/temporal/names';
import { metrics } from '../../src/metrics';
import type { StorageMoveBatchInput, StorageMoveInput, StorageMoveResult } from '../../src/targets/contract';

export interface StorageMoveActivityDeps {
  pool: Pool;
  store: ObjectStore;
}

/** A heartbeat at most this often while bytes stream (a dead worker's copy is retried within the heartbeat timeout). */
const BEAT_BYTES = 8 * 1024 * 1024;

export function createStorageMoveActivities({ pool, store }: StorageMoveActivityDeps) {
  /** Deletes a source no row names any more; a hold placed while it was copied no longer guards anything there. */
  async function eraseCopy(key: string): Promise<void> {
    await store.setLegalHold?.(key, false);
    await store.delete(key);
  }

  /** A pass-through that hashes and counts what goes by, heartbeating as it goes. */
  function meter(object: string) {
    const hash = createHash('sha256');
    const seen = { bytes: 0, sha256: () => hash.digest('hex') };
    let beat = 0;
    const stream = new Transform({
      transform(chunk: Buffer, _enc, done) {
        hash.update(chunk);
        seen.bytes += chunk.length;
        if (seen.bytes - beat >= BEAT_BYTES) {
          beat = seen.bytes;
          Context.current().heartbeat({ object, bytes: seen.bytes });
        }
        done(null, chunk);
      },
    });
    return { stream, seen };
  }

  /**
   * Copies one object and checks the copy: on one S3 service the store copies it itself and the
   * copy is read back to be hashed; elsewhere it streams through, hashed on the way. A copy whose
   * bytes are not the source's (or the recorded ones) is deleted and the move fails for good.
   */
  async function copyObject(from: string, to: string, expect?: { sha256: string; bytes: number }): Promise<number> {
    const head = await store.head(from);
    if (!head) throw ApplicationFailure.nonRetryable(`object ${from} is missing`, failureTypes.objectMissing);
    const m = meter(from);
    if (await store.copyWithin?.(from, to, head.bytes)) {
      const copy = await store.get(to);
      if (!copy) throw new Error(`the copy of ${from} at ${to} is not there`);
      await pipeline(copy, m.stream, new Writable({ write: (_chunk, _enc, done) => done() }));
      metrics.storageCopies.inc({ mode: 'server' });
    } else {
      const source = await store.get(from);
      if (!source) throw ApplicationFailure.nonRetryable(`object ${from} is missing`, failureTypes.objectMissing);
      const piped = pipeline(source, m.stream).catch((err: unknown) => err);
      await store.put(to, m.stream, { contentType: 'application/octet-stream', contentLength: head.bytes });
      const failed = await piped;
      if (failed) throw failed;
      metrics.storageCopies.inc({ mode: 'streamed' });
    }
    const { bytes } = m.seen;
    const sha256 = m.seen.sha256();
    if (bytes !== head.bytes || (expect && (sha256 !== expect.sha256 || bytes !== expect.bytes))) {
      await store.delete(to);
      throw ApplicationFailure.nonRetryable(
        `the bytes read from ${from} (${bytes}, SHA-256 ${sha256}) are not the ones recorded (${expect?.bytes ?? head.bytes}${expect ? `, ${expect.sha256}` : ''})`,
        failureTypes.objectMismatch,
      );
    }
    return bytes;
  }

  type MoveSource = NonNullable<Awaited<ReturnType<typeof moveSource>>>;

  /** Switched by an earlier attempt whose outcome was lost: the move as that attempt would have answered it. */
  function switchedEarlier(src: MoveSource, to: string | null, from: string | null): StorageMoveResult | undefined {
    const at = parseAddress(src.storage_key);
    if (at.targetId !== to || src.deleted) return undefined;
    return { outcome: 'moved', reason: null, bytes: Number(src.bytes), source: addressOn(from, at.key), derived: src.derived };
  }

  const activities = {
    async listMigrationPage(a: { migrationId: string; after: string | null; limit: number }): Promise<string[]> {
      return migrationPage(pool, a.migrationId, a.after, a.limit);
    },

    /** Of a page's uploads, those small enough to move a page at a time. */
    async smallMigrationUploads(a: { uploadIds: string[]; maxBytes: number }): Promise<string[]> {
      return smallUploads(pool, a.uploadIds, a.maxBytes);
    },

    async recordMigrationItems(a: { migrationId: string; items: MigrationOutcome[] }): Promise<void> {
      await recordMigrationItems(pool, a.migrationId, a.items);
    },

    /**
     * The uploads of a page whose activity failed for good, each recorded as it is: moved where a
     * lost attempt switched it (its source is then released like any other), else failed with
     * the activity's words. Outcomes recorded before stay.
     */
    async recordUnfinishedMoves(a: StorageMoveBatchInput & { reason: string }): Promise<void> {
      const items: MigrationOutcome[] = [];
      for (const uploadId of a.uploadIds) {
        const src = await moveSource(pool, uploadId);
        const earlier = src && src.tenant_id === a.tenantId ? switchedEarlier(src, a.to, a.from) : undefined;
        items.push(earlier ? { uploadId, ...earlier } : { uploadId, outcome: 'failed', reason: a.reason, bytes: 0 });
      }
      await recordMigrationItems(pool, a.migrationId, items);
    },

    async setMigrationState(a: { migrationId: string; state: StorageMigrationRow['state'] }): Promise<void> {
      await setMigrationState(pool, a.migrationId, a.state);
    },

    /**
     * Ends the migration and records the event announcing it (its final counts) in one
     * transaction; a retry finds both and answers the event as first recorded.
     */
    async finishMigration(a: { migrationId: string; tenantId: string; cancelled: boolean }): Promise<TimedEvent | null> {
      return withTransaction(pool, async (tx) => {
        await setMigrationState(tx, a.migrationId, a.cancelled ? 'cancelled' : 'completed');
        const row = await findMigration(tx, a.tenantId, a.migrationId);
        if (!row) return null;
        const type = row.state === 'cancelled' ? ('storage_migration.cancelled' as const) : ('storage_migration.completed' as const);
        const { id, ...view } = migrationView(row, await migrationProgress(tx, row.id));
        const data = { migrationId: id, ...view };
        const event = { id: eventId(id, type), type, tenantId: a.tenantId, uploadId: null, data, timestamp: new Date().toISOString() };
        return (await writeEvent(tx, event)) ?? null;
      });
    },

    /**
     * Moves one upload: its original (checked against its recorded SHA-256) and every object
     * under its rendition prefix are copied to the same keys on the target, then its rows are
     * switched in one transaction. A retry copies again (same keys) and finds a switch done.
     * The sources stay: the migration's release deletes them later.
     */
    async moveUpload(a: StorageMoveInput): Promise<StorageMoveResult> {
      const src = await moveSource(pool, a.uploadId);
      if (!src || src.tenant_id !== a.tenantId) return { outcome: 'skipped', reason: 'no such upload', bytes: 0 };
      const at = parseAddress(src.storage_key);
      const source = addressOn(a.from, at.key);
      const to = addressOn(a.to, at.key);
      const fromPrefix = renditionPrefix(a.tenantId, a.uploadId, source);
      const toPrefix = renditionPrefix(a.tenantId, a.uploadId, to);
      // Not moved: what an earlier attempt of this move copied (a worker lost mid-way) goes, unless a row names it.
      const skipped = async (reason: string): Promise<StorageMoveResult> => {
        const copies = [to];
        if (src.derived) for await (const o of store.list(toPrefix)) copies.push(o.key);
        for (const key of copies) if (!(await addressReferenced(pool, key))) await store.delete(key);
        return { outcome: 'skipped', reason, bytes: 0 };
      };
      const earlier = switchedEarlier(src, a.to, a.from);
      if (earlier) return earlier;
      if (src.deleted) return skipped('deleted');
      if (at.targetId !== a.from) return skipped('it is no longer in the migration’s source');
      // A held upload's objects stay put (the store's own hold may pin them there too).
      if (src.held) return skipped('it is under a legal hold');
      // Renditions and variants (and an HLS rendition's segments beside it) exist only with rows:
      // without one, nothing is listed (a listing under a large tenant's prefix is not free).
      const derived: string[] = [];
      if (src.derived) for await (const o of store.list(fromPrefix)) derived.push(o.key);
      // Bytes the destination already counts (content dedupe) are not copied again: the switch counts the upload there.
      const counted = src.counted && (await findSharedObject(pool, a.tenantId, src.sha256, Number(src.bytes), a.to));
      let bytes = counted ? 0 : await copyObject(src.storage_key, to, { sha256: src.sha256, bytes: Number(src.bytes) });
      for (const key of derived) {
        bytes += await copyObject(key, `${toPrefix}${key.slice(fromPrefix.length)}`);
        Context.current().heartbeat({ copied: key });
      }
      const switched = await switchUploadAddress(pool, {
        uploadId: a.uploadId,
        from: src.storage_key,
        to,
        fromPrefix,
        toPrefix,
        copied: derived,
        originalCopied: !counted,
      });
      if (switched === 'merged' && !(await addressReferenced(pool, to))) await store.delete(to);
      if (switched === 'switched' || switched === 'merged' || switched === 'already')
        return { outcome: 'moved', reason: null, bytes, source, derived: src.derived };
      // A rendition recorded during the copy: the next attempt copies it too.
      if (switched === 'renditions_changed') throw new Error('a rendition was recorded while the upload was copied');
      // The destination's object with these bytes went while the rest was copied: the next attempt copies the original.
      if (switched === 'destination_changed') throw new Error('the destination no longer holds these bytes');
      // The row moved on while the bytes were copied: the copies no row names go.
      return skipped(switched === 'deleted' ? 'deleted' : 'moved elsewhere while it was copied');
    },

    /**
     * Deletes what a page of the migration's moves left at their source (each original and
     * everything under its rendition prefix there) unless a row names it; the last upload id of
     * the page, or null when none was left.
     */
    async releaseMovedSources(a: { migrationId: string; after: string | null; limit: number }): Promise<string | null> {
      const moved = await movedSources(pool, a.migrationId, a.after, a.limit);
      for (const m of moved) {
        const keys = [m.source];
        if (m.derived) for await (const o of store.list(renditionPrefix(m.tenant_id, m.upload_id, m.source))) keys.push(o.key);
        for (const key of keys) {
          if (!(await addressReferenced(pool, key))) await eraseCopy(key);
          Context.current().heartbeat(m.upload_id);
        }
      }
      return moved.at(-1)?.upload_id ?? null;
    },

    /**
     * Moves small uploads in one activity, `concurrency` at a time, each as moveUpload moves it,
     * their outcomes recorded a window at a time: their runs would cost more than their bytes. A move
     * that cannot be (its bytes are not the recorded ones) is recorded failed; a store away
     * fails the activity, whose retry finds the moves done and goes on.
     */
    async moveUploads(a: StorageMoveBatchInput): Promise<void> {
      const ctx = Context.current();
      // Outcomes are written a window's worth at a time, in one statement; what is done is written before a failure is raised.
      const done: MigrationOutcome[] = [];
      const write = () => recordMigrationItems(pool, a.migrationId, done.splice(0));
      try {
        await inWindows(a.uploadIds, a.concurrency, async (uploadId) => {
          let outcome: MigrationOutcome;
          try {
            outcome = { uploadId, ...(await activities.moveUpload({ tenantId: a.tenantId, uploadId, from: a.from, to: a.to })) };
          } catch (err) {
            if (!(err instanceof ApplicationFailure && err.nonRetryable)) throw err;
            outcome = { uploadId, outcome: 'failed', reason: err.message, bytes: 0 };
          }
          done.push(outcome);
          if (done.length >= a.concurrency) await write();
          ctx.heartbeat(uploadId);
        });
      } finally {
        await write();
      }
    },
  };
  return activities;
}
