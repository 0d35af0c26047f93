// The stack a chaos run owns and may break: a private PostgreSQL cluster, Versity S3
// Gateway, Temporal — the dev server on its own SQLite file, or the real server on the
// private PostgreSQL (`temporal: 'server'`, reaching it through its own fault proxy) —
// Toxiproxy in front of the API replicas, Postgres and S3, and `replicas` API processes and
// upload workers (with more than one, a separate transcode worker too). Every piece can be killed and brought back on the same port and data; API and
// worker processes are supervised (one that dies, or fails to start while a dependency is
// down, is started again).
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import type { Proxy } from 'toxiproxy-node-client';
import { createPool, type Pool } from '../src/db/pool';
import { migrate } from '../src/db/migrate';
import { startPostgresCluster, type PostgresCluster } from '../test/support/postgres-cluster';
import { nodeTs, startProcess, waitUntil, type ManagedProcess } from '../src/devstack/process';
import { startTemporalDevServer } from '../src/devstack/temporal-dev-server';
import { startTemporalServer } from '../test/support/temporal-server';
import { startToxiproxy } from '../test/support/toxiproxy';
import { serverPort } from '../test/support/ports';
import { startVersity, versityBucket, type Versity } from '../test/support/versitygw';
import { projectRoot, workflowPreloadModules } from '../src/paths';
import { RoutedStore } from '../src/storage/routed-store';
import type { ObjectStore } from '../src/storage/store';
import { TargetDirectory } from '../src/placement/directory';
import { SecretBox } from '../src/secret-box';
import { workflowsPath } from '../src/worker';
import { WORKFLOW_TRACING_MODULES } from '../src/telemetry/temporal';

type Role = 'api' | 'worker';

/** A role process kept running: restarted whenever it exits, until stopped. */
class Supervised {
  private proc?: ManagedProcess;
  private stopped = false;
  restarts = 0;

  constructor(
    private readonly role: Role,
    private readonly env: NodeJS.ProcessEnv,
    private readonly logFile: string,
  ) {}

  start(): void {
    if (this.stopped) return;
    const [cmd, args] = nodeTs(path.join(projectRoot, 'src/main.ts'), this.role);
    const proc = startProcess(cmd, args, { env: this.env, logFile: this.logFile, cwd: projectRoot });
    this.proc = proc;
    proc.child.once('exit', () => {
      if (this.stopped || this.proc !== proc) return;
      this.restarts++;
      setTimeout(() => this.start(), 500);
    });
  }

  /** SIGKILL, at once; the supervisor brings it back. */
  async kill(): Promise<void> {
    await this.proc?.stop('SIGKILL');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.proc?.stop('SIGTERM', 15_000);
  }
}

export interface ChaosStack {
  dir: string;
  /** Replica 0 through its fault proxy (the network faults act on it). */
  apiUrl: string;
  /** Every replica, each through its own proxy: clients spray their copies across them. */
  apiUrls: string[];
  directApiUrl: string;
  temporalAddress: string;
  temporalKind: 'dev' | 'server';
  taskQueue: string;
  pool: Pool;
  /** Every store the services write, as they read them (the instance's bucket and the registered targets). */
  store: ObjectStore;
  /** A second bucket behind the same fault proxy, for a storage target (`--migrate`). */
  target: { endpoint: string; bucket: string; accessKeyId: string; secretAccessKey: string };
  /** The services' SECRETS_KEY: the verifier opens (and checks the erasure of) sealed payloads with it. */
  box: SecretBox;
  /** `temporalPostgres`: the real server's connections to PostgreSQL (server mode only). */
  proxies: { api: Proxy; postgres: Proxy; s3: Proxy; temporalPostgres?: Proxy };
  postgres: PostgresCluster;
  apis: Supervised[];
  workers: Supervised[];
  /** Replica 0 of each (compatibility with single-replica callers). */
  api: Supervised;
  worker: Supervised;
  restartTemporal(): Promise<void>;
  restartS3(): Promise<void>;
  /** Restarts the worker with a zero staging grace (for the final housekeeping sweep). */
  restartWorkerForSweep(): Promise<void>;
  waitForApi(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface ChaosStackOptions {
  workflowBundlePath?: string;
  temporal?: 'dev' | 'server';
  /** API processes, and upload-worker processes (plus one transcode worker when more than one). */
  replicas?: number;
}

export async function startChaosStack(dir: string, log: (line: string) => void, opts: ChaosStackOptions = {}): Promise<ChaosStack> {
  mkdirSync(dir, { recursive: true });
  const replicas = opts.replicas ?? 1;
  const temporalKind = opts.temporal ?? 'dev';
  // Sequential, so no two lookups hand out the same free port.
  const ports: number[] = [];
  while (ports.length < 8 + 2 * replicas) ports.push(await serverPort(ports));
  const [pgPort, s3Port, temporalPort, toxiPort, pgProxyPort, s3ProxyPort, temporalPgProxyPort] = ports as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const apiPorts = ports.slice(8, 8 + replicas);
  const apiProxyPorts = ports.slice(8 + replicas, 8 + 2 * replicas);
  const apiPort = apiPorts[0]!;

  log(
    `starting PostgreSQL cluster, versitygw, Toxiproxy, ${temporalKind === 'server' ? 'the Temporal server on PostgreSQL' : 'the Temporal dev server'}; bundling workflows`,
  );
  const temporalDb = path.join(dir, 'temporal', 'temporal.db');
  const startS3 = () => startVersity({ port: s3Port, dir: path.join(dir, 's3') });
  const [postgres, s3First, toxiproxy, bundle] = await Promise.all([
    startPostgresCluster({ dir: path.join(dir, 'pg'), port: pgPort, database: 'oncely' }),
    startS3(),
    startToxiproxy({ port: toxiPort, dir }),
    opts.workflowBundlePath
      ? undefined
      : bundleWorkflowCode({
          workflowsPath,
          workflowInterceptorModules: WORKFLOW_TRACING_MODULES,
          preloadModules: workflowPreloadModules,
          logger: { log() {}, info() {}, warn() {}, error: console.error, debug() {}, trace() {} } as never,
        }),
  ]);
  let s3: Versity = s3First;
  const bundlePath = opts.workflowBundlePath ?? path.join(dir, 'workflow-bundle.js');
  if (bundle) writeFileSync(bundlePath, bundle.code);

  const apiProxies = await Promise.all(
    apiPorts.map((port, i) =>
      toxiproxy.client.createProxy({
        name: i === 0 ? 'api' : `api-${i + 1}`,
        listen: `127.0.0.1:${apiProxyPorts[i]}`,
        upstream: `127.0.0.1:${port}`,
      }),
    ),
  );
  const proxies: ChaosStack['proxies'] = {
    api: apiProxies[0]!,
    postgres: await toxiproxy.client.createProxy({ name: 'postgres', listen: `127.0.0.1:${pgProxyPort}`, upstream: `127.0.0.1:${pgPort}` }),
    s3: await toxiproxy.client.createProxy({ name: 's3', listen: `127.0.0.1:${s3ProxyPort}`, upstream: `127.0.0.1:${s3Port}` }),
  };

  // Temporal: the dev server (its SQLite file), or the real server on the private cluster,
  // whose connections go through a proxy of their own (the Temporal ↔ PostgreSQL cut).
  let temporal: { address: string; restart(): Promise<void>; stop(): Promise<void> };
  if (temporalKind === 'server') {
    proxies.temporalPostgres = await toxiproxy.client.createProxy({
      name: 'temporal-postgres',
      listen: `127.0.0.1:${temporalPgProxyPort}`,
      upstream: `127.0.0.1:${pgPort}`,
    });
    const server = await startTemporalServer({
      pgAdminUrl: `postgres://postgres@127.0.0.1:${pgPort}/postgres`,
      database: 'temporal',
      dir: path.join(dir, 'temporal'),
      connectAddr: `127.0.0.1:${temporalPgProxyPort}`,
      retentionHours: 48,
    });
    temporal = { address: server.address, restart: () => server.restart('SIGKILL'), stop: () => server.stop() };
  } else {
    const start = () => startTemporalDevServer({ port: temporalPort, dbFile: temporalDb, retentionHours: 48 });
    let dev = await start();
    temporal = {
      get address() {
        return dev.address;
      },
      async restart() {
        await dev.process.stop('SIGKILL');
        dev = await start();
      },
      stop: () => dev.stop(),
    };
  }

  const pool = createPool(postgres.url, 4);
  await migrate(pool);
  const s3Store = await versityBucket(s3, 'oncely-chaos');
  // The storage target's bucket (--migrate), behind the same proxy.
  (await versityBucket(s3, 'oncely-chaos-target')).destroy();

  const taskQueue = 'uploads-chaos';
  const secretsKey = randomBytes(32);
  const box = new SecretBox(secretsKey);
  const directory = new TargetDirectory({
    pool,
    box,
    settings: { partSizeBytes: 5 * 1024 * 1024, queueSize: 2, singlePutMaxBytes: 5 * 1024 ** 3 },
  });
  const store = new RoutedStore(s3Store, directory.resolve);
  const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    ONCELY_TOOLS_DIR: process.env.ONCELY_TOOLS_DIR,
    // The services see their dependencies only through the fault proxies.
    DATABASE_URL: `postgres://postgres@127.0.0.1:${pgProxyPort}/oncely`,
    DATABASE_POOL_SIZE: '10',
    S3_ENDPOINT: `http://127.0.0.1:${s3ProxyPort}`,
    S3_BUCKET: 'oncely-chaos',
    S3_ACCESS_KEY_ID: s3.accessKeyId,
    S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
    TEMPORAL_ADDRESS: temporal.address,
    TASK_QUEUE_UPLOADS: taskQueue,
    TASK_QUEUE_TRANSCODE: 'transcode-chaos',
    WORKFLOW_BUNDLE_PATH: bundlePath,
    HOST: '127.0.0.1',
    WORKER_HTTP_PORT: '0',
    LOG_LEVEL: 'warn',
    DATA_DIR: path.join(dir, 'data'),
    SECRETS_KEY: secretsKey.toString('base64'),
    DEFAULT_WAIT_SECONDS: '20',
    SHUTDOWN_GRACE_SECONDS: '5',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    IMPORT_ALLOW_PRIVATE_NETWORKS: 'true',
    STORAGE_TARGET_ALLOW_PRIVATE_NETWORKS: 'true',
    STORAGE_MIGRATION_SOURCE_GRACE_SECONDS: '0',
    IMPORT_HEARTBEAT_SECONDS: '3',
    WEBHOOK_TIMEOUT_SECONDS: '5',
    WEBHOOK_RETRY_INITIAL_SECONDS: '0.5',
    WEBHOOK_RETRY_COEFFICIENT: '2',
    WEBHOOK_RETRY_MAX_INTERVAL_SECONDS: '5',
    WEBHOOK_RETRY_MAX_ATTEMPTS: '50',
    ...extra,
  });
  const apis = apiPorts.map((port, i) => new Supervised('api', env({ PORT: String(port) }), path.join(dir, `api-${i + 1}.log`)));
  // One worker polling both queues; with replicas, that many upload workers and one transcode worker.
  const workerKinds: Record<string, string>[] =
    replicas === 1 ? [{}] : [...apiPorts.map(() => ({ WORKER_QUEUES: 'uploads' })), { WORKER_QUEUES: 'transcode' }];
  const newWorker = (i: number, extra: Record<string, string> = {}) =>
    new Supervised('worker', env({ ...workerKinds[i], ...extra }), path.join(dir, `worker-${i + 1}.log`));
  let workers = workerKinds.map((_, i) => newWorker(i));
  for (const p of [...apis, ...workers]) p.start();

  const apiUrl = `http://127.0.0.1:${apiProxyPorts[0]}`;
  const directApiUrl = `http://127.0.0.1:${apiPort}`;
  const waitForApi = (timeoutMs = 120_000) =>
    Promise.all(
      apiPorts.map((port) => waitUntil('Oncely API', async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).ok, { timeoutMs })),
    ).then(() => undefined);
  await waitForApi();
  log(`stack ready: API ${directApiUrl} (via Toxiproxy ${apiUrl}), logs in ${dir}`);

  const stack: ChaosStack = {
    dir,
    apiUrl,
    apiUrls: apiProxyPorts.map((p) => `http://127.0.0.1:${p}`),
    directApiUrl,
    get temporalAddress() {
      return temporal.address;
    },
    temporalKind,
    taskQueue,
    pool,
    store,
    target: {
      endpoint: `http://127.0.0.1:${s3ProxyPort}`,
      bucket: 'oncely-chaos-target',
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
    },
    box,
    proxies,
    postgres,
    apis,
    get workers() {
      return workers;
    },
    api: apis[0]!,
    get worker() {
      return workers[0]!;
    },
    restartTemporal: () => temporal.restart(),
    async restartS3() {
      await s3.process.stop('SIGKILL');
      s3 = await startS3();
    },
    async restartWorkerForSweep() {
      await Promise.all(workers.map((w) => w.stop()));
      workers = workers.map((old, i) => {
        const w = newWorker(i, { STAGING_GRACE_SECONDS: '0' });
        w.restarts = old.restarts;
        return w;
      });
      for (const w of workers) w.start(); // the sweep's task waits on the queue until a worker polls it
    },
    waitForApi,
    async stop() {
      await Promise.allSettled([...apis, ...workers].map((p) => p.stop()));
      await pool.end().catch(() => {});
      directory.close();
      s3Store.destroy();
      await Promise.allSettled([temporal.stop(), s3.stop(), toxiproxy.stop(), postgres.stop()]);
    },
  };
  return stack;
}
