// Housekeeping run by Temporal Schedules: expire key rows into tombstones, delete attempt
// objects no upload references once past a grace period, abort stale multipart uploads.
// Each returns what it removed, so every scheduled run reports its work.
import { parseAddress, storeRoots } from '../src/storage/address';
import { allStorageTargetIds } from '../src/db/queries/storage-targets';
import { Context } from '@temporalio/activity';
import type { Pool } from '../src/db/pool';
import { expireKeys, isReferenced, openClaims } from '../src/db/queries/housekeeping';
import { expireEvents } from '../src/db/queries/events';
import { sweepReservations } from '../src/db/queries/byte-quotas';
import { expireKeyRequests } from '../src/db/queries/key-requests';
import { keyStoragePrefix, uploadWorkflowId } from '../src/temporal/ids';
import { endImport, staleImports } from '../src/db/queries/imports';
import { workflowRunState } from '../src/upload/upload-running';
import { searchAttributes, workflowTypes } from '../src/temporal/names';
import type { ObjectStore } from '../src/storage/store';
import { metrics } from '../src/metrics';
import { removeUnusedRunKey, unusedRunKeys } from '../src/db/queries/payload-keys';

export interface HousekeepingDeps {
  pool: Pool;
  store: ObjectStore;
  housekeeping: { tombstoneSeconds: number; stagingGraceSeconds: number; multipartMaxAgeSeconds: number; eventRetentionDays: number };
}

/**
 * Attempt objects, tenants/{tenant}/keys/{keyHash}/{attemptId}, and the tails of resumable
 * sessions, …/{sessionId}.tail.{offset} (one a crash left between writing and acknowledging).
 */
const ATTEMPT_OBJECT = /^tenants\/[0-9a-f-]{36}\/keys\/[0-9a-f]{32}\/[0-9a-f-]{36}(\.tail\.\d+)?$/;

export function createHousekeepingActivities({ pool, store, housekeeping }: HousekeepingDeps) {
  return {
    async expireIdempotencyKeys(): Promise<{
      expired: number;
      tombstonesRemoved: number;
      orphanedImports: number;
      unusedRunKeys: number;
      lapsedReservations: number;
      keyRequestLogs: number;
    }> {
      let total = { expired: 0, tombstonesRemoved: 0 };
      for (;;) {
        const r = await expireKeys(pool, housekeeping.tombstoneSeconds);
        total = { expired: total.expired + r.expired, tombstonesRemoved: total.tombstonesRemoved + r.tombstonesRemoved };
        Context.current().heartbeat(total);
        metrics.housekeepingRemoved.inc({ kind: 'expired_keys' }, r.expired);
        metrics.housekeepingRemoved.inc({ kind: 'tombstones' }, r.tombstonesRemoved);
        if (r.expired < 1000)
          return {
            ...total,
            orphanedImports: await failOrphanedImports(pool),
            unusedRunKeys: await removeUnusedRunKeys(pool),
            // After the orphaned imports failed: their reservations lapse with them.
            lapsedReservations: await sweepReservations(pool),
            // A key's request log goes once its row has and it has been quiet for the tombstone window.
            keyRequestLogs: await expireKeyRequestLogs(pool, housekeeping.tombstoneSeconds),
          };
      }
    },

    /** Removes webhook events (and their attempts) past EVENT_RETENTION_DAYS. */
    async expireWebhookEvents(): Promise<{ removed: number }> {
      let removed = 0;
      for (;;) {
        const n = await expireEvents(pool, housekeeping.eventRetentionDays);
        removed += n;
        Context.current().heartbeat(removed);
        metrics.housekeepingRemoved.inc({ kind: 'webhook_events' }, n);
        if (n < 1000) return { removed };
      }
    },

    async sweepStagingObjects(): Promise<{ examined: number; removed: number; protectedKeys: number; unreachableTargets: number }> {
      const cutoff = Date.now() - housekeeping.stagingGraceSeconds * 1000;
      // A key whose upload is still running (a database or worker outage can hold its commit
      // past the grace period) or whose claim is still open may yet commit one of its
      // attempt objects: its folder is left alone until the run ends.
      const busy = await busyKeyPrefixes(pool);
      let examined = 0;
      let removed = 0;
      let unreachableTargets = 0;
      // The instance's store and every registered target: a target that does not answer is skipped this time.
      for (const root of storeRoots(await allStorageTargetIds(pool))) {
        try {
          for await (const o of store.list(`${root}tenants/`)) {
            const key = parseAddress(o.key).key;
            if (!ATTEMPT_OBJECT.test(key)) continue;
            examined++;
            if (examined % 100 === 0) Context.current().heartbeat({ examined, removed });
            if (o.lastModified.getTime() > cutoff) continue;
            if (busy.has(key.slice(0, key.lastIndexOf('/') + 1))) continue;
            // An attempt object referenced by an upload is that upload's object: never removed.
            if (await isReferenced(pool, o.key)) continue;
            await store.delete(o.key);
            removed++;
            metrics.housekeepingRemoved.inc({ kind: 'staging_objects' });
          }
        } catch (err) {
          if (root === '') throw err;
          unreachableTargets++;
        }
      }
      return { examined, removed, protectedKeys: busy.size, unreachableTargets };
    },

    async abortStaleMultipartUploads(): Promise<{ aborted: number }> {
      const aborted = await store.abortStaleMultipartUploads(new Date(Date.now() - housekeeping.multipartMaxAgeSeconds * 1000));
      metrics.housekeepingRemoved.inc({ kind: 'multipart_uploads' }, aborted);
      return { aborted };
    },
  };
}

/** An import in flight whose run is not running, unchanged this long, is failed (a retry of its request starts afresh). */
const ORPHANED_IMPORT_SECONDS = 300;

/** Marks failed the imports in flight that no run will finish: their slot frees, their view says so. */
async function failOrphanedImports(pool: Pool): Promise<number> {
  const client = Context.current().client;
  let failed = 0;
  for (const row of await staleImports(pool, ORPHANED_IMPORT_SECONDS)) {
    if ((await workflowRunState(client, uploadWorkflowId(row.tenant_id, row.idempotency_key))) === 'running') continue;
    await endImport(pool, row.id, 'failed');
    failed++;
  }
  metrics.housekeepingRemoved.inc({ kind: 'orphaned_imports' }, failed);
  return failed;
}

/**
 * How long a run key must have gone unused before it may be removed: far past the keyring's
 * cache (a minute) and any start's call, so no process still holds it to seal a run's start.
 */
export const UNUSED_RUN_KEY_SECONDS = 3600;

/**
 * Removes run keys nothing was sealed with: recorded by a replay lookup (src/upload/receive.ts)
 * for a request refused before its run started. A key whose run Temporal still knows stays
 * (its history is sealed with it), as does one an upload names (its erasure destroys it); a
 * run past the namespace's retention that committed no upload has nothing left to open.
 */
async function removeUnusedRunKeys(pool: Pool): Promise<number> {
  const client = Context.current().client;
  let removed = 0;
  let after: string | null = null;
  for (;;) {
    const page = await unusedRunKeys(pool, UNUSED_RUN_KEY_SECONDS, after, 500);
    for (const key of page) {
      const run = await workflowRunState(client, key.scope.slice('run:'.length));
      if (run === 'none' && (await removeUnusedRunKey(pool, key.id, UNUSED_RUN_KEY_SECONDS))) removed++;
    }
    Context.current().heartbeat({ removed });
    if (page.length < 500) break;
    after = page.at(-1)!.id;
  }
  metrics.housekeepingRemoved.inc({ kind: 'unused_run_keys' }, removed);
  return removed;
}

/** Object-store folders of keys with a running upload workflow or an open claim. */
async function busyKeyPrefixes(pool: Pool): Promise<Set<string>> {
  const prefixes = new Set<string>();
  for (const c of await openClaims(pool)) prefixes.add(keyStoragePrefix(c.tenant_id, c.key));
  const running = Context.current().client.workflow.list({
    query: `WorkflowType = '${workflowTypes.upload}' AND ExecutionStatus = 'Running'`,
  });
  for await (const wf of running) {
    // The search attributes name the key even when the workflow ID carries only its hash;
    // runs started without them are read from the ID (upload/{tenant}/{key}).
    const fromId = /^upload\/([0-9a-f-]{36})\/(.+)$/.exec(wf.workflowId);
    const tenant = wf.typedSearchAttributes.get(searchAttributes.tenant) ?? fromId?.[1];
    const key = wf.typedSearchAttributes.get(searchAttributes.idempotencyKey) ?? fromId?.[2];
    if (tenant && key) prefixes.add(keyStoragePrefix(tenant, key));
  }
  return prefixes;
}

async function expireKeyRequestLogs(pool: Pool, quietSeconds: number): Promise<number> {
  let removed = 0;
  for (;;) {
    const n = await expireKeyRequests(pool, quietSeconds);
    removed += n;
    metrics.housekeepingRemoved.inc({ kind: 'key_request_logs' }, n);
    if (n < 1000) return removed;
  }
}
