// Starts the real Temporal server (v1.32.2, built by scripts/tools.sh) on the machine's
// PostgreSQL: creates its two databases, sets up / updates their schemas with the server's
// own SQL tool (schemas embedded in the tool), writes a config with 4 history shards and
// pools that fit a 100-connection PostgreSQL, starts every service in one process on
// loopback, then registers the namespace and Oncely's search attributes. Idempotent over
// existing databases (the schema update is a no-op at the latest version).
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import Long from 'long';
import pg from 'pg';
import { ensureSearchAttributes } from '../../src/temporal/search-attributes';
import { startProcess, waitUntil, type ManagedProcess } from '../../src/devstack/process';
import { toolPath } from '../../src/devstack/tools';
import { serverPort } from './ports';

const run = promisify(execFile);

export interface TemporalServerOptions {
  /** A PostgreSQL superuser URL (postgres://postgres@127.0.0.1:5432/postgres). */
  pgAdminUrl: string;
  /** Database names: `${database}` and `${database}_visibility`. */
  database: string;
  /** Working directory (config, logs). */
  dir: string;
  namespace?: string;
  historyShards?: number;
  retentionHours?: number;
  /** The frontend's gRPC port (free ports are picked for the rest). */
  port?: number;
  /** host:port the server reaches PostgreSQL at (default: the admin URL's), e.g. through a fault proxy. */
  connectAddr?: string;
  dieWithParent?: boolean;
}

export interface TemporalServer {
  address: string;
  process: ManagedProcess;
  /** Restarts the server process on the same databases and ports (chaos: SIGKILL and start again). */
  restart(signal?: NodeJS.Signals): Promise<void>;
  stop(): Promise<void>;
}

export async function startTemporalServer(o: TemporalServerOptions): Promise<TemporalServer> {
  const namespace = o.namespace ?? 'default';
  const admin = new URL(o.pgAdminUrl);
  const pgHost = admin.hostname;
  const pgPort = Number(admin.port || 5432);
  const pgUser = decodeURIComponent(admin.username || 'postgres');
  const pgPassword = decodeURIComponent(admin.password);
  const visibility = `${o.database}_visibility`;
  for (const [db, schema] of [
    [o.database, 'postgresql/v12/temporal'],
    [visibility, 'postgresql/v12/visibility'],
  ] as const) {
    const created = await ensureDatabase(o.pgAdminUrl, db);
    const sql = (...args: string[]) =>
      run(toolPath('temporal-sql-tool'), [
        '--plugin',
        'postgres12',
        '--ep',
        pgHost,
        '-p',
        String(pgPort),
        '-u',
        pgUser,
        ...(pgPassword ? ['--pw', pgPassword] : []),
        '--db',
        db,
        ...args,
      ]);
    if (created) await sql('setup-schema', '-v', '0.0');
    await sql('update-schema', '--schema-name', schema);
  }

  const ports = {
    // Below 32768 (serverPort's range): the server records its services' ports in a
    // smallint column (cluster membership).
    frontend: o.port ?? (await serverPort()),
    frontendHttp: await serverPort(),
    history: await serverPort(),
    matching: await serverPort(),
    worker: await serverPort(),
    members: [await serverPort(), await serverPort(), await serverPort(), await serverPort()],
  };
  const configDir = path.join(o.dir, 'config');
  mkdirSync(configDir, { recursive: true });
  const store = (database: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName: database,
      connectAddr: o.connectAddr ?? `${pgHost}:${pgPort}`,
      connectProtocol: 'tcp',
      user: pgUser,
      password: pgPassword,
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const service = (grpcPort: number, membershipPort: number, extra: Record<string, unknown> = {}) => ({
    rpc: { grpcPort, membershipPort, bindOnLocalHost: true, ...extra },
  });
  // JSON is YAML: the config is written as JSON under the name the server reads.
  const config = {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'default',
      visibilityStore: 'visibility',
      numHistoryShards: o.historyShards ?? 4,
      // Each of the four services opens its own pools: 4 × (12 + 3) = 60 connections at most.
      datastores: { default: store(o.database, 12), visibility: store(visibility, 3) },
    },
    global: { membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' } },
    services: {
      frontend: service(ports.frontend, ports.members[0]!, { httpPort: ports.frontendHttp }),
      history: service(ports.history, ports.members[1]!),
      matching: service(ports.matching, ports.members[2]!),
      worker: service(ports.worker, ports.members[3]!),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: `127.0.0.1:${ports.frontend}` },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
  };
  writeFileSync(path.join(configDir, 'development.yaml'), JSON.stringify(config, null, 2));

  const address = `127.0.0.1:${ports.frontend}`;
  const launch = () =>
    startProcess(toolPath('temporal-server'), ['--root', o.dir, '--config', 'config', '--env', 'development', '--allow-no-auth', 'start'], {
      logFile: path.join(o.dir, 'temporal-server.log'),
      dieWithParent: o.dieWithParent,
    });
  let proc = launch();
  await untilServing(address, proc);
  await registerNamespace(address, namespace, (o.retentionHours ?? 72) * 3600);
  return {
    address,
    get process() {
      return proc;
    },
    async restart(signal?: NodeJS.Signals) {
      await proc.stop(signal);
      proc = launch();
      await untilServing(address, proc);
    },
    stop: () => proc.stop(),
  };
}

/** Creates the database unless it exists; true when it was created (its schema is then set up). */
async function ensureDatabase(adminUrl: string, name: string): Promise<boolean> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`unsafe database name ${name}`);
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount) {
      // A database left by a setup that died before its schema: set it up again.
      const db = new pg.Client({ connectionString: Object.assign(new URL(adminUrl), { pathname: `/${name}` }).toString() });
      await db.connect();
      try {
        return (await db.query(`SELECT 1 FROM information_schema.tables WHERE table_name = 'schema_version'`)).rowCount === 0;
      } finally {
        await db.end();
      }
    }
    await client.query(`CREATE DATABASE ${name}`);
    return true;
  } finally {
    await client.end();
  }
}

async function untilServing(address: string, proc: ManagedProcess): Promise<void> {
  await waitUntil(
    'Temporal server',
    async () => {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      try {
        await connection.workflowService.getSystemInfo({});
        return true;
      } finally {
        await connection.close();
      }
    },
    { proc, timeoutMs: 120_000 },
  );
}

/** The namespace (with its retention) and Oncely's search attributes; both idempotent. */
async function registerNamespace(address: string, namespace: string, retentionSeconds: number): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    const retention = { seconds: Long.fromNumber(retentionSeconds) };
    try {
      await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: retention });
    } catch (err) {
      if (!/already exists|AlreadyExists/i.test(String(err))) throw err;
    }
    // The namespace may take a moment to be visible to the operator service.
    await waitUntil('search attributes', async () => (await ensureSearchAttributes(connection, namespace)).length === 0, {
      timeoutMs: 60_000,
    });
  } finally {
    await connection.close();
  }
}
