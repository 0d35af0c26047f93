// The Hono application: middleware, route groups, one error handler, routing to the upload
// services (src/services.ts). Built from injected dependencies so tests and the process
// entrypoint wire it the same way.
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Pool } from '../db/pool';
import type { ProcessedSignal } from '../db/upload-processed';
import type { SecretBox } from '../secret-box';
import type { ObjectStore } from '../storage/store';
import { createServices, downstreamSettings, mediaPresets } from '../services';
import { accessLog } from './middleware/access-log';
import { keyRequests } from './middleware/key-requests';
import type { KeyRequestLog } from '../http/key-request-log';
import { requestTrace } from '../telemetry/request-trace';
import { adminAuth, codecAuth } from './middleware/admin-auth';
import { CredentialCache, bearerAuth } from './middleware/auth';
import { cors } from './middleware/cors';
import { nulGuard } from './middleware/nul-guard';
import { repeatedQueryGuard } from './middleware/repeated-query-guard';
import { openApiDocument, router } from '../http/openapi';
import { onError, onNotFound } from './problem-handler';
import { adminTenantRoutes } from './routes/admin-tenants';
import { codecRoutes } from '../codec/routes';
import { PayloadKeyring, SealingCodec } from '../codec/payload-codec';
import { apiKeyRoutes } from './routes/api-keys';
import { pipelineRoutes } from './routes/pipelines';
import { uploadStepRoutes } from './routes/upload-steps';
import { builtinPipeline } from '../pipelines/steps';
import { uploadTokenRoutes } from './routes/upload-tokens';
import { docsRoutes } from './routes/docs';
import { dependencyChecks, healthRoutes, type HealthDeps } from './routes/health';
import { idempotencyKeyRoutes } from './routes/idempotency-keys';
import { uploadRoutes } from './routes/uploads';
import { deletionRoutes } from './routes/deletions';
import { eventRoutes } from './routes/events';
import { webhookEndpointRoutes } from './routes/webhook-endpoints';
import { webRoutes } from '../web/routes';
import { doorHeaders, mountDoors, mountPublicDoors, sessionInPath } from '../arrivals';
import { findSessionTraceparent } from '../db/queries/sessions';
import { buildWings } from './wings';

const DOOR_HEADERS = doorHeaders();

/** Request headers the API reads (allowed cross-origin; each is in the OpenAPI document). */
export const REQUEST_HEADERS = [
  'Authorization',
  'Content-Type',
  'Idempotency-Key',
  'X-File-Sha256',
  'X-File-Name',
  'X-Expires-At',
  'X-Pipeline',
  'Prefer',
  'Range',
  'If-Range',
  'If-None-Match',
  'X-Request-Id',
  'traceparent',
  'tracestate',
  // The Temporal UI's requests to the codec server (/codec/*).
  'X-Namespace',
  ...DOOR_HEADERS.request,
];

/** Response headers a browser script on another origin may read. */
export const EXPOSED_HEADERS = [
  ...new Set([
    'Location',
    'Retry-After',
    'Idempotent-Replayed',
    'Idempotent-Replay',
    'ETag',
    'Content-Range',
    'Content-Disposition',
    'X-Request-Id',
    ...DOOR_HEADERS.response,
  ]),
];

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
  /**
   * The process's role (on /healthz) and whether it is draining before it stops (/readyz
   * 503); `onOperatorPort` when /healthz, /readyz and /metrics are served elsewhere (OPS_PORT).
   */
  health?: Pick<HealthDeps, 'role' | 'draining'> & { onOperatorPort?: boolean };
  /** The Temporal UI this process started (embedded default): it may use the codec server from this machine. */
  devUiOrigin?: string;
  /** The keyring the Temporal client's codec seals with (codec on): the receiver records new runs' keys ahead. */
  payloadKeys?: PayloadKeyring;
  /** Where requests with an Idempotency-Key are noted (absent: not noted, as in tests of one route). */
  keyRequests?: KeyRequestLog;
}

/** The traceparent each session was created under, by request path (a session's is fixed: kept for the last 10,000 asked). */
function sessionTraces(pool: Pool): (path: string) => Promise<string | null> {
  const known = new Map<string, string | null>();
  return async (path) => {
    const id = sessionInPath(path);
    if (!id) return null;
    if (known.has(id)) return known.get(id)!;
    const traceparent = await findSessionTraceparent(pool, id);
    if (known.size >= 10_000) known.delete(known.keys().next().value!);
    known.set(id, traceparent);
    return traceparent;
  };
}

export function createApp(deps: AppDeps) {
  const { config, pool, store, temporal, log, box, processed } = deps;
  const services = createServices({ config, pool, store, temporal, box, payloadKeys: deps.payloadKeys });
  const { tenantDeletions, redeliveries, pipelines, decisions, idempotency } = services;

  const app = router();
  let document: unknown;
  app.use(requestTrace(sessionTraces(pool)));
  app.use(accessLog(log));
  if (deps.keyRequests) app.use(keyRequests(deps.keyRequests));
  app.use(nulGuard());
  app.use(repeatedQueryGuard());
  app.use(
    cors({
      allowMethods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
      allowHeaders: [...REQUEST_HEADERS],
      exposeHeaders: EXPOSED_HEADERS,
      maxAgeSeconds: 600,
    }),
  );
  if (!deps.health?.onOperatorPort)
    app.route(
      '/',
      healthRoutes({
        role: deps.health?.role ?? 'api',
        draining: deps.health?.draining ?? (() => false),
        checks: dependencyChecks({ pool, temporal: temporal.connection, store }),
      }),
    );
  app.route('/', webRoutes());
  const webhookRetry = downstreamSettings(config).webhookRetry;
  const wings = buildWings({
    ...services,
    config,
    pool,
    store,
    temporal,
    box,
    webhookRetry,
    devUiOrigin: deps.devUiOrigin,
    fetch: () => app.fetch,
  });
  app.route(
    '/',
    docsRoutes(
      () =>
        (document ??= openApiDocument(app, { keyTtlHours: config.IDEMPOTENCY_TTL_HOURS, tombstoneTtlHours: config.TOMBSTONE_TTL_HOURS })),
    ),
  );
  const keyCache = new CredentialCache();
  app.use('/admin/*', adminAuth(config.ADMIN_TOKEN));
  app.route(
    '/admin',
    adminTenantRoutes({ idempotency, pool, config, tenantDeletions, credentials: keyCache, placement: services.placement }),
  );
  wings.mountOperator(app);
  // The codec server opens keys afresh on every request: an erased upload's payloads show "erased" at once.
  app.use('/codec/*', codecAuth(config.ADMIN_TOKEN, deps.devUiOrigin));
  app.route('/', codecRoutes({ codec: config.PAYLOAD_ENCRYPTION ? new SealingCodec(new PayloadKeyring(pool, box, 0)) : undefined }));
  // Discovery, signed URLs and companion tokens carry their own credential (or need none): before the API-key check.
  const doors = { ...services, config, pool, store, temporal, box };
  mountPublicDoors(app, doors);
  wings.mountPublic(app);
  app.use('/v1/*', bearerAuth({ pool, cache: keyCache }));
  mountDoors(app, doors);
  // The upload's own routes (an upload still being imported is found with it).
  app.route('/v1/uploads', uploadRoutes({ pool, config, processed, uncommitted: wings.uncommitted }));
  app.route('/v1/uploads', deletionRoutes({ ...services, pool, config, uncommitted: wings.uncommitted }));
  app.route('/v1/uploads', uploadStepRoutes({ pool, decisions }));
  app.route('/v1/idempotency-keys', idempotencyKeyRoutes({ pool, temporal, box }));
  app.route(
    '/v1/webhook-endpoints',
    webhookEndpointRoutes({
      allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
      idempotency,
      maxEndpoints: config.TENANT_MAX_WEBHOOK_ENDPOINTS,
    }),
  );
  app.route('/v1', eventRoutes({ pool, redeliveries, config, idempotency }));
  app.route('/v1/api-keys', apiKeyRoutes({ idempotency, keyCache, maxApiKeys: config.TENANT_MAX_API_KEYS }));
  app.route('/v1/upload-tokens', uploadTokenRoutes({ idempotency, cache: keyCache, config, pipelines, placement: services.placement }));
  app.route(
    '/v1/pipelines',
    pipelineRoutes({
      idempotency,
      builtin: builtinPipeline(mediaPresets(config)),
      allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
      pipelines,
      limits: { pipelines: config.TENANT_MAX_PIPELINES, versions: config.PIPELINE_MAX_VERSIONS },
    }),
  );
  wings.mount(app);
  app.onError(onError);
  app.notFound(onNotFound);
  // The WebSockets the server upgrades to, and what the wings close as the API stops.
  return Object.assign(app, { upgrade: wings.upgrade, closeWings: wings.close });
}
