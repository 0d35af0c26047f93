// Storage targets as the app mounts them: a tenant's own routes under /v1/storage-targets and
// the operator's under /admin. Where an upload's objects go is decided by src/targets/placement.ts
// (wired with the doors); where an object is read from, by its address (src/storage/routed-store.ts).
import type { Config } from '../config';
import type { IdempotentRouteOptions } from '../http/idempotent-route';
import { operatorStorageTargetRoutes, storageTargetRoutes } from './routes';
import { targetClientSettings } from './stores';
import { StorageTargets } from './targets';

export function storageTargetWing(deps: { config: Config; idempotency: IdempotentRouteOptions }) {
  const targets = new StorageTargets({
    pool: deps.idempotency.pool,
    box: deps.idempotency.box,
    settings: targetClientSettings(deps.config),
    allowPrivateNetworks: deps.config.STORAGE_TARGET_ALLOW_PRIVATE_NETWORKS,
    maxTargets: deps.config.TENANT_MAX_STORAGE_TARGETS,
  });
  return {
    /** Mount at /v1/storage-targets. */
    tenant: storageTargetRoutes({ targets, idempotency: deps.idempotency }),
    /** Mount at /admin (behind the operator token). */
    operator: operatorStorageTargetRoutes({ targets, idempotency: deps.idempotency }),
  };
}
