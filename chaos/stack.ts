// The stack a chaos run owns and may break: a private PostgreSQL cluster, Versity S3
// Gateway, a Temporal dev server on its own SQLite file (its own, since the run kills it), Toxiproxy in front of the API,
// Postgres and S3, and the API and worker as separate Node processes. Every piece can be
// killed and brought back on the same port and data; API and worker are supervised (a
// process that dies, or fails to start while a dependency is down, is started again).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import getPort from 'get-port';
import type { Proxy } from 'toxiproxy-node-client';
import { createPool, type Pool } from '../src/db/pool';
import { migrate } from '../src/db/migrate';
import { startPostgresCluster, type PostgresCluster } from '../src/devstack/postgres-cluster';
import { nodeTs, startProcess, waitUntil, type ManagedProcess } from '../src/devstack/process';
import { startTemporalDevServer, type DevServer } from '../src/devstack/temporal-dev-server';
import { startToxiproxy } from '../src/devstack/toxiproxy';
import { startVersity, type Versity } from '../src/devstack/versitygw';
import { projectRoot } from '../src/paths';
import { S3Store } from '../src/storage/s3-store';
import { workflowsPath } from '../src/worker';

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
  apiUrl: string;
  directApiUrl: string;
  temporalAddress: string;
  taskQueue: string;
  pool: Pool;
  store: S3Store;
  proxies: { api: Proxy; postgres: Proxy; s3: Proxy };
  postgres: PostgresCluster;
  api: Supervised;
  worker: Supervised;
  restartTemporal(): Promise<void>;
  restartS3(): Promise<void>;
  /** Restarts the worker with a zero staging grace (for the final housekeeping sweep). */
  restartWorkerForSweep(): Promise<void>;
  waitForApi(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startChaosStack(dir: string, log: (line: string) => void, opts: { workflowBundlePath?: string } = {}): Promise<ChaosStack> {
  mkdirSync(dir, { recursive: true });
  // Sequential, so no two lookups hand out the same free port.
  const ports: number[] = [];
  while (ports.length < 8) ports.push(await getPort({ host: '127.0.0.1', exclude: ports }));
  const [pgPort, s3Port, temporalPort, toxiPort, apiPort, apiProxyPort, pgProxyPort, s3ProxyPort] = ports as [number, number, number, number, number, number, number, number];

  log('starting PostgreSQL cluster, versitygw, Temporal dev server, Toxiproxy; bundling workflows');
  const temporalDb = path.join(dir, 'temporal', 'temporal.db');
  const startTemporal = () => startTemporalDevServer({ port: temporalPort, dbFile: temporalDb, retentionHours: 48 });
  const startS3 = () => startVersity({ port: s3Port, dir: path.join(dir, 's3') });
  const [postgres, s3First, temporalFirst, toxiproxy, bundle] = await Promise.all([
    startPostgresCluster({ dir: path.join(dir, 'pg'), port: pgPort, database: 'oncely' }),
    startS3(),
    startTemporal(),
    startToxiproxy({ port: toxiPort, dir }),
    opts.workflowBundlePath
      ? undefined
      : bundleWorkflowCode({ workflowsPath, logger: { log() {}, info() {}, warn() {}, error: console.error, debug() {}, trace() {} } as never }),
  ]);
  let s3: Versity = s3First;
  let temporal: DevServer = temporalFirst;
  const bundlePath = opts.workflowBundlePath ?? path.join(dir, 'workflow-bundle.js');
  if (bundle) writeFileSync(bundlePath, bundle.code);

  const proxies = {
    api: await toxiproxy.client.createProxy({ name: 'api', listen: `127.0.0.1:${apiProxyPort}`, upstream: `127.0.0.1:${apiPort}` }),
    postgres: await toxiproxy.client.createProxy({ name: 'postgres', listen: `127.0.0.1:${pgProxyPort}`, upstream: `127.0.0.1:${pgPort}` }),
    s3: await toxiproxy.client.createProxy({ name: 's3', listen: `127.0.0.1:${s3ProxyPort}`, upstream: `127.0.0.1:${s3Port}` }),
  };

  const pool = createPool(postgres.url, 4);
  await migrate(pool);
  const store = new S3Store({
    endpoint: s3.endpoint, bucket: 'oncely-chaos', region: 'us-east-1', accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey,
    forcePathStyle: true, partSizeBytes: 5 * 1024 * 1024, queueSize: 2,
  });
  await store.ensureBucket();

  const taskQueue = 'uploads-chaos';
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
    PORT: String(apiPort),
    LOG_LEVEL: 'warn',
    DATA_DIR: path.join(dir, 'data'),
    DEFAULT_WAIT_SECONDS: '20',
    SHUTDOWN_GRACE_SECONDS: '5',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_TIMEOUT_SECONDS: '5',
    WEBHOOK_RETRY_INITIAL_SECONDS: '0.5',
    WEBHOOK_RETRY_COEFFICIENT: '2',
    WEBHOOK_RETRY_MAX_INTERVAL_SECONDS: '5',
    WEBHOOK_RETRY_MAX_ATTEMPTS: '50',
    ...extra,
  });
  const api = new Supervised('api', env(), path.join(dir, 'api.log'));
  let worker = new Supervised('worker', env(), path.join(dir, 'worker.log'));
  api.start();
  worker.start();

  const apiUrl = `http://127.0.0.1:${apiProxyPort}`;
  const directApiUrl = `http://127.0.0.1:${apiPort}`;
  const waitForApi = (timeoutMs = 120_000) =>
    waitUntil('Oncely API', async () => (await fetch(`${directApiUrl}/readyz`)).ok, { timeoutMs });
  await waitForApi();
  log(`stack ready: API ${directApiUrl} (via Toxiproxy ${apiUrl}), logs in ${dir}`);

  const stack: ChaosStack = {
    dir,
    apiUrl,
    directApiUrl,
    get temporalAddress() {
      return temporal.address;
    },
    taskQueue,
    pool,
    store,
    proxies,
    postgres,
    api,
    get worker() {
      return worker;
    },
    async restartTemporal() {
      await temporal.process.stop('SIGKILL');
      temporal = await startTemporal();
    },
    async restartS3() {
      await s3.process.stop('SIGKILL');
      s3 = await startS3();
    },
    async restartWorkerForSweep() {
      await worker.stop();
      const restarts = worker.restarts;
      worker = new Supervised('worker', env({ STAGING_GRACE_SECONDS: '0' }), path.join(dir, 'worker.log'));
      worker.restarts = restarts;
      worker.start(); // the sweep's task waits on the queue until this worker polls it
    },
    waitForApi,
    async stop() {
      await Promise.allSettled([api.stop(), worker.stop()]);
      await pool.end().catch(() => {});
      store.destroy();
      await Promise.allSettled([temporal.stop(), s3.stop(), toxiproxy.stop(), postgres.stop()]);
    },
  };
  return stack;
}

