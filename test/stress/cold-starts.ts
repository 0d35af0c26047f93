// Cold starts of Oncely's roles through the production launcher (bin/oncely-node on the
// built bundle): each start gets a fresh data directory and, when run as root, an empty
// page cache (as on a machine that just booted), and counts as served once the role
// answers (/healthz for the API roles, the worker's "oncely started" line). A start that
// neither serves nor exits within the bound is a hang: its threads' stacks are kept (gdb)
// and it is killed. Used by test/integration/start-stress.test.ts (a few starts) and by
// `npm run start-stress` (the full count).
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { serverPort } from '../support/ports';
import { startProcess } from '../../src/devstack/process';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');

export type StartRole = 'embedded' | 'api' | 'worker';

export interface StartOutcome {
  role: StartRole;
  result: 'served' | 'hung' | 'exited';
  ms: number;
  /** The end of the log, and for a hang the threads' stacks. */
  evidence?: string;
}

/** Empties the page cache so the start reads everything from disk; false when not allowed. */
export async function dropPageCache(): Promise<boolean> {
  if (process.getuid?.() !== 0) return false;
  try {
    await run('sync');
    writeFileSync('/proc/sys/vm/drop_caches', '3');
    return true;
  } catch {
    return false;
  }
}

async function stacksOf(pid: number): Promise<string> {
  try {
    const { stdout } = await run('gdb', ['-p', String(pid), '-batch', '-ex', 'thread apply all bt 12'], {
      timeout: 60_000,
      maxBuffer: 8 << 20,
    });
    return stdout
      .split('\n')
      .filter((l) => /^Thread|^#/.test(l))
      .join('\n');
  } catch (err) {
    return `(no stacks: ${String(err).slice(0, 200)})`;
  }
}

/** The node process behind the launcher's shell (it execs node, so the same pid). */
async function served(role: StartRole, port: number, logFile: string): Promise<boolean> {
  if (role === 'worker') return readFileSync(logFile, 'utf8').includes('"msg":"oncely started"');
  try {
    return (await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2000) })).ok;
  } catch {
    return false;
  }
}

/**
 * One cold start of `role`. `env` is the production roles' shared environment (database,
 * Temporal); the embedded default needs none.
 */
export async function coldStart(role: StartRole, env: Record<string, string>, boundMs: number, tree = root): Promise<StartOutcome> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'oncely-cold-'));
  const logFile = path.join(dataDir, 'start.log');
  const port = await serverPort();
  await dropPageCache();
  const started = Date.now();
  const proc = startProcess('sh', [path.join(tree, 'bin/oncely-node'), role === 'embedded' ? 'all' : role], {
    logFile,
    cwd: tree,
    env: {
      ...process.env,
      ...(role === 'embedded' ? {} : env),
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: String(port),
      WORKER_HTTP_PORT: '0',
      TEMPORAL_UI_PORT: String(await serverPort()),
      LOG_LEVEL: 'info',
    },
  });
  let outcome: StartOutcome | undefined;
  try {
    while (!outcome) {
      if (await served(role, port, logFile)) outcome = { role, result: 'served', ms: Date.now() - started };
      else if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
        outcome = { role, result: 'exited', ms: Date.now() - started, evidence: readFileSync(logFile, 'utf8').slice(-3000) };
      } else if (Date.now() - started > boundMs) {
        outcome = {
          role,
          result: 'hung',
          ms: Date.now() - started,
          evidence: `${readFileSync(logFile, 'utf8').slice(-2000)}\n${await stacksOf(proc.child.pid!)}`,
        };
      } else await sleep(100);
    }
  } finally {
    await proc.stop('SIGTERM', 30_000);
    rmSync(dataDir, { recursive: true, force: true });
  }
  return outcome;
}

export interface StressSummary {
  role: StartRole;
  starts: number;
  served: number;
  hung: number;
  exited: number;
  medianMs: number;
  maxMs: number;
  failures: StartOutcome[];
}

export async function stress(
  role: StartRole,
  starts: number,
  env: Record<string, string>,
  boundMs: number,
  onEach?: (o: StartOutcome, i: number) => void,
  tree = root,
): Promise<StressSummary> {
  const outcomes: StartOutcome[] = [];
  for (let i = 0; i < starts; i++) {
    const o = await coldStart(role, env, boundMs, tree);
    outcomes.push(o);
    onEach?.(o, i);
  }
  const ms = outcomes
    .filter((o) => o.result === 'served')
    .map((o) => o.ms)
    .sort((a, b) => a - b);
  return {
    role,
    starts,
    served: ms.length,
    hung: outcomes.filter((o) => o.result === 'hung').length,
    exited: outcomes.filter((o) => o.result === 'exited').length,
    medianMs: ms[Math.floor(ms.length / 2)] ?? 0,
    maxMs: ms.at(-1) ?? 0,
    failures: outcomes.filter((o) => o.result !== 'served'),
  };
}
