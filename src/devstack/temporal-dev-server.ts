// Starts Oncely's Temporal dev server (tools/temporal-dev: Temporal's server 1.32.2 and its
// UI in one process) on loopback with a persistent SQLite file, its namespace made with
// Oncely's search attributes (and any added since registered), then raises the namespace
// retention so closed runs outlive the idempotency-key TTL.
import { Connection } from '@temporalio/client';
import Long from 'long';
import path from 'node:path';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureSearchAttributes } from '../temporal/search-attributes';
import { searchAttributeFlags } from '../temporal/names';
import { toolPath } from './tools';
import { startProcess, waitUntil, type ManagedProcess } from './process';

export interface DevServerOptions {
  port: number;
  /** UI port; omit to run headless. */
  uiPort?: number;
  /** The codec server the UI decodes payloads with (Oncely's `/codec`). */
  uiCodecEndpoint?: string;
  dbFile: string;
  namespace?: string;
  retentionHours?: number;
  logFile?: string;
  /**
   * Records the server's pid; a server left running under this file by an earlier process
   * (one that died before the kernel could take its child along) is stopped first.
   */
  pidFile?: string;
  /** The server dies with this process (see StartOptions.dieWithParent). */
  dieWithParent?: boolean;
}

export interface DevServer {
  address: string;
  uiUrl?: string;
  process: ManagedProcess;
  stop(): Promise<void>;
}

export async function startTemporalDevServer(opts: DevServerOptions): Promise<DevServer> {
  const namespace = opts.namespace ?? 'default';
  mkdirSync(path.dirname(opts.dbFile), { recursive: true });
  const args = [
    '--ip',
    '127.0.0.1',
    '--port',
    String(opts.port),
    '--db-filename',
    opts.dbFile,
    '--namespace',
    namespace,
    ...searchAttributeFlags(),
  ];
  if (opts.uiPort) args.push('--ui-port', String(opts.uiPort));
  if (opts.uiPort && opts.uiCodecEndpoint) args.push('--ui-codec-endpoint', opts.uiCodecEndpoint);
  if (opts.pidFile) await reapOrphan(opts.pidFile, opts.dbFile);
  const proc = startProcess(toolPath('temporal-dev'), args, {
    logFile: opts.logFile ?? `${opts.dbFile}.log`,
    dieWithParent: opts.dieWithParent,
  });
  if (opts.pidFile) writeFileSync(opts.pidFile, String(proc.child.pid));
  const address = `127.0.0.1:${opts.port}`;
  let connection: Connection | undefined;
  await waitUntil(
    'Temporal dev server',
    async () => {
      connection ??= await Connection.connect({ address, connectTimeout: 1_000 });
      await connection.workflowService.describeNamespace({ namespace });
      return true;
    },
    { proc, timeoutMs: 90_000 },
  );
  await ensureSearchAttributes(connection!, namespace);
  const retentionSeconds = (opts.retentionHours ?? 72) * 3600;
  await connection!.workflowService.updateNamespace({
    namespace,
    config: { workflowExecutionRetentionTtl: { seconds: Long.fromNumber(retentionSeconds) } },
  });
  await connection!.close();
  return {
    address,
    uiUrl: opts.uiPort ? `http://127.0.0.1:${opts.uiPort}` : undefined,
    process: proc,
    async stop() {
      await proc.stop();
      if (opts.pidFile) rmSync(opts.pidFile, { force: true });
    },
  };
}

/** Stops a dev server still running from an earlier start on the same database file. */
async function reapOrphan(pidFile: string, dbFile: string): Promise<void> {
  let pid: number;
  try {
    pid = Number(readFileSync(pidFile, 'utf8').trim());
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 1) return;
  const running = () => {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      // Only ours: a dev server on this very database file (a reused pid is left alone).
      return path.basename(args[0] ?? '') === 'temporal-dev' && args.includes(dbFile);
    } catch {
      return false;
    }
  };
  for (const [signal, waitMs] of [
    ['SIGTERM', 10_000],
    ['SIGKILL', 5_000],
  ] as const) {
    if (!running()) return;
    try {
      process.kill(pid, signal);
    } catch {
      return;
    }
    const deadline = Date.now() + waitMs;
    while (running() && Date.now() < deadline) await sleep(100);
  }
}
