// The Hono application: middleware, route groups, one error handler. Built from injected
// dependencies so tests and the process entrypoint wire it the same way.
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Pool } from '../db/pool';
import type { ProcessedSignal } from '../db/upload-processed';
import type { SecretBox } from '../secret-box';
import type { ObjectStore } from '../storage/store';
import { AnswerCache } from '../upload/answer-cache';
import { UploadReceiver } from '../upload/receive';
import { uploadRunningCheck } from '../upload/upload-running';
import { InFlightUploads } from '../upload/in-flight';
import { accessLog } from './middleware/access-log';
import { adminAuth } from './middleware/admin-auth';
import { ApiKeyCache, bearerAuth } from './middleware/auth';
import { cors } from './middleware/cors';
import { nulGuard } from './middleware/nul-guard';
import { openApiDocument, router } from './openapi';
import { onError, onNotFound } from './problem-handler';
import { adminTenantRoutes } from './routes/admin-tenants';
import { apiKeyRoutes } from './routes/api-keys';
import { docsRoutes } from './routes/docs';
import { healthRoutes } from './routes/health';
import { idempotencyKeyRoutes } from './routes/idempotency-keys';
import { uploadRoutes } from './routes/uploads';
import { webhookEndpointRoutes } from './routes/webhook-endpoints';
import { webRoutes } from './routes/web';
import { tusDiscoveryRoutes, tusRoutes } from './routes/tus';
import { SessionRegistry } from '../sessions/registry';
import { TusSessions } from '../arrivals/tus/tus-sessions';
import { DirectUploads } from '../arrivals/direct/direct-uploads';
import { PresignedTarget, SelfSignedTarget } from '../arrivals/direct/targets';
import { directObjectRoutes, directUploadRoutes } from './routes/direct-uploads';
import { UppyCompanion } from '../arrivals/uppy/uppy-companion';
import { uppyCompanionRoutes, uppyEndpointRoutes } from './routes/uppy';
import { TUS_REQUEST_HEADERS } from '../arrivals/tus/protocol';

/** Request headers the API reads (allowed cross-origin; each is in the OpenAPI document). */
export const REQUEST_HEADERS = ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-File-Sha256', 'X-File-Name', 'Prefer', ...TUS_REQUEST_HEADERS] as const;

export interface AppDeps {
  config: Config;
  pool: Pool;
  store: ObjectStore;
  temporal: Client;
  log: Logger;
  /** Seals stored answers of the non-upload mutating routes. */
  box: SecretBox;
  /** Wakes `GET /v1/uploads/{id}?wait` when its upload is processed. */
  processed: ProcessedSignal;
}

export function createApp(deps: AppDeps) {
  const { config, pool, store, temporal, log, box, processed } = deps;
  const receiver = new UploadReceiver({
    pool,
    store,
    temporal,
    taskQueue: config.TASK_QUEUE_UPLOADS,
    receiveTimeoutSeconds: config.RECEIVE_TIMEOUT_SECONDS,
    lostCommitProbeSeconds: config.LOST_COMMIT_PROBE_SECONDS,
    answers: new AnswerCache(config.REPLAY_CACHE_MIB * 1024 * 1024),
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

  const app = router();
  const idempotency = { pool, box, ttlSeconds: config.IDEMPOTENCY_TTL_HOURS * 3600, uploadRunning: uploadRunningCheck(temporal) };
  let document: unknown;
  app.use(accessLog(log));
  app.use(nulGuard());
  app.use(
    cors({
      allowMethods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
      allowHeaders: [...REQUEST_HEADERS],
      maxAgeSeconds: 600,
    }),
  );
  app.route('/', healthRoutes({ pool, temporal, store }));
  app.route('/', webRoutes());
  app.route('/', docsRoutes(() => (document ??= openApiDocument(app, { keyTtlHours: config.IDEMPOTENCY_TTL_HOURS, tombstoneTtlHours: config.TOMBSTONE_TTL_HOURS }))));
  app.use('/admin/*', adminAuth(config.ADMIN_TOKEN));
  app.route('/admin', adminTenantRoutes({ idempotency }));
  const keyCache = new ApiKeyCache();
  // The session core every resumable or signed mode creates its sessions in, then the modes.
  const registry = new SessionRegistry({ pool, store, temporal, receiver, maxOpenSessions: config.TENANT_MAX_OPEN_SESSIONS });
  const sessions = new TusSessions({
    pool,
    store,
    registry,
    receiver,
    idleSeconds: config.RESUMABLE_EXPIRY_HOURS * 3600,
    partBytes: Math.round(config.RESUMABLE_PART_MIB * 1024 * 1024),
    leaseSeconds: config.RESUMABLE_LEASE_SECONDS,
    stallSeconds: config.RESUMABLE_STALL_SECONDS,
  });
  const direct = new DirectUploads({
    pool,
    store,
    sessions: registry,
    receiver,
    box,
    expirySeconds: config.DIRECT_UPLOAD_EXPIRY_HOURS * 3600,
    urlSeconds: config.DIRECT_UPLOAD_URL_SECONDS,
    target: store.presigner
      ? new PresignedTarget(store.presigner, { singlePutMaxBytes: config.S3_SINGLE_PUT_MAX_MIB * 1024 * 1024, partBytes: config.DIRECT_UPLOAD_PART_MIB * 1024 * 1024 })
      : new SelfSignedTarget(store, box),
  });
  const uppy = new UppyCompanion({ pool, store, sessions: registry, receiver, box, expirySeconds: config.DIRECT_UPLOAD_EXPIRY_HOURS * 3600, urlSeconds: config.DIRECT_UPLOAD_URL_SECONDS });
  const inFlight = new InFlightUploads(config.TENANT_MAX_UPLOADS_IN_FLIGHT);
  app.route('/v1/tus', tusDiscoveryRoutes(config));
  // Signed URLs and companion tokens carry their own credential: mounted before the API-key check.
  app.route('/v1/direct-uploads', directObjectRoutes({ direct }));
  app.route('/uppy', uppyCompanionRoutes({ uppy, receiver, config, inFlight }));
  app.use('/v1/*', bearerAuth({ pool, cache: keyCache }));
  app.route('/v1/tus', tusRoutes({ sessions, config }));
  app.route('/v1/direct-uploads', directUploadRoutes({ direct, config }));
  app.route('/v1/uppy-endpoints', uppyEndpointRoutes({ uppy }));
  app.route('/v1/uploads', uploadRoutes({ receiver, pool, store, config, processed, inFlight }));
  app.route('/v1/idempotency-keys', idempotencyKeyRoutes({ pool, temporal, box }));
  app.route('/v1/webhook-endpoints', webhookEndpointRoutes({ allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS, idempotency, maxEndpoints: config.TENANT_MAX_WEBHOOK_ENDPOINTS }));
  app.route('/v1/api-keys', apiKeyRoutes({ idempotency, keyCache, maxApiKeys: config.TENANT_MAX_API_KEYS }));
  app.onError(onError);
  app.notFound(onNotFound);
  return app;
}
