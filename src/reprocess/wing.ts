// Reprocessing as the app mounts it: jobs that run a pipeline again over a tenant's uploads,
// under /v1. The runs are workflows/reprocess/; the service is ./reprocessing.ts.
import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Pool } from '../db/pool';
import type { WebhookRetrySchedule } from '../downstream/types';
import type { IdempotentRouteOptions } from '../http/idempotent-route';
import type { Wing } from '../http/wing';
import { Reprocessing } from './reprocessing';
import { reprocessRoutes } from './routes';

export function reprocessWing(deps: {
  config: Config;
  pool: Pool;
  temporal: Client;
  webhookRetry: WebhookRetrySchedule;
  idempotency: IdempotentRouteOptions;
}): Wing {
  const reprocessing = new Reprocessing({
    pool: deps.pool,
    temporal: deps.temporal,
    taskQueue: deps.config.TASK_QUEUE_UPLOADS,
    transcodeQueue: deps.config.TASK_QUEUE_TRANSCODE,
    webhookRetry: deps.webhookRetry,
  });
  return { mount: (app) => app.route('/v1', reprocessRoutes({ idempotency: deps.idempotency, reprocessing })) };
}
