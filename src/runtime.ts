// Wires a running Oncely from configuration: database (DATABASE_URL or embedded PGlite),
// object store (S3 or local directory), Temporal (TEMPORAL_ADDRESS or the dev server),
// then the API and/or the worker. The one place that chooses implementations.
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import type { Worker } from '@temporalio/worker';
import getPort from 'get-port';
import pino, { type Logger } from 'pino';
import { temporalLogger } from './temporal/sdk-logger';
import { traceFields } from './telemetry/context';
import { createApp } from './api/app';
import { lingerOnEarlyClose } from './http/lingering-close';
import { ConnectionDrain } from './http/drain';
import type { Config } from './config';
import { migrate } from './db/migrate';
import { problem } from './errors';
import { createPool, usePreparedStatements, type Pool } from './db/pool';
import { pollingOnly, UploadProcessedListener } from './db/upload-processed';
import { loadSecretBox } from './secret-box';
import { noProgress, type StartProgress } from './start-watchdog';
import { createRoutedStore } from './placement/stores';
import type { ObjectStore } from './storage/store';
import { connectTemporal, type TemporalHandle } from './temporal/client';
import { PayloadKeyring, SealingCodec } from './codec/payload-codec';
import { listenForPayloadKeys } from './codec/payload-key-notices';
import { createServices, downstreamSettings, mediaPresets } from './services';
import { dependencyChecks } from './api/routes/health';
import { serveOps } from './ops-server';
import { rawProblemResponse } from './http/raw-problem';
import { KeyRequestLog } from './http/key-request-log';

function answerClientError(err: NodeJS.ErrnoException, socket: import('node:stream').Duplex): void {
  if (!socket.writable || err.code === 'ECONNRESET') return void socket.destroy();
  // A request is still being answered (its body stopped short, or bytes after it do not
  // parse): let that answer finish first, then close.
  const pending = (socket as { _httpMessage?: import('node:http').ServerResponse })._httpMessage;
  // (A body that stopped short is noticed by the upload path itself, which answers 400.)
  if (pending && !pending.writableFinished) {
    // A body slower than the body timeout: cut it off (the upload path cleans up after it).
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return void pending.req.destroy(err);
    return void pending.once('finish', () => socket.end());
  }
  const p =
    err.code === 'HPE_INVALID_EOF_STATE'
      ? problem('body_incomplete', 'The connection ended before Content-Length bytes arrived.')
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? problem('headers_too_large', 'The request headers exceed the server limit.')
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? problem('request_timeout', 'The request body was not received within the body timeout.')
          : problem('malformed_request', 'The request could not be parsed as HTTP/1.1 (for example a control character in a header).');
  socket.end(rawProblemResponse(p));
}

export type Role = 'all' | 'api' | 'worker';

export interface Runtime {
  config: Config;
  log: Logger;
  pool: Pool;
  store: ObjectStore;
  temporalAddress: string;
  uiUrl?: string;
  apiUrl?: string;
  server?: ServerType;
  /** The HTTP application (API roles): its routes and OpenAPI registry. */
  app?: ReturnType<typeof createApp>;
  /** The operator listener's /healthz, /readyz and /metrics (OPS_PORT, or a worker's WORKER_HTTP_PORT). */
  opsUrl?: string;
  workers: Worker[];
  /** The payload codec its clients and workers use (PAYLOAD_ENCRYPTION); a test's own client takes it too. */
  payloadCodec?: SealingCodec;
  /** Stops accepting, drains, and releases everything in reverse order. */
  shutdown(): Promise<void>;
}

export function createLogger(config: Config): Logger {
  return pino({ level: config.LOG_LEVEL, redact: ['req.headers.authorization', 'apiKey'], mixin: traceFields });
}

export interface RuntimeOptions {
  workflowBundlePath?: string;
  log?: Logger;
  /** Told each start step as it begins (the start watchdog names the one it never left). */
  progress?: StartProgress;
}

export async function startRuntime(config: Config, role: Role, opts: RuntimeOptions = {}): Promise<Runtime> {
  const log = opts.log ?? createLogger(config);
  const progress = opts.progress ?? noProgress;
  const cleanups: (() => Promise<unknown>)[] = [];
  // Set at the start of shutdown: /readyz answers 503 from then on.
  let draining = false;
  // Set once the listener exists: from the signal on, every answer closes its connection (src/http/drain.ts).
  let startDrain = () => {};

  let databaseUrl = config.DATABASE_URL;
  let embeddedPool: Pool | undefined;
  if (!databaseUrl) {
    // Heavy modules load only for the roles and back-ends that use them: an API replica
    // never loads the worker runtime, PGlite or the dev-server launcher.
    progress.step('the embedded PGlite database');
    const { startPglite, createEmbeddedPool } = await import('./devstack/pglite-server');
    const pg = await startPglite(path.join(config.DATA_DIR, 'pglite'), await getPort({ host: '127.0.0.1' }));
    cleanups.push(() => pg.stop());
    databaseUrl = pg.url;
    embeddedPool = createEmbeddedPool(pg.url);
    usePreparedStatements(false);
    // Lets `oncely` commands reach this process's embedded database while it runs.
    await writeFile(path.join(config.DATA_DIR, 'database-url'), pg.url);
    cleanups.push(() => rm(path.join(config.DATA_DIR, 'database-url'), { force: true }));
    log.info('embedded PGlite database under %s', path.join(config.DATA_DIR, 'pglite'));
  }
  const pool = embeddedPool ?? createPool(databaseUrl, config.DATABASE_POOL_SIZE);
  cleanups.push(() => pool.end());
  progress.step('PostgreSQL (migrations)');
  await migrate(pool);

  // Both roles: the API seals secrets, the worker opens webhook secrets to sign and targets' keys to store.
  const box = await loadSecretBox(config.SECRETS_KEY, config.DATA_DIR, config.SECRETS_KEY_PREVIOUS);

  progress.step('the object store');
  const routed = await createRoutedStore(config, pool, box);
  cleanups.push(async () => routed.close());
  const store = routed.store;

  let temporalAddress = config.TEMPORAL_ADDRESS;
  let uiUrl: string | undefined;
  if (!temporalAddress) {
    progress.step('the Temporal dev server');
    const { startTemporalDevServer } = await import('./devstack/temporal-dev-server');
    const dev = await startTemporalDevServer({
      port: await getPort({ host: '127.0.0.1', port: 7233 }),
      uiPort: config.TEMPORAL_UI_PORT,
      // The UI decodes sealed payloads through this process's codec server (a fixed PORT only).
      uiCodecEndpoint: config.PAYLOAD_ENCRYPTION && config.PORT ? `http://127.0.0.1:${config.PORT}/codec` : undefined,
      dbFile: path.join(config.DATA_DIR, 'temporal.db'),
      pidFile: path.join(config.DATA_DIR, 'temporal.pid'),
      dieWithParent: true,
      retentionHours: Math.max(24, Math.ceil(config.IDEMPOTENCY_TTL_HOURS * 2)),
    });
    cleanups.push(() => dev.stop());
    temporalAddress = dev.address;
    uiUrl = dev.uiUrl;
  }

  // One keyring per process: the API's client and the workers share its cached data keys.
  const keyring = config.PAYLOAD_ENCRYPTION ? new PayloadKeyring(pool, box) : undefined;
  // A process running a worker opens its activities' payloads a moment after sealing them (recent-seals.ts).
  const payloadCodec = keyring ? new SealingCodec(keyring, { rememberMs: role === 'api' ? 0 : 10_000 }) : undefined;

  let workers: Worker[] = [];
  let opsUrl: string | undefined;
  // The operator port (/healthz, /readyz, /metrics): OPS_PORT for any role; a worker's defaults to WORKER_HTTP_PORT.
  const opsPort = role === 'worker' ? (config.OPS_PORT ?? config.WORKER_HTTP_PORT) : config.OPS_PORT;
  let temporalConnection: Parameters<typeof dependencyChecks>[0]['temporal'] | undefined;
  let workerCheck: (() => Promise<void>) | undefined;
  if (role !== 'api') {
    progress.step('the Temporal worker (connection, workflow bundle)');
    const { NativeConnection, Runtime: TemporalRuntime } = await import('@temporalio/worker');
    const { createWorkers } = await import('./worker');
    // Our own SIGTERM handling drains in order (HTTP first, then the worker); the SDK's
    // default would stop the worker at once, stranding requests still being answered.
    try {
      TemporalRuntime.install({
        shutdownSignals: [],
        // The SDK's own lines (the worker's, the workflows' and activities' loggers) as JSON through pino.
        logger: temporalLogger(log),
        // The SDK's own worker metrics (task latencies, slots, polls) for Prometheus.
        ...(config.WORKER_METRICS_PORT
          ? { telemetryOptions: { metrics: { prometheus: { bindAddress: `${config.HOST}:${config.WORKER_METRICS_PORT}` } } } }
          : {}),
      });
    } catch {
      // already installed (tests install their own, without signal handling)
    }
    const connection = await NativeConnection.connect({ address: temporalAddress });
    temporalConnection = connection;
    cleanups.push(() => connection.close());
    // PGlite's one session cannot hold a LISTEN beside the pool's connection: read keys by id there.
    if (keyring && config.DATABASE_URL && config.PAYLOAD_KEY_LISTEN) {
      const keyNotices = await listenForPayloadKeys(config.DATABASE_URL, keyring, log);
      cleanups.push(() => keyNotices.close());
    }
    const created = await createWorkers({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueues: {
        ...(config.WORKER_QUEUES.includes('uploads') ? { uploads: config.TASK_QUEUE_UPLOADS } : {}),
        ...(config.WORKER_QUEUES.includes('transcode') ? { transcode: config.TASK_QUEUE_TRANSCODE } : {}),
      },
      activities: {
        pool,
        store,
        ttlSeconds: config.IDEMPOTENCY_TTL_HOURS * 3600,
        presets: mediaPresets(config),
        maxRenderCost: config.IMAGE_MAX_RENDER_COST,
        webhook: {
          allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
          timeoutMs: config.WEBHOOK_TIMEOUT_SECONDS * 1000,
          maxEndpoints: config.TENANT_MAX_WEBHOOK_ENDPOINTS,
        },
        secrets: box,
        imports: {
          allowPrivateNetworks: config.IMPORT_ALLOW_PRIVATE_NETWORKS,
          maxRedirects: config.IMPORT_MAX_REDIRECTS,
          connectMs: config.IMPORT_CONNECT_SECONDS * 1000,
          idleMs: config.IMPORT_IDLE_SECONDS * 1000,
          // Whole parts of a multipart upload (S3 needs at least 5 MiB), as resumable sessions write.
          partBytes: config.RESUMABLE_PART_MIB * 1024 * 1024,
        },
        // A batch's items go through the import door's own service, over the worker's client.
        wiringFor: (client) => ({
          ...createServices({ config, pool, store, temporal: client, box, payloadKeys: keyring }),
          config,
          pool,
          temporal: client,
          box,
        }),
        scanner: { address: config.CLAMD_ADDRESS, timeoutSeconds: config.CLAMD_TIMEOUT_SECONDS, maxBytes: config.CLAMD_MAX_BYTES },
        webhookRetry: downstreamSettings(config).webhookRetry,
        housekeeping: {
          tombstoneSeconds: config.TOMBSTONE_TTL_HOURS * 3600,
          stagingGraceSeconds: config.STAGING_GRACE_SECONDS,
          multipartMaxAgeSeconds: config.MULTIPART_MAX_AGE_SECONDS,
          eventRetentionDays: config.EVENT_RETENTION_DAYS,
        },
      },
      workflowBundlePath: opts.workflowBundlePath,
      payloadCodec,
      options: config.WORKER_TUNING,
      unwatchedSandbox: config.WORKFLOW_SANDBOX_WATCHDOG
        ? undefined
        : {
            limitMs: config.WORKFLOW_SANDBOX_CALL_LIMIT_SECONDS * 1000,
            // The workflow thread is lost to a workflow that never yields; its tasks go to
            // another worker once this process is gone.
            onRunaway: (ranMs) => {
              log.fatal({ ranMs }, 'a call into the workflow sandbox has not returned: a workflow never yields; exiting');
              process.exit(70);
            },
          },
    });
    workers = created.workers;
    cleanups.push(async () => created.sandboxGuard?.stop());
    // Housekeeping runs on the uploads queue: its Schedules belong to the processes polling it.
    if (config.HOUSEKEEPING_SCHEDULES && config.WORKER_QUEUES.includes('uploads')) {
      progress.step('the housekeeping Schedules');
      const { ensureHousekeepingSchedules } = await import('./temporal/schedules');
      const admin = await connectTemporal(temporalAddress, config.TEMPORAL_NAMESPACE, payloadCodec);
      try {
        await ensureHousekeepingSchedules(admin.client, config.TASK_QUEUE_UPLOADS, {
          'expire-uploads': `${config.RETENTION_SWEEP_SECONDS} seconds`,
        });
      } finally {
        await admin.close();
      }
    }
    const runs = workers.map((w) => w.run());
    workerCheck = async () => {
      const stopped = workers.filter((w) => w.getState() !== 'RUNNING');
      if (stopped.length) throw new Error(stopped.map((w) => `${w.options.taskQueue}: ${w.getState()}`).join(', '));
    };
    cleanups.push(async () => {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      await Promise.allSettled(runs);
    });
  }

  let server: ServerType | undefined;
  let apiUrl: string | undefined;
  let httpApp: ReturnType<typeof createApp> | undefined;
  if (role !== 'worker') {
    progress.step('the Temporal client');
    const temporal: TemporalHandle = await connectTemporal(temporalAddress, config.TEMPORAL_NAMESPACE, payloadCodec);
    temporalConnection = temporal.connection;
    cleanups.push(() => temporal.close());
    // PGlite's one session cannot hold a LISTEN beside the pool's connection: poll there.
    const processed =
      config.DATABASE_URL && config.UPLOAD_WAIT_LISTEN ? await UploadProcessedListener.start(config.DATABASE_URL, log) : pollingOnly();
    cleanups.push(() => processed.close());
    const keyRequests = new KeyRequestLog({ pool, log });
    cleanups.push(() => keyRequests.close());
    const app = createApp({
      config,
      pool,
      store,
      temporal: temporal.client,
      log,
      box,
      processed,
      health: { role, draining: () => draining, onOperatorPort: opsPort !== undefined },
      devUiOrigin: uiUrl,
      payloadKeys: keyring,
      keyRequests,
    });
    httpApp = app;
    progress.step(`the HTTP listener on ${config.HOST}:${config.PORT}`);
    const drain = new ConnectionDrain();
    const port = await new Promise<number>((resolve) => {
      server = serve(
        {
          fetch: drain.gate(app.fetch),
          hostname: config.HOST,
          port: config.PORT,
          // Slow or stalled bodies are cut off instead of holding a socket forever; the
          // check runs every second so the timeout is honoured closely.
          serverOptions: { requestTimeout: config.BODY_TIMEOUT_SECONDS * 1000, connectionsCheckingInterval: 1000 },
        },
        (info) => resolve(info.port),
      );
    });
    const http = server as import('node:http').Server;
    drain.watch(http);
    startDrain = () => drain.begin();
    // Requests Node's parser rejects (control characters, oversized headers) still get
    // a problem+json answer rather than a bare "Bad Request".
    http.on('clientError', answerClientError);
    // An answer sent before the body was read is still read by the client (a 413 above all).
    lingerOnEarlyClose(http);
    http.on('upgrade', (req, socket, head) => {
      if (!app.upgrade(req, socket as import('node:stream').Duplex, head)) socket.destroy();
    });
    // A client may shut its sending side once the request is complete (curl --data with
    // some proxies, raw sockets); it still gets its answer instead of a closed socket.
    (http as { httpAllowHalfOpen?: boolean }).httpAllowHalfOpen = true;
    cleanups.push(() => {
      app.closeWings();
      // In-flight requests are answered; one still running after the grace period is cut.
      return drain.close(config.SHUTDOWN_GRACE_SECONDS * 1000);
    });
    apiUrl = `http://${config.HOST}:${port}`;
  }

  if (opsPort !== undefined) {
    progress.step(`the operator listener (health and metrics) on ${config.HOST}:${opsPort}`);
    const ops = await serveOps(config.HOST, opsPort, {
      role,
      draining: () => draining,
      checks: { ...dependencyChecks({ pool, temporal: temporalConnection!, store }), ...(workerCheck ? { worker: workerCheck } : {}) },
    });
    opsUrl = ops.url;
    // Closed last (cleanups run in reverse): /readyz answers 503 through the whole drain.
    cleanups.unshift(() => ops.close());
  }

  let stopped = false;
  return {
    config,
    log,
    pool,
    store,
    temporalAddress,
    uiUrl,
    apiUrl,
    server,
    app: httpApp,
    opsUrl,
    workers,
    payloadCodec,
    async shutdown() {
      if (stopped) return;
      stopped = true;
      draining = true;
      startDrain();
      if (role === 'api' && config.SHUTDOWN_DRAIN_SECONDS > 0) {
        log.info({ seconds: config.SHUTDOWN_DRAIN_SECONDS }, 'draining: /readyz answers 503, requests are still served');
        await new Promise((r) => setTimeout(r, config.SHUTDOWN_DRAIN_SECONDS * 1000));
      }
      for (const cleanup of cleanups.reverse()) await cleanup().catch((err) => log.warn({ err }, 'shutdown step failed'));
    },
  };
}
