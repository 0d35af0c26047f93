// A per-file Oncely stack over the shared services from global-setup: a fresh database
// cloned from the migrated template, its own bucket and task queue, and the real runtime
// (API on a free port + in-process worker) wired exactly as production wires it.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import { DefaultLogger, Runtime as TemporalRuntime } from '@temporalio/worker';
import { Client, Connection } from '@temporalio/client';
import { loadConfig, type Config } from '../../src/config';
import { createDatabase, dropDatabase } from '../support/postgres';
import { createPool, type Pool } from '../../src/db/pool';
import { startRuntime, type Role, type Runtime } from '../../src/runtime';
import { createTenant } from '../../src/tenants';
import { S3Store } from '../../src/storage/s3-store';
import { S3Client } from '@aws-sdk/client-s3';
import type { temporal } from '@temporalio/proto';
import { openHistory } from './inspect';

let temporalLoggerInstalled = false;
function quietTemporalLogs(): void {
  if (temporalLoggerInstalled) return;
  temporalLoggerInstalled = true;
  try {
    // Fault tests cut connections on purpose; the native core's retry warnings are noise.
    TemporalRuntime.install({
      shutdownSignals: [],
      logger: new DefaultLogger('ERROR'),
      telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
    });
  } catch {
    // already installed in this process
  }
}

export interface TestStack {
  name: string;
  config: Config;
  runtime: Runtime;
  url: string;
  dbUrl: string;
  temporal: Client;
  s3: S3Store;
  /** A run's history with its sealed payloads opened (what the run recorded, in clear). */
  history(workflowId: string): Promise<temporal.api.history.v1.IHistory>;
  createTenant(name?: string): Promise<{ tenantId: string; apiKey: string }>;
  stop(): Promise<void>;
}

export interface StackOptions {
  role?: Role;
  /** Environment overrides (e.g. proxied addresses, smaller limits). */
  env?: Record<string, string>;
  /** Rewrites the fresh database's URL the runtime uses (e.g. through a proxy). */
  databaseVia?: (url: string) => string;
}

/** A plain SDK client of the shared versitygw (for what Oncely's store does not do: CORS, Object Lock). */
export function sharedS3Client(): S3Client {
  const { s3 } = inject('stack');
  return new S3Client({
    endpoint: s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  });
}

/** A store on the shared versitygw, with its bucket created. */
export async function testS3Store(bucket: string, partSizeBytes = 8 * 1024 * 1024, singlePutMaxBytes?: number): Promise<S3Store> {
  const shared = inject('stack');
  const store = new S3Store({
    endpoint: shared.s3.endpoint,
    bucket,
    region: 'us-east-1',
    accessKeyId: shared.s3.accessKeyId,
    secretAccessKey: shared.s3.secretAccessKey,
    forcePathStyle: true,
    partSizeBytes,
    queueSize: 2,
    singlePutMaxBytes,
  });
  await store.ensureBucket();
  return store;
}

export function uniqueName(prefix: string): string {
  return `${prefix}_${process.pid}_${randomBytes(3).toString('hex')}`.toLowerCase();
}

export function stackEnv(name: string, dbUrl: string): Record<string, string> {
  const shared = inject('stack');
  return {
    DATABASE_URL: dbUrl,
    S3_ENDPOINT: shared.s3.endpoint,
    S3_ACCESS_KEY_ID: shared.s3.accessKeyId,
    S3_SECRET_ACCESS_KEY: shared.s3.secretAccessKey,
    S3_BUCKET: name.replaceAll('_', '-'),
    TEMPORAL_ADDRESS: shared.temporalAddress,
    TASK_QUEUE_UPLOADS: `uploads-${name}`,
    TASK_QUEUE_TRANSCODE: `transcode-${name}`,
    HOST: '127.0.0.1',
    PORT: '0',
    WORKER_HTTP_PORT: '0',
    // Role processes the tests start share the run's generated key (and a local store's directory).
    EMBEDDED: 'secrets,store',
    // TEST_LOG_LEVEL=info (or debug) keeps the stacks' logs, for a failure only load brings out.
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    DEFAULT_WAIT_SECONDS: '30',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    IMPORT_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_RETRY_INITIAL_SECONDS: '0.2',
    WEBHOOK_RETRY_COEFFICIENT: '2',
    WEBHOOK_RETRY_MAX_INTERVAL_SECONDS: '2',
  };
}

/** A database of its own (cloned from the migrated template) with one tenant, for tests below the API. */
export interface TenantDatabase {
  url: string;
  pool: Pool;
  tenantId: string;
  drop(): Promise<void>;
}

export async function startTenantDatabase(prefix: string): Promise<TenantDatabase> {
  const shared = inject('stack');
  const name = uniqueName(prefix);
  const url = await createDatabase(shared.pgAdminUrl, name, shared.templateDb);
  const pool = createPool(url, 2);
  const { tenantId } = await createTenant(pool, prefix);
  return {
    url,
    pool,
    tenantId,
    drop: async () => {
      await pool.end();
      await dropDatabase(shared.pgAdminUrl, name).catch(() => {});
    },
  };
}

export async function startTestStack(prefix: string, opts: StackOptions = {}): Promise<TestStack> {
  quietTemporalLogs();
  const shared = inject('stack');
  const name = uniqueName(prefix);
  const dbUrl = await createDatabase(shared.pgAdminUrl, name, shared.templateDb);
  const env = { ...stackEnv(name, opts.databaseVia ? opts.databaseVia(dbUrl) : dbUrl), ...opts.env };
  const config = loadConfig(env);
  const runtime = await startRuntime(config, opts.role ?? 'all', { workflowBundlePath: shared.workflowBundlePath });
  const connection = await Connection.connect({ address: shared.temporalAddress });
  // The runtime's own codec: results and queries read here are sealed as the stack seals them.
  const temporal = new Client({
    connection,
    ...(runtime.payloadCodec ? { dataConverter: { payloadCodecs: [runtime.payloadCodec] } } : {}),
  });
  const s3 = await testS3Store(env.S3_BUCKET!);
  return {
    name,
    config,
    runtime,
    url: runtime.apiUrl ?? '',
    dbUrl,
    temporal,
    s3,
    history: async (workflowId) => openHistory(await temporal.workflow.getHandle(workflowId).fetchHistory(), runtime.payloadCodec),
    createTenant: (tenantName = 'test') => createTenant(runtime.pool, tenantName),
    async stop() {
      await runtime.shutdown();
      await connection.close();
      s3.destroy();
      await dropDatabase(shared.pgAdminUrl, name).catch(() => {});
    },
  };
}

/** A stack on the S3 server, or on the embedded local-directory store (a data directory of its own, removed on stop). */
export async function startStackOnStore(kind: 's3' | 'local', prefix: string, opts: StackOptions = {}): Promise<TestStack> {
  if (kind === 's3') return startTestStack(prefix, opts);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), `oncely-${prefix}-`));
  const stack = await startTestStack(prefix, { ...opts, env: { ...opts.env, S3_ENDPOINT: '', DATA_DIR: dataDir } });
  return {
    ...stack,
    async stop() {
      await stack.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
