// Services for benchmarks: the same real parts the tests use (Temporal dev server,
// versitygw, a fresh PostgreSQL database), on free loopback ports, torn down at the end.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import getPort from 'get-port';
import { createMigratedDatabase, dropDatabase } from '../../test/support/postgres';
import { startTemporalDevServer } from '../../src/devstack/temporal-dev-server';
import { startTemporalServer } from '../../test/support/temporal-server';
import { startVersity } from '../../test/support/versitygw';
import { nodeTs, startProcess, waitUntil, type ManagedProcess } from '../../src/devstack/process';
import { createPool } from '../../src/db/pool';
import { createTenant } from '../../src/tenants';

export interface BenchServices {
  dir: string;
  env: Record<string, string>;
  temporalAddress: string;
  s3: { endpoint: string; accessKeyId: string; secretAccessKey: string; bucket: string; dir: string };
  databaseUrl: string;
  apiKey: string;
  tenantId: string;
  /** Processes of the services, for CPU accounting (bench/lib/cpu.ts). */
  pids: { temporal?: number; s3?: number };
  stop(): Promise<void>;
}

export const adminUrl = process.env.TEST_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * `temporal`: the dev server (SQLite, one shard) or the real server on PostgreSQL (4 shards).
 * `storeDir`: a directory (on the filesystem to measure) for versitygw's data instead of the
 * temporary one.
 */
export async function startServices(temporalKind: 'dev' | 'server' = 'dev', opts: { storeDir?: string } = {}): Promise<BenchServices> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oncely-bench-'));
  const storeDir = opts.storeDir ? mkdtempSync(path.join(opts.storeDir, 'oncely-bench-s3-')) : path.join(dir, 's3');
  const dbName = `oncely_bench_${process.pid}`;
  const temporalDb = `temporal_bench_${process.pid}`;
  const [temporal, s3, databaseUrl] = await Promise.all([
    temporalKind === 'server'
      ? startTemporalServer({ pgAdminUrl: adminUrl, database: temporalDb, dir: path.join(dir, 'temporal') })
      : startTemporalDevServer({ port: await getPort({ host: '127.0.0.1' }), dbFile: path.join(dir, 'temporal.db') }),
    startVersity({ port: await getPort({ host: '127.0.0.1' }), dir: storeDir }),
    createMigratedDatabase(adminUrl, dbName),
  ]);
  const pool = createPool(databaseUrl, 1);
  const { apiKey, tenantId } = await createTenant(pool, 'bench');
  await pool.end();
  const bucket = 'bench';
  const env = {
    DATABASE_URL: databaseUrl,
    S3_ENDPOINT: s3.endpoint,
    S3_ACCESS_KEY_ID: s3.accessKeyId,
    S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
    S3_BUCKET: bucket,
    TEMPORAL_ADDRESS: temporal.address,
    // The bench's processes share the key generated under the checkout's DATA_DIR.
    EMBEDDED: 'secrets',
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    WORKER_HTTP_PORT: '0',
    ...(process.env.S3_PART_SIZE_MIB ? { S3_PART_SIZE_MIB: process.env.S3_PART_SIZE_MIB } : {}),
    ...(process.env.S3_QUEUE_SIZE ? { S3_QUEUE_SIZE: process.env.S3_QUEUE_SIZE } : {}),
  };
  return {
    dir,
    env,
    temporalAddress: temporal.address,
    s3: { endpoint: s3.endpoint, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, bucket, dir: storeDir },
    databaseUrl,
    apiKey,
    tenantId,
    pids: { temporal: temporal.process.child.pid, s3: s3.process.child.pid },
    async stop() {
      await Promise.allSettled([temporal.stop(), s3.stop()]);
      await dropDatabase(adminUrl, dbName).catch(() => {});
      if (temporalKind === 'server')
        for (const db of [temporalDb, `${temporalDb}_visibility`]) await dropDatabase(adminUrl, db).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
      if (opts.storeDir) rmSync(storeDir, { recursive: true, force: true });
    },
  };
}

const root = path.resolve(import.meta.dirname, '../..');

/** Runs `src/main.ts <role>` as its own process (so its memory can be read from /proc). */
export async function startOncelyProcess(
  services: BenchServices,
  role: 'api' | 'worker' | 'all',
  extraEnv: Record<string, string> = {},
): Promise<{ proc: ManagedProcess; url: string }> {
  const port = await getPort({ host: '127.0.0.1' });
  const url = `http://127.0.0.1:${port}`;
  const logFile = path.join(services.dir, `oncely-${role}-${port}.log`);
  // The production shape: the esbuild bundle on plain node (npm run bench builds it first).
  const built = path.join(root, 'dist/main.js');
  // The production launcher (the Dockerfile's ENTRYPOINT) with its per-role node flags; it
  // execs node, so the pid is node's. BENCH_EXTRA_NODE_FLAGS adds flags to compare.
  const [cmd, args] = existsSync(built) ? ['sh', [path.join(root, 'bin/oncely-node'), role]] : nodeTs(path.join(root, 'src/main.ts'), role);
  const proc = startProcess(cmd, args, {
    logFile,
    cwd: root,
    env: {
      ...process.env,
      ...services.env,
      ONCELY_NODE_FLAGS: process.env.BENCH_EXTRA_NODE_FLAGS ?? '',
      PORT: String(port),
      LOG_LEVEL: role === 'worker' ? 'info' : 'warn',
      ...extraEnv,
    },
  });
  if (role === 'worker') {
    const { readFileSync } = await import('node:fs');
    await waitUntil('worker', async () => readFileSync(logFile, 'utf8').includes('"oncely started"'), { proc, timeoutMs: 60_000 });
  } else {
    await waitUntil('api', async () => (await fetch(`${url}/healthz`)).ok, { proc, timeoutMs: 60_000 });
  }
  return { proc, url };
}

/** Peak resident set size of a process in MiB (Linux VmHWM), following tsx to its node child. */
export async function peakRssMiB(pid: number): Promise<number> {
  const { readFileSync, readdirSync } = await import('node:fs');
  const read = (p: number) => {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      return m ? Number(m[1]) / 1024 : 0;
    } catch {
      return 0;
    }
  };
  const children = (p: number): number[] => {
    try {
      return readdirSync(`/proc/${p}/task`).flatMap((t) =>
        readFileSync(`/proc/${p}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number),
      );
    } catch {
      return [];
    }
  };
  let best = read(pid);
  for (const c of children(pid)) best = Math.max(best, await peakRssMiB(c));
  return best;
}
