// Child processes for the dev stack: spawned with their output kept in a log file,
// stopped with SIGTERM then SIGKILL, and awaited until a readiness probe passes.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, openSync, closeSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ManagedProcess {
  child: ChildProcess;
  logFile: string;
  /** Sends `signal`, waits up to `graceMs` (default 10 s), then SIGKILLs the group. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<void>;
}

/** util-linux's setpriv (Debian: always there) sets the parent-death signal before exec. */
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

export interface StartOptions {
  logFile: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  uid?: number;
  gid?: number;
  /**
   * The kernel SIGKILLs the child when this process dies, however it dies (SIGKILL, the
   * OOM killer): a server we started never outlives us holding its ports and files.
   */
  dieWithParent?: boolean;
}

export function startProcess(command: string, commandArgs: string[], opts: StartOptions): ManagedProcess {
  const [cmd, args] =
    opts.dieWithParent && SETPRIV ? [SETPRIV, ['--pdeathsig', 'KILL', '--', command, ...commandArgs]] : [command, commandArgs];
  const fd = openSync(opts.logFile, 'a');
  // Its own process group, so a stop (or a SIGKILL in a crash test) reaches every
  // descendant too (an ffmpeg a worker started, a node behind a wrapper script).
  const child = spawn(cmd, args, {
    stdio: ['ignore', fd, fd],
    env: opts.env ?? process.env,
    cwd: opts.cwd,
    detached: true,
    uid: opts.uid,
    gid: opts.gid,
  });
  child.unref();
  closeSync(fd);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    logFile: opts.logFile,
    async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      killGroup(child, signal);
      const killed = await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)]);
      if (!killed) {
        killGroup(child, 'SIGKILL');
        await exited;
      }
      // Anything left in the group (the wrapper exited first) goes too.
      if (signal === 'SIGKILL') killGroup(child, 'SIGKILL');
    },
  };
}

/** Polls `probe` until it resolves truthy; fails with the process log when it does not. */
export async function waitUntil(
  what: string,
  probe: () => Promise<boolean>,
  opts: { timeoutMs?: number; proc?: ManagedProcess } = {},
): Promise<void> {
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (opts.proc && opts.proc.child.exitCode !== null) break;
    try {
      if (await probe()) return;
    } catch (err) {
      lastError = err;
    }
    await sleep(100);
  }
  const log = opts.proc ? readFileSync(opts.proc.logFile, 'utf8').slice(-4000) : '';
  throw new Error(`${what} did not become ready${lastError ? `: ${String(lastError)}` : ''}\n${log}`);
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    child.kill(signal);
  }
}

/** Command and arguments that run a TypeScript entry point in a single node process. */
export function nodeTs(entry: string, ...args: string[]): [string, string[]] {
  return [process.execPath, ['--import', 'tsx', entry, ...args]];
}
