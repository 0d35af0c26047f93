// Storage targets as the app mounts them: a tenant's own routes under /v1/storage-targets and
// /v1/storage-migrations, and the operator's under /admin. Where an upload's objects go is
// decided by src/placement/placement.ts (wired with the doors); where an object is read from, by
// its address (src/storage/routed-store.ts).
import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { WebhookRetrySchedule } from '../downstream/types';
import type { IdempotentRouteOptions } from '../http/idempotent-route';
import type { Wing } from '../http/wing';
import { storageMigrationRoutes } from './migration-routes';
import { StorageMigrations } from './storage-migrations';
import type { Placement } from '../placement/placement';
import { operatorStorageTargetRoutes, storageTargetRoutes } from './routes';
import { targetClientSettings } from '../placement/stores';
import { StorageTargets } from './targets';

export function storageTargetWing(deps: {
  config: Config;
  idempotency: IdempotentRouteOptions;
  temporal: Client;
  placement: Placement;
  webhookRetry: WebhookRetrySchedule;
}): Wing {
  const { config, idempotency } = deps;
  const targets = new StorageTargets({
    pool: idempotency.pool,
    box: idempotency.box,
    settings: targetClientSettings(config),
    allowPrivateNetworks: config.STORAGE_TARGET_ALLOW_PRIVATE_NETWORKS,
    maxTargets: config.TENANT_MAX_STORAGE_TARGETS,
  });
  const migrations = new StorageMigrations({
    pool: idempotency.pool,
    temporal: deps.temporal,
    taskQueue: config.TASK_QUEUE_UPLOADS,
    placement: deps.placement,
    sourceGraceSeconds: config.STORAGE_MIGRATION_SOURCE_GRACE_SECONDS ?? config.DOWNLOAD_URL_MAX_SECONDS,
    webhookRetry: deps.webhookRetry,
  });
  return {
    mount: (app) => {
      app.route('/v1/storage-targets', storageTargetRoutes({ targets, idempotency }));
      app.route('/v1/storage-migrations', storageMigrationRoutes({ migrations, idempotency }));
    },
    mountOperator: (app) => app.route('/admin', operatorStorageTargetRoutes({ targets, idempotency })),
  };
}
