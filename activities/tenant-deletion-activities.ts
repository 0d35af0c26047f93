// Side effects of the tenant deletion, in its order: close the tenant, sweep it (end its
// sessions and every run of it but the upload deletions, erase each upload by its own
// deletion run, until nothing of it is live or running), then destroy its data keys, scrub
// what it kept and delete whatever is left under its prefix in the store. Each is safe to
// run again: a retry finds its work done.
import { storeRoots } from '../src/storage/address';
import { allStorageTargetIds } from '../src/db/queries/storage-targets';
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import type { Pool } from '../src/db/pool';
import { deleteSession, openSessionsOf } from '../src/db/queries/sessions';
import { countHeld } from '../src/db/queries/legal-holds';
import { closeTenant, eraseTenantRecords, liveUploadsOf, pendingDeletionsOf } from '../src/db/queries/tenant-deletion';
import { Deletions } from '../src/lifecycle/deletions';
import { discardSessionObjects, endSessionRun } from '../src/sessions/cleanup';
import type { ObjectStore } from '../src/storage/store';
import { searchAttributes, workflowTypes } from '../src/temporal/names';
import type { WebhookRetrySchedule } from '../src/downstream/types';

export interface TenantDeletionActivityDeps {
  pool: Pool;
  store: ObjectStore;
}

/** Uploads erased (deletion runs awaited) at a time. */
const PAGE = 100;
const POLL_MS = 500;
const HELD_POLL_MS = 10_000;

/** Progress kept in the heartbeat, so a retried sweep counts on from where it was. */
interface SweepProgress {
  sessionsEnded: number;
  /** Uploads under a legal hold the sweep is waiting for (held after the deletion began). */
  heldUploads?: number;
}

export function createTenantDeletionActivities({ pool, store }: TenantDeletionActivityDeps) {
  return {
    /** Closes the tenant (credentials revoked, endpoints removed, new rows refused); null when there is no such tenant. */
    async closeTenant(a: { tenantId: string }): Promise<{ closedAt: string } | null> {
      const closed = await closeTenant(pool, a.tenantId);
      return closed ? { closedAt: closed.closedAt.toISOString() } : null;
    },

    /**
     * Ends the tenant's open sessions, terminates its runs but the upload deletions (an upload
     * run's commit is refused from the close on; its copy is erased with the prefix), and
     * erases every upload committed before the close through its deletion run; done once a
     * pass finds no session, no live upload and no run of the tenant running, deletions
     * included (they need the tenant's key, destroyed next).
     */
    async sweepTenant(a: { tenantId: string; webhookRetry: WebhookRetrySchedule }): Promise<SweepProgress> {
      const ctx = Context.current();
      const { client } = ctx;
      const progress: SweepProgress = { sessionsEnded: 0, ...(ctx.info.heartbeatDetails as SweepProgress | undefined) };
      const deletions = new Deletions({ temporal: client, taskQueue: ctx.info.taskQueue, webhookRetry: a.webhookRetry });
      const running = `${searchAttributes.tenant.name} = '${a.tenantId}' AND ExecutionStatus = 'Running'`;
      for (;;) {
        const sessions = await openSessionsOf(pool, a.tenantId, PAGE);
        for (const s of sessions) {
          if (await deleteSession(pool, s.id)) progress.sessionsEnded++;
          await discardSessionObjects(store, s);
          await endSessionRun(client, s);
          ctx.heartbeat(progress);
        }
        let pending = 0;
        for await (const run of client.workflow.list({ query: running })) {
          pending++;
          // A deletion (this sweep's, or one asked before the close) is waited for.
          if (run.type !== workflowTypes.deletion)
            await client.workflow
              .getHandle(run.workflowId, run.runId)
              .terminate('the tenant is deleted')
              .catch(() => {}); // closed meanwhile
          ctx.heartbeat(progress);
        }
        // Deletions waiting out a restore window end it now: the tenant keeps nothing to restore.
        for (const id of await pendingDeletionsOf(pool, a.tenantId, PAGE)) await deletions.purge(id).catch(() => {});
        const uploads = await liveUploadsOf(pool, a.tenantId, PAGE);
        const runs = await Promise.all(uploads.map((u) => deletions.start(a.tenantId, u.id, u.idempotency_key, 'tenant')));
        const beat = setInterval(() => ctx.heartbeat(progress), 5_000);
        try {
          await Promise.all(runs.map((r) => r.result()));
        } finally {
          clearInterval(beat);
        }
        // A hold placed as the deletion began keeps its upload (and so the tenant's keys and prefix) until released.
        progress.heldUploads = await countHeld(pool, a.tenantId);
        ctx.heartbeat(progress);
        if (!sessions.length && !pending && !uploads.length && progress.heldUploads === 0) return { sessionsEnded: progress.sessionsEnded };
        await sleep(progress.heldUploads > 0 && !uploads.length ? HELD_POLL_MS : POLL_MS, undefined, { signal: ctx.cancellationSignal });
      }
    },

    /** Destroys the tenant's data keys, scrubs what it kept and deletes what is left under its prefix. */
    async eraseTenant(a: {
      tenantId: string;
    }): Promise<{ erasedAt: string; uploadsErased: number; dataKeysDestroyed: number; objectsDeleted: number }> {
      let objectsDeleted = 0;
      // In the instance's store and in each target the tenant registered.
      for (const root of storeRoots(await allStorageTargetIds(pool, a.tenantId)))
        for await (const o of store.list(`${root}tenants/${a.tenantId}/`)) {
          await store.delete(o.key);
          objectsDeleted++;
        }
      const { erasedAt, keysDestroyed, uploadsErased } = await eraseTenantRecords(pool, a.tenantId);
      return { erasedAt: erasedAt.toISOString(), uploadsErased, dataKeysDestroyed: keysDestroyed, objectsDeleted };
    },
  };
}
