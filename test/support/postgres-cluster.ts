// A private PostgreSQL cluster (initdb + postgres on a loopback port) for runs that must
// crash and restart the database itself, which the machine's shared server cannot be.
// PostgreSQL refuses to run as root, so as root the server runs as the `postgres` user
// (spawned with its uid directly, so the postmaster is our own child and a crash is reaped).
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { startProcess, waitUntil, type ManagedProcess } from '../../src/devstack/process';

function pgBinDir(): string {
  if (process.env.PG_BIN_DIR) return process.env.PG_BIN_DIR;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) throw new Error('PostgreSQL server binaries not found (set PG_BIN_DIR)');
  return path.join(root, versions[0]!, 'bin');
}

/** As root: the `postgres` user's ids, to run the server under. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  return {
    uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()),
  };
}

export interface PostgresCluster {
  url: string;
  port: number;
  /** SIGKILLs the whole server (postmaster and backends): a crash, not a shutdown. */
  crash(): Promise<void>;
  /** Starts the server again on the same data directory (crash recovery runs). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export async function startPostgresCluster(opts: { dir: string; port: number; database: string }): Promise<PostgresCluster> {
  const dataDir = path.join(opts.dir, 'data');
  mkdirSync(opts.dir, { recursive: true });
  const user = serverUser();
  if (user) {
    // The postgres user must reach its directory through the (root-owned) parents.
    for (let d = opts.dir; d !== path.dirname(d) && d.startsWith('/tmp/'); d = path.dirname(d)) chmodSync(d, 0o755);
    chownSync(opts.dir, user.uid, user.gid);
  }
  const bin = (name: string) => path.join(pgBinDir(), name);
  const env = { PATH: process.env.PATH, LANG: 'C.UTF-8' };
  execFileSync(bin('initdb'), ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    cwd: opts.dir,
    env,
    ...user,
  });

  let proc: ManagedProcess | undefined;
  const url = `postgres://postgres@127.0.0.1:${opts.port}/${opts.database}`;
  const admin = `postgres://postgres@127.0.0.1:${opts.port}/postgres`;
  const probe = async () => {
    const c = new pg.Client({ connectionString: admin, connectionTimeoutMillis: 1000 });
    await c.connect();
    await c.end();
    return true;
  };

  async function start(): Promise<void> {
    const args = [
      '-D',
      dataDir,
      '-p',
      String(opts.port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${opts.dir}`,
      '-c',
      'max_connections=200',
    ];
    proc = startProcess(bin('postgres'), args, { logFile: path.join(opts.dir, 'postgres.log'), cwd: opts.dir, env, ...user });
    await waitUntil('PostgreSQL', probe, { proc, timeoutMs: 60_000 });
  }

  await start();
  const c = new pg.Client({ connectionString: admin });
  await c.connect();
  await c.query(`CREATE DATABASE "${opts.database}"`);
  await c.end();
  return {
    url,
    port: opts.port,
    async crash() {
      await proc?.stop('SIGKILL');
    },
    start,
    async stop() {
      await proc?.stop('SIGTERM', 15_000);
    },
  };
}
