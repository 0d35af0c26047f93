// The Hono application: middleware, route groups, one error handler. Built from injected
// dependencies so tests and the process entrypoint wire it the same way.
import { Hono } from 'hono';
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Pool } from '../db/pool';
import type { ObjectStore } from '../storage/store';
import { UploadReceiver } from '../upload/receive';
import type { AppEnv } from './env';
import { accessLog } from './middleware/access-log';
import { bearerAuth } from './middleware/auth';
import { cors } from './middleware/cors';
import { onError, onNotFound } from './problem-handler';
import { healthRoutes } from './routes/health';
import { idempotencyKeyRoutes } from './routes/idempotency-keys';
import { uploadRoutes } from './routes/uploads';
import { webhookEndpointRoutes } from './routes/webhook-endpoints';
import { webRoutes } from './routes/web';

export interface AppDeps {
  config: Config;
  pool: Pool;
  store: ObjectStore;
  temporal: Client;
  log: Logger;
}

export function createApp(deps: AppDeps) {
  const { config, pool, store, temporal, log } = deps;
  const receiver = new UploadReceiver({
    pool,
    store,
    temporal,
    taskQueue: config.TASK_QUEUE_UPLOADS,
    receiveTimeoutSeconds: config.RECEIVE_TIMEOUT_SECONDS,
    downstream: {
      transcodeQueue: config.TASK_QUEUE_TRANSCODE,
      webhookRetry: {
        attemptTimeoutSeconds: config.WEBHOOK_TIMEOUT_SECONDS + 5,
        initialSeconds: config.WEBHOOK_RETRY_INITIAL_SECONDS,
        coefficient: config.WEBHOOK_RETRY_COEFFICIENT,
        maxIntervalSeconds: config.WEBHOOK_RETRY_MAX_INTERVAL_SECONDS,
        maxAttempts: config.WEBHOOK_RETRY_MAX_ATTEMPTS,
      },
    },
  });

  const app = new Hono<AppEnv>();
  app.use(accessLog(log));
  app.use(
    cors({
      allowMethods: ['GET', 'POST', 'DELETE', 'OPTIONS'],
      allowHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-File-Sha256', 'X-File-Name', 'Prefer'],
      maxAgeSeconds: 600,
    }),
  );
  app.route('/', healthRoutes({ pool, temporal, store }));
  app.route('/', webRoutes());
  app.use('/v1/*', bearerAuth({ pool }));
  app.route('/v1/uploads', uploadRoutes({ receiver, pool, config }));
  app.route('/v1/idempotency-keys', idempotencyKeyRoutes({ pool, temporal }));
  app.route('/v1/webhook-endpoints', webhookEndpointRoutes({ pool, allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS, keyTtlSeconds: config.IDEMPOTENCY_TTL_HOURS * 3600 }));
  app.onError(onError);
  app.notFound(onNotFound);
  return app;
}
