// Housekeeping run by Temporal Schedules: expire key rows into tombstones, delete attempt
// objects no upload references once past a grace period, abort stale multipart uploads.
// Each returns what it removed, so every scheduled run reports its work.
import { Context } from '@temporalio/activity';
import type { Pool } from '../src/db/pool';
import { expireKeys, isReferenced } from '../src/db/queries/housekeeping';
import type { ObjectStore } from '../src/storage/store';
import { metrics } from '../src/metrics';

export interface HousekeepingDeps {
  pool: Pool;
  store: ObjectStore;
  housekeeping: { tombstoneSeconds: number; stagingGraceSeconds: number; multipartMaxAgeSeconds: number };
}

/** Attempt objects: tenants/{tenant}/keys/{keyHash}/{attemptId}. */
const ATTEMPT_OBJECT = /^tenants\/[0-9a-f-]{36}\/keys\/[0-9a-f]{32}\/[0-9a-f-]{36}$/;

export function createHousekeepingActivities({ pool, store, housekeeping }: HousekeepingDeps) {
  return {
    async expireIdempotencyKeys(): Promise<{ expired: number; tombstonesRemoved: number }> {
      let total = { expired: 0, tombstonesRemoved: 0 };
      for (;;) {
        const r = await expireKeys(pool, housekeeping.tombstoneSeconds);
        total = { expired: total.expired + r.expired, tombstonesRemoved: total.tombstonesRemoved + r.tombstonesRemoved };
        Context.current().heartbeat(total);
        metrics.housekeepingRemoved.inc({ kind: 'expired_keys' }, r.expired);
        metrics.housekeepingRemoved.inc({ kind: 'tombstones' }, r.tombstonesRemoved);
        if (r.expired < 1000) return total;
      }
    },

    async sweepStagingObjects(): Promise<{ examined: number; removed: number }> {
      const cutoff = Date.now() - housekeeping.stagingGraceSeconds * 1000;
      let examined = 0;
      let removed = 0;
      for await (const o of store.list('tenants/')) {
        if (!ATTEMPT_OBJECT.test(o.key)) continue;
        examined++;
        if (examined % 100 === 0) Context.current().heartbeat({ examined, removed });
        if (o.lastModified.getTime() > cutoff) continue;
        // An attempt object referenced by an upload is that upload's object: never removed.
        if (await isReferenced(pool, o.key)) continue;
        await store.delete(o.key);
        removed++;
        metrics.housekeepingRemoved.inc({ kind: 'staging_objects' });
      }
      return { examined, removed };
    },

    async abortStaleMultipartUploads(): Promise<{ aborted: number }> {
      const aborted = await store.abortStaleMultipartUploads(new Date(Date.now() - housekeeping.multipartMaxAgeSeconds * 1000));
      metrics.housekeepingRemoved.inc({ kind: 'multipart_uploads' }, aborted);
      return { aborted };
    },
  };
}
